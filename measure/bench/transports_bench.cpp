// Google Benchmark of the transports of measure/transports.hpp (host memcpy; on a GPU, host-device copies from
// pageable and pinned memory, device-device and peer copies) at seed 001 Tables I-II's sizes, one copy per
// iteration with manual time. `dsgd bench transports` times the same copies (and the threads and MPI ping-pongs)
// into one table; this executable is for Google Benchmark's own tooling:
//   build/measure/bench/transports_bench --benchmark_out=transports.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "measure/transports.hpp"

namespace {

constexpr std::size_t kMaxBytes = std::size_t{64} << 20;

void register_transports() {
  static const auto transports = dsgd::measure::local_transports();
  for (const auto& transport : transports) {
    for (const std::size_t bytes : dsgd::measure::transport_sizes(kMaxBytes)) {
      const std::string name = "transport/" + transport.name + "/" + std::to_string(bytes);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [&transport, bytes](benchmark::State& state) {
                                     const auto copy = transport.make(bytes);
                                     copy->copy_once();  // warm-up
                                     for (auto _ : state) state.SetIterationTime(copy->copy_once());
                                     state.counters["bytes"] = static_cast<double>(bytes);
                                     state.counters["bandwidth_Bps"] = benchmark::Counter(
                                         static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
                                     state.SetLabel(transport.description);
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_transports();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
