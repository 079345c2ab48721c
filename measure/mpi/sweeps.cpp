#include "measure/mpi/sweeps.hpp"

#include <algorithm>

#include "core/collectives.hpp"
#include "core/error.hpp"
#include "core/verifiable.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::measure::mpi {

namespace {

// Open MPI's shared-memory transport switches from eager to rendezvous at btl_vader_eager_limit (4096 B with its
// headers: payloads up to 4040 B go eager, from 4048 B rendezvous); sizes around it show the step.
const std::vector<double> kNearEagerLimit = {3072, 3584, 4000, 4032, 4040, 4048, 4064, 4160, 4608, 6144};

}  // namespace

double max_over_ranks(MpiComm& comm, double value) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm.handle()), comm.rank(),
            "MPI_Allreduce of timings");
  return value;
}

std::vector<std::size_t> pingpong_sizes(const PingPongOptions& options) {
  std::vector<std::size_t> sizes;
  for (double bytes = 1; bytes <= options.max_bytes; bytes *= 2) {
    if (bytes >= options.min_bytes) sizes.push_back(static_cast<std::size_t>(bytes));
  }
  for (const double bytes : kNearEagerLimit) {
    if (bytes >= options.min_bytes && bytes <= options.max_bytes) sizes.push_back(static_cast<std::size_t>(bytes));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<PingPongSamples> pingpong(MpiComm& comm, const PingPongOptions& options) {
  if (comm.size() < 2) {
    throw InputError("pingpong needs at least 2 ranks (mpirun -np 2), got " + std::to_string(comm.size()));
  }
  if (options.rounds < 1) throw InputError("pingpong: --rounds must be at least 1");
  if (!(options.min_bytes >= 1) || options.max_bytes < options.min_bytes) {
    throw InputError("pingpong: need 1 <= --min-bytes <= --max-bytes");
  }
  const auto sizes = pingpong_sizes(options);
  const int rank = comm.rank();
  constexpr Tag kStopTag = 2;
  if (options.busy && rank >= 2) {
    // Compute in millisecond slices until rank 0 says the ping-pong is over (a probe between slices).
    for (int arrived = 0; arrived == 0;) {
      compute_for(1e-3);
      check_mpi(MPI_Iprobe(0, kStopTag, comm.handle(), &arrived, MPI_STATUS_IGNORE), rank,
                "MPI_Iprobe for the end of the ping-pong");
    }
    char stop = 0;
    comm.recv(0, kStopTag, &stop, 1, Category::kWait);
    return {};
  }
  if (!(options.pool_bytes >= 0)) throw InputError("pingpong: --pool-bytes must be >= 0");
  if (!(options.think_s >= 0)) throw InputError("pingpong: --think must be >= 0 seconds");
  PingPongBuffers buffers(sizes.back(), static_cast<std::size_t>(options.pool_bytes));
  std::vector<PingPongSamples> samples(sizes.size());
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    samples[s].bytes = sizes[s];
    samples[s].trips = options.think_s > 0 ? 1 : trips_per_sample(sizes[s]);
  }
  // Round 0 warms up (page faults, transport set-up) and is not kept. Rounds sweep all sizes, so drift over the
  // run affects every size alike instead of biasing the large ones.
  for (int round = 0; round <= options.rounds; ++round) {
    for (auto& size : samples) {
      if (rank > 1) continue;
      if (rank == 0 && options.think_s > 0) compute_for(options.think_s);
      const double start = comm.now_s();
      pingpong_trips(comm, buffers, size.bytes, size.trips);
      if (rank == 0 && round > 0) size.round_trip_s.push_back((comm.now_s() - start) / size.trips);
    }
    if (!options.busy) comm.barrier();  // idle ranks wait one round at a time, well inside the timeout
  }
  if (options.busy && rank == 0) {
    char stop = 1;
    for (int other = 2; other < comm.size(); ++other) comm.send(other, kStopTag, &stop, 1, Category::kWait);
  }
  if (rank != 0) return {};
  return samples;
}

AllreduceSweep allreduce_sweep(MpiComm& comm, AllreduceOptions options) {
  if (options.rounds < 1) throw InputError("allreduce: --rounds must be at least 1");
  for (const auto& variant : options.variants) {
    if (variant != kMpiVariant) (void)allreduce_algorithm_from_string(variant);  // lists the valid names
  }
  if (options.max_floats > 0) {
    std::erase_if(options.sizes, [&](std::size_t count) { return count > options.max_floats; });
  }
  if (options.sizes.empty()) throw InputError("allreduce: no size left (check --sizes and --max-floats)");
  return measure::allreduce_sweep(comm, {options.sizes, options.variants, options.rounds},
                                  [&](Comm&, const std::string& variant, Floats values) {
                                    if (variant == kMpiVariant) {
                                      mpi_allreduce(comm, values);
                                    } else {
                                      run_collective(comm, variant, values);
                                    }
                                  });
}

void selftest(MpiComm& comm, int fail_rank) {
  const int rank = comm.rank();
  const int n = comm.size();
  if (rank == fail_rank) throw Error("selftest: rank " + std::to_string(rank) + " fails on purpose (--fail-rank)");
  if (fail_rank >= 0) {
    // Wait for a message the failing rank never sends: MPI_Abort from that rank must end this wait.
    float never = 0;
    comm.recv(fail_rank, 99, &never, sizeof never, Category::kWait);
  }
  // Every allreduce algorithm and MPI's, exact on integer inputs; then a ring of point-to-point messages.
  std::vector<float> values(1001);
  for (const auto algorithm : kAllreduceAlgorithms) {
    verifiable::fill_inputs(values, rank);
    allreduce(comm, {values.data(), values.size()}, algorithm);
    verifiable::check_sums(values, n, "allreduce " + std::string(to_string(algorithm)));
  }
  verifiable::fill_inputs(values, rank);
  mpi_allreduce(comm, {values.data(), values.size()});
  verifiable::check_sums(values, n, "allreduce MPI_Allreduce");
  int token = rank;
  int received = -1;
  auto receive = comm.irecv((rank - 1 + n) % n, 5, &received, sizeof received, Category::kNetwork);
  comm.send((rank + 1) % n, 5, &token, sizeof token, Category::kNetwork);
  receive->wait();
  if (received != (rank - 1 + n) % n) throw InternalError("selftest: ring message has the wrong value");
  comm.barrier();
}

}  // namespace dsgd::measure::mpi
