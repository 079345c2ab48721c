#pragma once
// The ways bytes move on one node, timed copy by copy (seed 001 Tables I-II; docs/transports.md): host memcpy here,
// and on a GPU copies between host and device from pageable and from pinned host memory, within a device and
// between devices (peer). The threads executor's and MPI's messages are timed by their ping-pongs
// (measure/threads_pingpong.hpp, `dsgd-mpi pingpong`); `dsgd bench transports` puts all of them in one table, and
// measure/bench/transports_bench.cpp runs these as Google Benchmark benchmarks.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dsgd::measure {

// One transport at one size: buffers made once, copied again and again.
class TransportCopy {
 public:
  virtual ~TransportCopy() = default;
  // Moves the bytes once; returns the seconds it took (a GPU copy timed by CUDA events around it).
  virtual double copy_once() = 0;
};

struct Transport {
  std::string name;         // "memcpy", "cuda-h2d-pinned", ...
  std::string description;  // what moves from where to where
  std::function<std::unique_ptr<TransportCopy>(std::size_t bytes)> make;
};

// What this process can time here: host memcpy, then cuda_transports().
std::vector<Transport> local_transports();
// The CUDA copies (measure/cuda/transfers.cu): host to device and back from pageable and pinned memory, device to
// device, and device to device across two devices where there are two. Empty without CUDA or a device.
std::vector<Transport> cuda_transports();

struct TransportPoint {
  std::string transport;
  std::size_t bytes = 0;
  double one_way_s = 0;  // median of the timed copies
  double min_s = 0;
  int samples = 0;
};

// One warm-up copy, then copies until `budget_s` has passed and at least `min_samples` were timed (at most 10,000).
TransportPoint time_transport(const Transport& transport, std::size_t bytes, double budget_s = 0.02,
                              int min_samples = 5);

// 1 B and the powers of 4 from 4 B to max_bytes, with seed 001 Tables I-II's sizes (128 B, 512 B, 16 KiB, 512 KiB,
// 2 MiB, 4 MiB) among them, ascending.
std::vector<std::size_t> transport_sizes(std::size_t max_bytes);

}  // namespace dsgd::measure
