#pragma once
// The results entries of the MPI executor's sweeps (sweeps.hpp, waiting_share.hpp), built on rank 0 where the
// samples are: what dsgd-mpi writes and `dsgd calibrate` fits.

#include <vector>

#include "measure/mpi/sweeps.hpp"
#include "measure/waiting_share.hpp"
#include "reports/results.hpp"

namespace dsgd::measure::mpi {

// One entry per size of a ping-pong on `ranks` ranks run with `options`: the median round trip as its time, the
// round trip's min, max and mean (the mean counts the samples a preempted rank stretched, which the median leaves
// out: what a message costs on average beside computing ranks), one way, algbw, and the transport and buffers.
std::vector<reports::Entry> to_entries(const std::vector<PingPongSamples>& sizes, const PingPongOptions& options,
                                       int ranks);

// The waiting share of rank 0 among `ranks` ranks.
reports::Entry to_entry(const WaitingShare& measured, int ranks);

// The allreduce sweep's entries (measure::to_entries), MPI_Allreduce named so, each with the implementation that
// ran and, beside MPI_Allreduce, vs_mpi: its busbw over MPI_Allreduce's at the same size.
std::vector<reports::Entry> allreduce_entries(const AllreduceSweep& sweep);

}  // namespace dsgd::measure::mpi
