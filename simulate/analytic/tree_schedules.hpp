#pragma once
// The schedules of the binomial-tree collectives of core/collectives.cpp (broadcast, reduce) and of its
// recursive-doubling allreduce (which the training runner's round ends use to sum the losses), enumerated from
// their closed form instead of recorded (simulate/collective_schedule.hpp). record_schedule runs every rank's body
// and matches P ranks' messages: for a million ranks that is most of the analytic level's wall time and memory
// (docs/simulation.md "The analytic level"). The tree's shape is known, so each activity's step is computed
// directly -- the same as-soon-as-possible layering that record_schedule derives, activity for activity -- and
// handed to a visitor, in O(P) time and O(log P) memory, nothing stored.
//
// tests/simulate/analytic/tree_schedules_test.cpp holds streamed_schedule() equal to record_schedule() on many
// world sizes and roots.

#include <cstddef>

#include "core/comm.hpp"
#include "simulate/collective_schedule.hpp"

namespace dsgd::simulate {

// Receives a schedule's activities, each with its step, in no particular order.
class ScheduleVisitor {
 public:
  virtual ~ScheduleVisitor() = default;
  virtual void transfer(int step, int source, int destination, std::size_t bytes) = 0;
  virtual void compute(int step, int rank, double flops) = 0;
  // Rank `rank` leaves the collective once step `steps` - 1 ended (CollectiveSchedule::leave_after); every rank is
  // reported once.
  virtual void leave(int rank, int steps) = 0;
};

// Whether visit_tree_schedule knows the call's schedule (the binomial broadcast and reduce, the recursive-doubling
// allreduce).
bool has_tree_schedule(const CollectiveCall& call);

// Hands every activity of the call's schedule on `size` ranks to `visitor`: O(P) of them for the trees,
// O(P log P) for recursive doubling. Throws InputError for a call has_tree_schedule refuses or a root outside
// [0, size).
void visit_tree_schedule(const CollectiveCall& call, int size, ScheduleVisitor& visitor);

// The enumerated schedule as record_schedule lays it out (each step's transfers and computes in an unspecified
// order; kernel class "elementwise"), for comparing the two on worlds small enough to record.
CollectiveSchedule streamed_schedule(const CollectiveCall& call, int size);

}  // namespace dsgd::simulate
