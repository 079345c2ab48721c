#include "measure/cpu_kernel_model.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/stats.hpp"
#include "core/stopwatch.hpp"
#include "measure/calibration.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/stream.hpp"

namespace dsgd::measure {

namespace {

// OpenBLAS's x86-64 SGEMM register block on Haswell and Zen cores (kernel/x86_64/KERNEL.HASWELL, KERNEL.ZEN:
// sgemm_kernel_8x4_haswell): 8 rows of C per block.
constexpr std::int64_t kGemmBlockRows = 8;

// The median of `repetitions` runs of `run`, after a tenth as many untimed.
template <typename Run>
double median_seconds(int repetitions, Run&& run) {
  for (int i = 0; i < repetitions / 10 + 1; ++i) run();
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = SteadyClock::now();
    run();
    times.push_back(seconds_since(start));
  }
  return median(std::move(times));
}

// The back end's dispatch of its smallest kernel: a ReLU over one float on one thread.
double smallest_kernel_seconds() {
  auto backend = nn::make_backend("cpu", {.threads = 1});
  LayerSpec spec;
  spec.name = "relu";
  spec.kind = LayerKind::kReLU;
  spec.input = spec.output = Shape{1, 1, 1};
  const auto layer = backend->create_layer(spec, 1);
  float* in = backend->allocate(1);
  float* out = backend->allocate(1);
  const double seconds = median_seconds(2000, [&] { layer->forward(in, out, nullptr, true); });
  backend->release(in);
  backend->release(out);
  return seconds;
}

// An empty OpenMP parallel region of `threads` threads: the fork-join a threaded kernel pays.
double fork_join_seconds(int threads) {
  return median_seconds(2000, [threads] {
#pragma omp parallel num_threads(threads)
    {
      // The region's own barrier at its end is the cost.
    }
  });
}

// Bytes read and written per second by `threads` cores each copying its own `bytes` back and forth (memcpy),
// the best of 20 rounds of at least 64 MiB moved per core: the bandwidth of the tier those buffers fit in.
double copy_rate_Bps(std::size_t bytes, int threads) {
  const std::size_t floats = std::max<std::size_t>(bytes / sizeof(float), 1024);
  const int passes = static_cast<int>(std::max<std::size_t>(1, (std::size_t{64} << 20) / (floats * sizeof(float))));
  std::vector<std::vector<float>> a(static_cast<std::size_t>(threads), std::vector<float>(floats, 1.0f));
  std::vector<std::vector<float>> b(static_cast<std::size_t>(threads), std::vector<float>(floats, 2.0f));
  double best = 1e30;
  for (int round = 0; round < 20; ++round) {
    const auto start = SteadyClock::now();
#pragma omp parallel num_threads(threads)
    {
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      for (int pass = 0; pass < passes; ++pass) {
        std::memcpy(b[t].data(), a[t].data(), floats * sizeof(float));
        std::memcpy(a[t].data(), b[t].data(), floats * sizeof(float));
      }
    }
    best = std::min(best, seconds_since(start));
  }
  return 2.0 * 2.0 * static_cast<double>(passes) * static_cast<double>(floats * sizeof(float)) * threads / best;
}

}  // namespace

std::size_t cache_bytes(int level) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu0/cache", error)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream level_file(entry.path() / "level");
    std::ifstream type_file(entry.path() / "type");
    std::ifstream size_file(entry.path() / "size");
    int found = 0;
    std::string type;
    std::string size;
    if (!(level_file >> found) || !(type_file >> type) || !std::getline(size_file, size)) continue;
    if (found != level || type == "Instruction") continue;
    if (const auto bytes = parse_cache_size(size)) return *bytes;
  }
  return 0;
}

CpuKernelDescription describe_cpu_kernels(const std::string& where) {
  const CpuFacts facts = read_cpu_facts();
  if (!(facts.clock_Hz > 0)) throw UnavailableError("/proc/cpuinfo gives no clock to derive the peak from");
  const std::size_t l2 = cache_bytes(2);
  const std::size_t l3 = cache_bytes(3);
  if (l2 == 0 || l3 == 0) throw UnavailableError("sysfs gives no L2 or L3 cache size (/sys/devices/system/cpu)");
  const CorePeak core = derive_core_peak(facts);
  const int cores = std::max(facts.physical_cores, 1);
  const std::string measured = "measured by dsgd bench layers on " + where + ": ";

  CpuKernelDescription description;
  platforms::Cpu& cpu = description.cpu;
  cpu.model = facts.model;
  cpu.cores_per_socket = cores;
  cpu.clock_Hz = facts.clock_Hz;
  cpu.vector_width_bits = core.vector_width_bits;
  cpu.sp_flops_per_cycle_per_core = core.sp_flops_per_cycle;
  cpu.peak_flops = cores * facts.clock_Hz * core.sp_flops_per_cycle;
  cpu.sources = {{"sockets", "/proc/cpuinfo"},
                 {"cores_per_socket", "/proc/cpuinfo: physical cores"},
                 {"clock_Hz", "/proc/cpuinfo: cpu MHz"},
                 {"vector_width_bits", core.width_source},
                 {"sp_flops_per_cycle_per_core", core.per_cycle_source},
                 {"peak_flops", "derived: cores x clock x FLOP/cycle"}};

  platforms::KernelModel model;
  model.parallel_units = cores;
  model.tile_m = kGemmBlockRows;
  model.tile_n = std::max(1, core.vector_width_bits / 32);
  model.fixed_s = smallest_kernel_seconds();
  const double one = fork_join_seconds(1);
  model.sync_s_per_unit = std::max(0.0, (fork_join_seconds(cores) - one) / cores);
  platforms::Memory cache;
  cache.name = "L2";
  cache.size_bytes = static_cast<double>(l2) * cores;
  cache.bandwidth_Bps = copy_rate_Bps(l2 / 4, cores);
  cache.sources = {{"size_bytes", "sysfs: cpu0's L2 x " + std::to_string(cores) + " cores"},
                   {"bandwidth_Bps", measured + "memcpy within half of each core's L2, every core"}};
  model.cache = cache;
  model.efficiency = 1;
  model.sources = {
      {"parallel_units", "/proc/cpuinfo: physical cores"},
      {"tile", "n: fp32 lanes of one " + std::to_string(core.vector_width_bits) +
                   "-bit register; m: OpenBLAS's x86-64 SGEMM block of 8 rows (sgemm_kernel_8x4, Haswell and Zen)"},
      {"fixed_s", measured + "median of a ReLU over one float on one thread (the back end's dispatch)"},
      {"sync_s_per_unit", measured + "an empty OpenMP region of every core less one of one thread, per core"},
      {"efficiency", "1 until fitted"}};
  cpu.kernels = model;

  platforms::Memory l3_memory;
  l3_memory.name = "L3";
  l3_memory.size_bytes = static_cast<double>(l3);
  l3_memory.bandwidth_Bps = copy_rate_Bps(l3 / 4 / static_cast<std::size_t>(cores), cores);
  l3_memory.sources = {{"size_bytes", "sysfs: cpu0's L3"},
                       {"bandwidth_Bps", measured + "memcpy within half of the L3, every core"}};
  platforms::Memory dram;
  dram.name = "DRAM";
  dram.bandwidth_Bps = stream_triad(cores).bytes_per_s;
  dram.sources = {{"bandwidth_Bps", measured + "STREAM triad on every core"}};
  description.memories = {l3_memory, dram};
  return description;
}

}  // namespace dsgd::measure
