#pragma once
// The schedule of a deterministic collective, derived from its point-to-point code (Comm::run_collective's
// `body`) by running it once per rank against a recording Comm: which transfers and compute steps happen, grouped
// into steps. The flow fidelity of the SimGrid executor replays it step by step (simulate/simgrid/flows.hpp).
//
// Steps are an as-soon-as-possible layering: a transfer is in step max(s, d), where s and d are the steps the
// sender and the receiver had completed when each posted its side (a rank has completed step k once every
// transfer or compute it waited for ended by step k); a compute step of a rank occupies the step after those it
// waited for. Replaying the steps in order, each starting when the previous one ends, gives the message-level time
// exactly when every activity of a step takes equally long and all ranks enter together (a homogeneous platform,
// a synchronised start), and a close estimate otherwise.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/comm.hpp"

namespace dsgd::simulate {

struct ScheduledTransfer {
  int source = 0;
  int destination = 0;
  std::size_t bytes = 0;
};

struct ScheduledCompute {
  int rank = 0;
  double flops = 0;
  std::string kernel_class;
};

struct ScheduleStep {
  std::vector<ScheduledTransfer> transfers;
  std::vector<ScheduledCompute> computes;
};

struct CollectiveSchedule {
  std::vector<ScheduleStep> steps;
  // Per rank: how many steps it takes part in up to its last activity; it leaves the collective once step
  // leave_after[r] - 1 ended (0: at once).
  std::vector<int> leave_after;
  std::size_t transfer_count() const;
};

// Runs `body` for ranks 0..size-1 against a recording Comm (no payloads) and layers what it did into steps. The
// recording Comm's node_of is `nodes` (one entry per rank), or node 0 for every rank if `nodes` is empty.
// Throws UnavailableError if the body receives from kAnySource or opens a shared vector (its schedule would
// depend on timing), and CommError naming the collective if its messages do not match up (a receive nobody
// sends, a send nobody receives, differing sizes, a wait that can never end).
CollectiveSchedule record_schedule(const CollectiveCall& call, int size, const std::function<void(Comm&)>& body,
                                   const std::vector<int>& nodes = {});

}  // namespace dsgd::simulate
