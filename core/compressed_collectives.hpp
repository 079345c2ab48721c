#pragma once
// Allreduces of compressed gradients (algorithms/README.md "Compressed gradients"), written once over Comm's
// point-to-point messages like core/collectives.hpp, so they run on threads, OpenMPI and SimGrid, with payloads or
// size-only: the messages have the compressed sizes, and encoding and decoding are compute steps ("elementwise",
// the FLOPs below, of the collective's category). Closed forms: simulate/collective_costs.hpp.
//
//   fp16    a ring allreduce (as core's) whose messages are IEEE halves: each rank rounds its own chunk to half
//           before it leaves; a hop converts the half it received to float, adds its own float chunk and rounds the
//           sum to half for the next hop; the chunk's owner sends its rounded total round the ring. Every rank ends
//           with the same halves widened to floats (its own chunk included), so replicas stay bit-identical.
//   onebit  each rank encodes gradient + residual in 1 bit per element and two scales per segment, keeps the
//   topk    error as residual (core/compression.hpp); the messages go round a ring allgather; every rank decodes the
//           P messages in rank order into the sum (so the same floats are added in the same order everywhere).
//
// Why allgather for the error-feedback codecs: a reduce-scatter would add decoded (full-precision) values on the
// way and send them on, losing the compression, or requantise every partial sum (CNTK's variant), adding error that
// no residual feeds back. An allgather sends each rank's message unchanged, at (P - 1) x message bytes per rank:
// less than the fp32 ring's 2 (P - 1)/P x 4 n bytes while P < 64 (onebit) or 1 / (ratio) (topk).

#include <cstddef>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/compression.hpp"

namespace dsgd {

struct CompressionOptions {
  Compression kind = Compression::kNone;
  double topk_ratio = 0.01;  // top-k: the fraction of elements each rank sends
  // 1-bit: the lengths of the segments that get their own scales (a model's layers), summing to the buffer's
  // count; empty: one segment.
  std::vector<std::size_t> segments;
};

// Options of `kind`, spelled out (aggregate initialisers that leave members out draw -Wmissing-field-initializers).
inline CompressionOptions compression_options(Compression kind, double topk_ratio = 0.01,
                                              std::vector<std::size_t> segments = {}) {
  CompressionOptions options;
  options.kind = kind;
  options.topk_ratio = topk_ratio;
  options.segments = std::move(segments);
  return options;
}

// FLOPs the compute steps charge, per element of the buffer (the decodes: per element per message).
inline constexpr double kHalfConvertFlops = 1;     // to or from half
inline constexpr double kHalfAccumulateFlops = 3;  // widen, add, round
inline constexpr double kOneBitEncodeFlops = 4;    // add the residual, sum by sign, pick the bit, new residual
inline constexpr double kTopKEncodeFlops = 3;      // add the residual, magnitude, selection (linear on average)
inline constexpr double kDecodeFlops = 1;          // one addition per decoded element

// The bytes one rank's message holds for `count` floats: for fp16 the whole buffer in halves (the ring sends
// (P - 1)/P x 2 of it), for onebit and topk the encoded message (the allgather forwards P - 1 of them), for none
// the floats.
std::size_t compressed_bytes(const CompressionOptions& compression, std::size_t count);

// Sums every rank's `buffer` in compressed form, the result in every rank's `buffer` (the same on every rank).
// `residual` (count floats, zero at first, kept by the caller between calls) carries the error feedback of onebit
// and topk; fp16 and none ignore it. kNone is core's ring allreduce, unchanged. One rank returns at once, as core's
// allreduce does: the buffer and residual stay as they are. Throws InputError for a top-k ratio
// outside (0, 1] or segments that do not add up to the count.
void compressed_allreduce(Comm& comm, Floats buffer, Floats residual, const CompressionOptions& compression,
                          const CollectiveOptions& options = {});

}  // namespace dsgd
