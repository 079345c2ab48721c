// Google Benchmark of Dogwild's datagram codec (core/datagram.hpp): what the tag and the checks cost a sender
// (encode_chunk) and a receiver (decode_chunk) per byte, at a full datagram and a small one, and SipHash-2-4 alone.
// docs/dogwild.md "Wire format" quotes the full-datagram rates:
//   build/measure/bench/datagram_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <vector>

#include "core/datagram.hpp"

namespace {

const dsgd::DatagramKey kKey{{0x0123456789abcdefULL, 0xfedcba9876543210ULL}, 42};

void set_rate(benchmark::State& state, std::size_t bytes) {
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["bandwidth_Bps"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}

void encode(benchmark::State& state) {
  const std::vector<float> floats(static_cast<std::size_t>(state.range(0)), 0.25F);
  for (auto _ : state) benchmark::DoNotOptimize(dsgd::encode_chunk({1, 0, 0, 0, 0}, floats, kKey));
  set_rate(state, dsgd::kDatagramOverheadBytes + floats.size() * sizeof(float));
}

void decode(benchmark::State& state) {
  const std::vector<float> floats(static_cast<std::size_t>(state.range(0)), 0.25F);
  const auto datagram = dsgd::encode_chunk({1, 0, 0, 0, 0}, floats, kKey);
  dsgd::Chunk chunk;
  for (auto _ : state) {
    if (dsgd::decode_chunk(datagram, floats.size(), kKey, chunk) != dsgd::ChunkDefect::kNone) {
      state.SkipWithError("a genuine datagram was refused");
      break;
    }
    benchmark::DoNotOptimize(chunk.floats.data());
  }
  set_rate(state, datagram.size());
}

void siphash(benchmark::State& state) {
  const std::vector<std::byte> message(static_cast<std::size_t>(state.range(0)), std::byte{7});
  for (auto _ : state) benchmark::DoNotOptimize(dsgd::siphash24(kKey.tag, message));
  set_rate(state, message.size());
}

BENCHMARK(encode)->Arg(256)->Arg(static_cast<std::int64_t>(dsgd::kMaxChunkFloats));
BENCHMARK(decode)->Arg(256)->Arg(static_cast<std::int64_t>(dsgd::kMaxChunkFloats));
BENCHMARK(siphash)->Arg(1024)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
