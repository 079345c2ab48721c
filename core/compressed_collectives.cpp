#include "core/compressed_collectives.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>

namespace dsgd {

namespace {

// Storage of `count` elements that exists only when the comm carries payloads.
template <typename T>
std::vector<T> payload_buffer(const Comm& comm, std::size_t count) {
  return comm.has_payload() ? std::vector<T>(count) : std::vector<T>{};
}

template <typename T>
T* data_or_null(std::vector<T>& storage) {
  return storage.empty() ? nullptr : storage.data();
}

// A compute step of `flops` elementwise FLOPs charged to the collective's category; `kernel` runs only with data.
void compute(Comm& comm, double flops, bool has_data, const CollectiveOptions& options, std::function<void()> kernel) {
  ComputeStep step;
  step.flops = flops;
  step.kernel_class = "elementwise";
  step.category = options.category;
  if (has_data) step.kernel = std::move(kernel);
  comm.compute(step);
}

// Sends `out` to the right neighbour and receives `in` from the left one, both posted before either waits.
void shift(Comm& comm, const void* out, std::size_t out_bytes, void* in, std::size_t in_bytes,
           const CollectiveOptions& options) {
  const int size = comm.size();
  auto receive = comm.irecv((comm.rank() - 1 + size) % size, options.tag, in, in_bytes, options.category);
  auto sending = comm.isend((comm.rank() + 1) % size, options.tag, out, out_bytes, options.category);
  receive->wait();
  sending->wait();
}

// The ring allreduce of core/collectives.cpp with half-precision messages (see the header for where it rounds).
void allreduce_fp16(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const int size = comm.size();
  const int rank = comm.rank();
  const auto begin_of = [&](int chunk) {
    return buffer.count * static_cast<std::size_t>(chunk) / static_cast<std::size_t>(size);
  };
  struct Chunk {
    std::size_t begin, count;
  };
  const auto chunk = [&](int index) {
    const int c = ((index % size) + size) % size;
    return Chunk{begin_of(c), begin_of(c + 1) - begin_of(c)};
  };
  std::vector<std::uint16_t> halves = payload_buffer<std::uint16_t>(comm, buffer.count);
  std::vector<std::uint16_t> incoming = payload_buffer<std::uint16_t>(comm, buffer.count / size + 1);
  std::uint16_t* half = data_or_null(halves);
  const bool has_data = half != nullptr && buffer.data != nullptr;
  const auto half_at = [half](std::size_t offset) { return half ? half + offset : nullptr; };
  constexpr std::size_t kHalfBytes = sizeof(std::uint16_t);

  // This rank's own chunk leaves first: round it to half.
  const Chunk own = chunk(rank);
  compute(comm, kHalfConvertFlops * static_cast<double>(own.count), has_data, options, [&] {
    for (std::size_t i = own.begin; i < own.begin + own.count; ++i) half[i] = to_half(buffer.data[i]);
  });
  // Reduce-scatter: receive the left neighbour's partial sum of a chunk, add this rank's floats, round for the next
  // hop. After P - 1 steps this rank holds the rounded total of chunk rank + 1.
  for (int step = 0; step < size - 1; ++step) {
    const Chunk out = chunk(rank - step);
    const Chunk in = chunk(rank - step - 1);
    shift(comm, half_at(out.begin), out.count * kHalfBytes, data_or_null(incoming), in.count * kHalfBytes, options);
    compute(comm, kHalfAccumulateFlops * static_cast<double>(in.count), has_data, options, [&] {
      for (std::size_t i = 0; i < in.count; ++i) {
        half[in.begin + i] = to_half(from_half(incoming[i]) + buffer.data[in.begin + i]);
      }
    });
  }
  // Allgather: the rounded totals go round unchanged.
  for (int step = 0; step < size - 1; ++step) {
    const Chunk out = chunk(rank + 1 - step);
    const Chunk in = chunk(rank - step);
    shift(comm, half_at(out.begin), out.count * kHalfBytes, half_at(in.begin), in.count * kHalfBytes, options);
  }
  // Every rank widens the same halves, its own chunk's included.
  compute(comm, kHalfConvertFlops * static_cast<double>(buffer.count), has_data, options, [&] {
    for (std::size_t i = 0; i < buffer.count; ++i) buffer.data[i] = from_half(half[i]);
  });
}

// Ring allgather of one `block_bytes` message per rank: `blocks` holds P of them, rank r's at r x block_bytes, and
// this rank's is in place. P - 1 steps, each forwarding the block received in the step before.
void allgather_blocks(Comm& comm, std::byte* blocks, std::size_t block_bytes, const CollectiveOptions& options) {
  const int size = comm.size();
  const auto block = [&](int index) -> std::byte* {
    const int b = ((index % size) + size) % size;
    return blocks ? blocks + static_cast<std::size_t>(b) * block_bytes : nullptr;
  };
  for (int step = 0; step < size - 1; ++step) {
    shift(comm, block(comm.rank() - step), block_bytes, block(comm.rank() - step - 1), block_bytes, options);
  }
}

void check_segments(const CompressionOptions& compression, std::size_t count) {
  const auto& segments = compression.segments;
  const std::size_t total = std::accumulate(segments.begin(), segments.end(), std::size_t{0});
  if (!segments.empty() && total != count) {
    throw InputError("onebit compression: segments of " + std::to_string(total) + " elements for a buffer of " +
                     std::to_string(count));
  }
}

// Encode, allgather, decode every rank's message in rank order into `buffer`.
void allreduce_error_feedback(Comm& comm, Floats buffer, Floats residual, const CompressionOptions& compression,
                              const CollectiveOptions& options) {
  const std::size_t count = buffer.count;
  const auto ranks = static_cast<std::size_t>(comm.size());
  const std::vector<std::size_t> one_segment = {count};
  const std::vector<std::size_t>& segments = compression.segments.empty() ? one_segment : compression.segments;
  const bool onebit = compression.kind == Compression::kOneBit;
  const std::size_t k = onebit ? 0 : topk_count(count, compression.topk_ratio);
  const std::size_t message_bytes = compressed_bytes(compression, count);
  std::vector<std::byte> storage = payload_buffer<std::byte>(comm, ranks * message_bytes);
  std::byte* blocks = data_or_null(storage);
  const bool has_data = blocks != nullptr && buffer.data != nullptr && residual.data != nullptr;
  const auto message = [&](std::size_t rank) {
    return std::span<std::byte>(blocks + rank * message_bytes, message_bytes);
  };

  const double encode_flops = (onebit ? kOneBitEncodeFlops : kTopKEncodeFlops) * static_cast<double>(count);
  compute(comm, encode_flops, has_data, options, [&] {
    const auto mine = message(static_cast<std::size_t>(comm.rank()));
    if (onebit) {
      onebit_encode(buffer.span(), residual.span(), segments, mine);
    } else {
      topk_encode(buffer.span(), residual.span(), k, mine);
    }
  });
  allgather_blocks(comm, blocks, message_bytes, options);
  // Top-k decodes into zeros (one pass over the buffer) and adds k values per message; 1-bit adds every element.
  const double decoded = onebit ? static_cast<double>(ranks * count) : static_cast<double>(count + ranks * k);
  compute(comm, kDecodeFlops * decoded, has_data, options, [&] {
    std::fill_n(buffer.data, count, 0.0F);
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      if (onebit) {
        onebit_decode_add(message(rank), segments, buffer.span());
      } else {
        topk_decode_add(message(rank), k, buffer.span());
      }
    }
  });
}

// The schedule's name and key: everything that shapes its messages.
CollectiveCall call_of(const CompressionOptions& compression, std::size_t count, const CollectiveOptions& options) {
  CollectiveCall call;
  call.name = "compressed allreduce " + std::string(to_string(compression.kind));
  call.key =
      "count " + std::to_string(count) + ", message " + std::to_string(compressed_bytes(compression, count)) + " bytes";
  call.category = options.category;
  call.count = count;
  call.tag = options.tag;
  return call;
}

}  // namespace

std::size_t compressed_bytes(const CompressionOptions& compression, std::size_t count) {
  switch (compression.kind) {
    case Compression::kNone:
      return count * sizeof(float);
    case Compression::kFp16:
      return count * sizeof(std::uint16_t);
    case Compression::kOneBit:
      return onebit_bytes(count, std::max<std::size_t>(1, compression.segments.size()));
    case Compression::kTopK:
      return topk_bytes(topk_count(count, compression.topk_ratio));
  }
  return 0;
}

void compressed_allreduce(Comm& comm, Floats buffer, Floats residual, const CompressionOptions& compression,
                          const CollectiveOptions& options) {
  if (compression.kind == Compression::kTopK && !(compression.topk_ratio > 0 && compression.topk_ratio <= 1)) {
    throw InputError("topk compression: the ratio must be in (0, 1], got " + std::to_string(compression.topk_ratio));
  }
  check_segments(compression, buffer.count);
  // As core's allreduce: one rank has nothing to exchange, so nothing is rounded or left out.
  if (comm.size() == 1) return;
  switch (compression.kind) {
    case Compression::kNone:
      allreduce(comm, buffer, AllreduceAlgorithm::kRing, options);
      return;
    case Compression::kFp16:
      comm.run_collective(call_of(compression, buffer.count, options),
                          [&](Comm& c) { allreduce_fp16(c, buffer, options); });
      return;
    case Compression::kOneBit:
    case Compression::kTopK:
      if (comm.has_payload() && buffer.count > 0 && residual.data == nullptr) {
        throw InputError(std::string(to_string(compression.kind)) + " compression needs a residual buffer");
      }
      DSGD_ENFORCE_EQ(residual.count, buffer.count);
      comm.run_collective(call_of(compression, buffer.count, options),
                          [&](Comm& c) { allreduce_error_feedback(c, buffer, residual, compression, options); });
      return;
  }
}

}  // namespace dsgd
