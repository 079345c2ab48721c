#pragma once
// What dsgd-mpi's sweeps print and write: measure/mpi/sweeps.hpp measures on every rank, and rank 0 prints the table
// and writes the results file (reports/results.hpp schema) these functions make of it. Part of the dsgd-mpi
// executable only, which links OpenMPI (app/dsgd_mpi_main.cpp parses its command line).

#include <string>
#include <vector>

#include "measure/calibration.hpp"
#include "measure/mpi/sweeps.hpp"
#include "reports/results.hpp"

namespace dsgd::app {

struct PingPongCli {
  measure::mpi::PingPongOptions sweep;
  std::string results;
  bool quiet = false;  // no table and fit on standard output (dsgd calibrate prints its own)
  // The printed fit's segments (why these: measure/calibration.hpp).
  std::vector<double> boundaries{measure::kDefaultSegmentBoundaries.begin(), measure::kDefaultSegmentBoundaries.end()};
};

struct AllreduceCli {
  measure::mpi::AllreduceOptions sweep;
  std::string results;
};

struct WaitingCli {
  double seconds = 2;
  std::string results;
};

// Each runs its measurement on every rank of `comm`; rank 0 prints what it measured and writes the results file the
// options name (if any). `command` is the command line, for the provenance.
void pingpong_command(measure::mpi::MpiComm& comm, const PingPongCli& cli, const std::string& command);
void allreduce_command(measure::mpi::MpiComm& comm, const AllreduceCli& cli, const std::string& command);
void waiting_command(measure::mpi::MpiComm& comm, const WaitingCli& cli, const std::string& command);

}  // namespace dsgd::app
