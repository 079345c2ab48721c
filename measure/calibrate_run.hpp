#pragma once
// The sequence of `dsgd calibrate` (docs/design.md "Calibration, prediction, validation"; docs/validation.md,
// "What `dsgd calibrate` measures"): the MPI and the threads ping-pong fitted per message-size segment, both again
// beside computing ranks (the loaded links), the kernel classes, a waiting rank's share of a core, and two platform
// files with the same CPU, memory and kernel efficiencies -- one whose link is MPI's, one whose link is the threads
// executor's. The MPI side runs in dsgd-mpi under mpirun (dsgd links SimGrid, whose library defines MPI_* too): the
// caller starts it and reads back what it measured (MpiRuns).

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "measure/calibration.hpp"
#include "measure/kernel_calibration.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::measure {

// "absolute" or "relative"; fit_weighting_from_string throws UnknownNameError listing both for another name.
std::string_view to_string(FitWeighting weighting);
FitWeighting fit_weighting_from_string(std::string_view name);

struct CalibrationPlan {
  std::string name = "this-machine";  // the MPI platform's name; the threads platform's has "-threads" after it
  std::string out = "platforms/this-machine.json";
  std::string threads_out;    // default: `out` with "-threads" before ".json"
  int ranks = 2;              // of the MPI ping-pong (between ranks 0 and 1)
  int nodes = 0;              // hosts of the platforms; 0: this machine's physical cores
  bool kernels_only = false;  // only the kernels and waiting shares, into the files an earlier calibration wrote
  // Both ping-pongs: sizes, timed rounds, and buffers cycled through so that messages start cold in memory, as
  // training's exchanges between forward/backward passes do (measure/pingpong_buffers.hpp).
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;
  int rounds = 15;
  double pool_bytes = static_cast<double>(cold_pool_bytes());
  std::vector<double> boundaries{kDefaultSegmentBoundaries.begin(), kDefaultSegmentBoundaries.end()};
  FitWeighting weighting = FitWeighting::kRelative;
  // 0 copies: one per physical core. The repetitions also give the platform's noise, which shows only over a
  // window as long as the runs dsgd validate predicts, a few seconds (docs/validation.md, "The noise's window").
  KernelBenchOptions kernels{.concurrent = 0, .repetitions = 400};
  int kernel_retries = 2;

  std::string threads_path() const;
};

// A ping-pong as dsgd-mpi measured it.
struct MpiPingPong {
  std::vector<PingPongPoint> points;
  std::string host;  // where and when (the results' provenance)
  std::string date;
  std::string transport;  // what carried the messages (its entries' label); may be empty
};

// What calibration needs of dsgd-mpi, which the caller runs under mpirun and whose results file it reads.
struct MpiRuns {
  // dsgd-mpi with mpi_pingpong_arguments(plan, busy) on `ranks` ranks: each size's median round trip or, with
  // `busy` (the ranks beside the pair computing), its mean.
  std::function<MpiPingPong(int ranks, bool busy)> pingpong;
  // dsgd-mpi with mpi_waiting_arguments(seconds) on `ranks` ranks: what rank 0 measured.
  std::function<WaitingShare(int ranks, double seconds)> waiting;
};

// dsgd-mpi's arguments (after the executable, without --results) for the ping-pong of `plan`, quiet, the ranks
// beside the pair computing if `busy`; and for the waiting share, the other ranks computing for `seconds`.
std::vector<std::string> mpi_pingpong_arguments(const CalibrationPlan& plan, bool busy);
std::vector<std::string> mpi_waiting_arguments(double seconds);

// Calibrates this machine and writes plan.out and plan.threads_path(): the fits, kernel timings, waiting shares and
// platforms printed to `out`, progress to `err`; `where` (host, date) goes into the sources. With
// plan.kernels_only, the kernels and waiting shares go into the platform files an earlier calibration wrote, whose
// links stay. Throws InputError for ranks < 2, nodes < 0 or a negative pool, and what the steps throw.
void calibrate(const CalibrationPlan& plan, const MpiRuns& mpi, const std::string& where, std::ostream& out,
               std::ostream& err);

}  // namespace dsgd::measure
