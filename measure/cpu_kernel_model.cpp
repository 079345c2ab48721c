#include "measure/cpu_kernel_model.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/layer_kernels.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/stopwatch.hpp"
#include "measure/calibration.hpp"
#include "measure/layer_profile.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/stream.hpp"

namespace dsgd::measure {

namespace {

// OpenBLAS 0.3.21 (Debian 12) runs an sgemm of up to SMP_THRESHOLD_MIN (65536) x GEMM_MULTITHREAD_THRESHOLD (4,
// Debian's build) multiply-adds on one thread and a larger one on every thread (interface/gemm.c); the CPU back end's
// inner products call it (core/nn/cpu/inner_product.cpp).
constexpr double kOpenBlasOneThreadUpTo = 65536.0 * 4;

// The back end's smallest kernel, a ReLU over one float, on `threads` threads: its dispatch, and beyond one thread
// the fork-join its threaded kernels pay (waking the other threads, the barrier at the end).
double smallest_kernel_seconds(int threads) {
  const auto backend = nn::make_backend("cpu", {.threads = threads});
  LayerSpec spec;
  spec.name = "relu";
  spec.kind = LayerKind::kReLU;
  spec.input = spec.output = Shape{1, 1, 1};
  return time_layer(*backend, spec, 1, {.repetitions = 2000, .warmup = 200})->forward;
}

// The clock the cores run at with all of them busy: a chain of dependent integer adds retires one add per cycle
// (latency 1 on every x86-64 core), so adds / seconds on each core, its best of 20 short rounds, and the fastest core
// kept (another program holding a core through every round of one thread would lower the peak below a bound; a
// fastest core only raises it). /proc/cpuinfo's "cpu MHz" is
// the nominal clock, or under a hypervisor its figure: 2.6 GHz read where this Zen 5 VM's cores run at 4.1-4.2 GHz,
// so oneDNN's SGEMM ran at 1.5 times a peak derived from it. 0 off x86-64 (the caller keeps /proc/cpuinfo's).
double running_clock_Hz(int cores) {
#if defined(__x86_64__)
  constexpr std::uint64_t kLoops = 4'000'000;  // 8 adds each: 32 M cycles, about 8 ms at 4 GHz
  double fastest_Hz = 0;
#pragma omp parallel num_threads(cores) reduction(max : fastest_Hz)
  {
    double fastest_s = 1e30;
    for (int round = 0; round < 20; ++round) {
      std::uint64_t sum = 0;
      std::uint64_t loops = kLoops;
      const auto start = SteadyClock::now();
      asm volatile(
          "1:\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "dec %1\n\t"
          "jnz 1b"
          : "+r"(sum), "+r"(loops));
      fastest_s = std::min(fastest_s, seconds_since(start));
    }
    fastest_Hz = 8.0 * static_cast<double>(kLoops) / fastest_s;
  }
  return fastest_Hz;
#else
  (void)cores;
  return 0;
#endif
}

// Reference layers for the back end's streaming rates: shapes of no zoo model, small enough that a layer's tensors
// sit in one core's L2, as the memcpy rate of the L2 is taken. Their channels fill whole blocks of one vector's
// lanes (`channels`); max pooling's planes are 28 wide, not a power of two, whose planes alias in the cache (oneDNN's
// pooling backward ran at 25 GB/s on 32-wide planes against 44-47 on 20-, 24- and 28-wide ones).
constexpr std::int64_t kReferenceBatch = 4;
constexpr int kReferenceClasses = 100;  // the loss: 100 classes, 32 rows
constexpr int kReferenceRows = 32;

constexpr std::int64_t kReferencePlane = 28;

LayerSpec reference_layer(LayerKind kind, std::int64_t channels, std::int64_t plane = kReferencePlane) {
  LayerSpec spec;
  spec.name = std::string(to_string(kind)) + " (reference)";
  spec.kind = kind;
  spec.inputs = {"reference input"};  // not the model input: its backward computes the input's gradient
  spec.input = Shape{channels, 16, 16};
  spec.output = spec.input;
  if (kind == LayerKind::kMaxPool) {
    spec.input = Shape{channels, plane, plane};
    spec.output = Shape{channels, plane / 2, plane / 2};
    spec.kernel_h = spec.kernel_w = spec.stride = 2;
  }
  if (kind == LayerKind::kSoftmax) spec.input = spec.output = Shape{kReferenceClasses, 1, 1};
  return spec;
}

// The bytes core/layer_kernels.hpp counts for `spec`'s forward and backward kernels at `batch`.
struct CountedBytes {
  double forward = 0;
  double backward = 0;
};

CountedBytes counted_bytes(const LayerSpec& spec, std::int64_t batch) {
  ModelSpec model;
  model.name = "reference";
  model.layers = {spec};
  CountedBytes bytes;
  for (const LayerKernel& kernel : layer_kernels(model, 0, batch)) {
    (kernel.pass == KernelPass::kForward ? bytes.forward : bytes.backward) += kernel.bytes;
  }
  return bytes;
}

// A reference layer and its batch (for the loss: its rows).
struct Reference {
  LayerSpec spec;
  std::int64_t batch = 0;
};

Reference reference(LayerKind kind, std::int64_t channels, std::int64_t scale = 1) {
  const std::int64_t batch = kind == LayerKind::kSoftmax ? kReferenceRows : kReferenceBatch;
  return {reference_layer(kind, channels), batch * scale};
}

// The median seconds of `ref`'s forward and backward on `threads` threads, timed as the layer profile times a
// zoo layer (measure/layer_profile.hpp): the loss is one call, half of it each pass's.
LayerSeconds reference_seconds(const Reference& ref, int threads) {
  const auto backend = nn::make_backend("cpu", {.threads = threads});
  const LayerRun run{.repetitions = ref.spec.kind == LayerKind::kSoftmax ? 1000 : 500,
                     .warmup = 50,
                     .loss = ref.spec.kind == LayerKind::kSoftmax};
  const auto seconds = time_layer(*backend, ref.spec, ref.batch, run);
  if (!seconds) throw InternalError("no kernel for the reference layer " + ref.spec.name);
  return *seconds;
}

// A reference's passes timed on one thread beyond `fixed_s`, with the bytes layer_kernels counts and its images.
struct Timed {
  LayerSeconds seconds;
  CountedBytes bytes;
  double images = 0;
};

Timed timed(const Reference& ref, double fixed_s) {
  const LayerSeconds seconds = reference_seconds(ref, 1);
  return {{seconds.forward - fixed_s, seconds.backward - fixed_s},
          counted_bytes(ref.spec, ref.batch),
          static_cast<double>(ref.batch)};
}

// The seconds per byte of `ref` beyond `fixed_s`, forward and backward. A pass faster than its dispatch (the
// clock's noise) is taken at its dispatch's worth.
struct PerByte {
  double forward = 0;
  double backward = 0;
};

PerByte seconds_per_byte(const Reference& ref, double fixed_s) {
  const Timed one = timed(ref, fixed_s);
  return {std::max(one.seconds.forward, fixed_s) / one.bytes.forward,
          std::max(one.seconds.backward, fixed_s) / one.bytes.backward};
}

// A pass that costs `per_byte` seconds a byte and `per_image_s` an image, from its times on two references
// (seconds = bytes x per_byte + images x per_image_s). Empty where the two timings do not tell the costs apart.
struct BytesAndImages {
  double per_byte = 0;
  double per_image_s = 0;
};

std::optional<BytesAndImages> bytes_and_images(double seconds_a, double bytes_a, double images_a, double seconds_b,
                                               double bytes_b, double images_b) {
  const double per_byte = (seconds_a * images_b - seconds_b * images_a) / (bytes_a * images_b - bytes_b * images_a);
  if (!(per_byte > 0)) return std::nullopt;
  return BytesAndImages{per_byte, std::max(0.0, (seconds_a - bytes_a * per_byte) / images_a)};
}

// A pass over block + 1 channels costs its bytes at the whole blocks' rate times the work of its padded share,
// W = 1 - share + share x 2 block / (block + 1), plus `tail_s` per image for the last block. From the pass's times
// on planes 28 wide (`wide`) and 8 wide (`narrow`): the two unknowns.
struct Tail {
  double share = 0;
  double tail_s = 0;
};

Tail padded_tail(double whole_per_byte, double wide_s, double wide_bytes, double wide_images, double narrow_s,
                 double narrow_bytes, double narrow_images, std::int64_t block) {
  const double padding = 2.0 * static_cast<double>(block) / static_cast<double>(block + 1) - 1;
  const auto share = [&](double per_byte) { return std::clamp((per_byte / whole_per_byte - 1) / padding, 0.0, 1.0); };
  const auto costs = bytes_and_images(wide_s, wide_bytes, wide_images, narrow_s, narrow_bytes, narrow_images);
  if (!costs) return {share(wide_s / wide_bytes), 0};
  return {share(costs->per_byte), costs->per_image_s};
}

// Below this padded share on both passes a kind is taken not to block its channels: the timing's noise.
constexpr double kNoBlocksBelow = 0.05;

// The back end's streaming rates for `kind` on one thread, over the time beyond the kernel's dispatch (`fixed_s`,
// or for the loss, a plain function, its own call on one row of two classes), and whether it spreads the kind over
// `cores` threads: a reference 16 times as large taking under 0.75 of its one-thread time on every core, and then
// at what share of their speed (its speed-up over the cores). The loss's work per row (a logarithm, the label's
// check) is what 32 rows of 2 classes take beyond their bytes at the rate 32 rows of 100 add; the other kinds'
// padded channels, what one channel more than a block costs per byte.
platforms::StreamingRate streaming_rate(LayerKind kind, int cores, double fixed_s, std::int64_t lanes) {
  constexpr std::int64_t kLarger = 16;
  platforms::StreamingRate rate;
  const Reference ref = reference(kind, lanes);
  if (cores > 1) {
    const Reference larger = reference(kind, lanes, kLarger);
    const double speedup = reference_seconds(larger, 1).both() / reference_seconds(larger, cores).both();
    rate.threaded = speedup > 1 / 0.75;
    if (rate.threaded) rate.parallel_efficiency = std::min(1.0, speedup / cores);
  }
  if (kind == LayerKind::kMaxPool) {
    // Its own dispatch (oneDNN's pooling sets up more than a ReLU): its smallest layer, one 2 x 2 window per channel.
    Reference smallest = ref;
    smallest.spec.input = Shape{lanes, 2, 2};
    smallest.spec.output = Shape{lanes, 1, 1};
    smallest.batch = 1;
    rate.fixed_s = reference_seconds(smallest, 1).both() / 2;
    fixed_s = *rate.fixed_s;
  }
  if (kind == LayerKind::kSoftmax) {
    Reference narrow = ref;
    narrow.spec.input = narrow.spec.output = Shape{2, 1, 1};
    Reference one_row = narrow;
    one_row.batch = 1;
    rate.fixed_s = reference_seconds(one_row, 1).forward;
    fixed_s = *rate.fixed_s;
    const Timed wide = timed(ref, fixed_s);
    const Timed few = timed(narrow, fixed_s);
    // Forward and backward are halves of one call: one rate per byte and one cost per row serve both.
    if (const auto costs = bytes_and_images(wide.seconds.forward, wide.bytes.forward, wide.images, few.seconds.forward,
                                            few.bytes.forward, few.images)) {
      rate.forward_Bps = 1 / costs->per_byte;
      rate.backward_Bps = rate.forward_Bps * few.bytes.backward / few.bytes.forward;
      rate.per_image_s = costs->per_image_s;
      return rate;
    }
    // The two timings' difference is noise: the rate alone, over the dispatch.
  }
  const PerByte whole = seconds_per_byte(ref, fixed_s);
  rate.forward_Bps = 1 / whole.forward;
  rate.backward_Bps = 1 / whole.backward;
  if (kind != LayerKind::kSoftmax) {
    // One channel more than a block, on the reference's planes and on planes 8 wide (as many bytes, 12 times the
    // images): the padded share of the work, and the last block's cost per image.
    constexpr std::int64_t kNarrowPlane = 8;
    constexpr std::int64_t kNarrowScale = 12;
    const Reference wide = reference(kind, lanes + 1);
    Reference narrow = wide;
    narrow.spec = reference_layer(kind, lanes + 1, kNarrowPlane);
    narrow.batch = wide.batch * kNarrowScale;
    const Timed wide_timed = timed(wide, fixed_s);
    const Timed narrow_timed = timed(narrow, fixed_s);
    const Tail forward =
        padded_tail(whole.forward, wide_timed.seconds.forward, wide_timed.bytes.forward, wide_timed.images,
                    narrow_timed.seconds.forward, narrow_timed.bytes.forward, narrow_timed.images, lanes);
    const Tail backward =
        padded_tail(whole.backward, wide_timed.seconds.backward, wide_timed.bytes.backward, wide_timed.images,
                    narrow_timed.seconds.backward, narrow_timed.bytes.backward, narrow_timed.images, lanes);
    if (std::max(forward.share, backward.share) >= kNoBlocksBelow) {
      rate.channel_block = lanes;
      rate.forward_padded_share = forward.share;
      rate.backward_padded_share = backward.share;
      rate.forward_tail_s = forward.tail_s;
      rate.backward_tail_s = backward.tail_s;
    }
  }
  return rate;
}

// The back end's convolutions on plain layouts (channels that blocks of 16 would pad by more than a quarter, as
// LeNet's) are oneDNN's im2col / col2im + GEMM; its inner products are OpenBLAS's sgemm. A 3x3 reference
// convolution, 17 -> 33 channels on 16 x 16 planes (no zoo shape; plain), its 1x1 twin of the same GEMMs (153 -> 33
// on the 14 x 14 output: its input is the column matrix) and an inner product of the same GEMMs again (153 -> 33 on
// 8 x 14 x 14 rows), at 8 images on one thread: what the lowering costs per column element, by pass, and OpenBLAS's
// speed against oneDNN's GEMM beyond OpenBLAS's packing. That packing's rate comes from an inner product of 1000
// to 300 on one row, whose time is its packing (one to four rows took the same time).
struct ReferenceGemms {
  platforms::GemmLibrary convolution;
  platforms::GemmLibrary inner_product;
};

ReferenceGemms reference_gemms(double fixed_s, int cores) {
  constexpr std::int64_t kIn = 17;
  constexpr std::int64_t kOut = 33;
  constexpr std::int64_t kPlane = 16;
  constexpr std::int64_t kKernel = 3;
  constexpr std::int64_t kImages = 8;
  constexpr std::int64_t kOutPlane = kPlane - kKernel + 1;
  constexpr std::int64_t kPatch = kIn * kKernel * kKernel;
  constexpr std::int64_t kPixels = kImages * kOutPlane * kOutPlane;
  const auto convolution = [](std::int64_t in, std::int64_t plane, std::int64_t kernel) {
    LayerSpec spec;
    spec.name = "convolution " + std::to_string(kernel) + "x" + std::to_string(kernel) + " (reference)";
    spec.kind = LayerKind::kConvolution;
    spec.inputs = {"reference input"};
    spec.input = Shape{in, plane, plane};
    spec.output = Shape{kOut, kOutPlane, kOutPlane};
    spec.kernel_h = spec.kernel_w = kernel;
    spec.stride = 1;
    spec.parameters = kOut * in * kernel * kernel + kOut;
    spec.forward_flops = 2.0 * static_cast<double>(kOut * kOutPlane * kOutPlane * in * kernel * kernel);
    return spec;
  };
  const auto inner_product = [](std::int64_t in, std::int64_t out) {
    LayerSpec spec;
    spec.name = "inner product (reference)";
    spec.kind = LayerKind::kInnerProduct;
    spec.inputs = {"reference input"};
    spec.input = Shape{in, 1, 1};
    spec.output = Shape{out, 1, 1};
    spec.parameters = in * out + out;
    spec.forward_flops = 2.0 * static_cast<double>(in * out);
    return spec;
  };
  const auto backend = nn::make_backend("cpu", {.threads = 1});
  const auto every_core = nn::make_backend("cpu", {.threads = cores});
  // Forward, backward-data and backward-weights seconds: the backward with and without the input's gradient.
  const auto passes = [&](const LayerSpec& spec, std::int64_t batch) {
    LayerRun run{.repetitions = 200, .warmup = 20};
    const auto both = time_layer(*backend, spec, batch, run);
    run.input_gradient = false;
    const auto weights = time_layer(*backend, spec, batch, run);
    if (!both || !weights) throw InternalError("no kernel for the reference layer " + spec.name);
    return std::array<double, 3>{both->forward, both->backward - weights->backward, weights->backward};
  };
  const auto sum = [](const std::array<double, 3>& seconds) { return seconds[0] + seconds[1] + seconds[2]; };
  // The share of the cores' speed a reference gets on all of them (1 on one core), against its passes on one.
  const auto parallel_share = [&](const LayerSpec& spec, std::int64_t batch, const std::array<double, 3>& one_core) {
    if (cores < 2) return 1.0;
    const auto all = time_layer(*every_core, spec, batch, {.repetitions = 200, .warmup = 20});
    return std::clamp(sum(one_core) / all->both() / cores, 0.05, 1.0);
  };
  const LayerSpec twin = convolution(kPatch, kOutPlane, 1);
  const LayerSpec blas = inner_product(kPatch, kOut);
  const std::array<double, 3> lowered_s = passes(convolution(kIn, kPlane, kKernel), kImages);
  const std::array<double, 3> twin_s = passes(twin, kImages);
  const std::array<double, 3> blas_s = passes(blas, kPixels);
  constexpr std::int64_t kPackIn = 1000;
  constexpr std::int64_t kPackOut = 300;
  const double pack_s =
      time_layer(*backend, inner_product(kPackIn, kPackOut), 1, {.repetitions = 200, .warmup = 20})->forward;
  const double pack_Bps = 4.0 * static_cast<double>(kPackIn + kPackIn * kPackOut) / std::max(pack_s - fixed_s, fixed_s);
  // Each of the three GEMMs packs both its operands (core/layer_kernels.hpp's shapes): two of rows x inputs, of
  // weights and of rows x outputs in all.
  const double blas_packed_bytes = 4.0 * 2 * static_cast<double>(kPixels * kPatch + kPatch * kOut + kPixels * kOut);
  const auto per_element = [&](std::size_t pass) {
    return std::max(0.0, lowered_s[pass] - twin_s[pass]) / static_cast<double>(kPatch * kPixels);
  };
  ReferenceGemms gemms;
  gemms.convolution = {.parallel_efficiency = parallel_share(twin, kImages, twin_s),
                       .forward_lowering_s = per_element(0),
                       .backward_data_lowering_s = per_element(1),
                       .backward_weights_lowering_s = per_element(2)};
  const double blas_gemm_s = std::max(sum(blas_s) - blas_packed_bytes / pack_Bps, 0.5 * sum(blas_s));
  gemms.inner_product = {.one_thread_up_to = kOpenBlasOneThreadUpTo,
                         .packs_operands = true,
                         .pack_Bps = pack_Bps,
                         .relative_efficiency = sum(twin_s) / blas_gemm_s,
                         .parallel_efficiency = parallel_share(blas, kPixels, blas_s)};
  return gemms;
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

CacheSize cache_size(int level) {
  if (const std::size_t bytes = sysfs_cache_bytes(level); bytes > 0) return {bytes, "sysfs"};
  // A virtual machine may list no caches in sysfs; glibc reads the sizes off CPUID, which the hypervisor passes on.
  const long cpuid = level == 2 ? sysconf(_SC_LEVEL2_CACHE_SIZE) : level == 3 ? sysconf(_SC_LEVEL3_CACHE_SIZE) : 0;
  if (cpuid > 0) return {static_cast<std::size_t>(cpuid), "CPUID (glibc sysconf)"};
  return {};
}

std::size_t cache_bytes(int level) { return cache_size(level).bytes; }

std::size_t sysfs_cache_bytes(int level) {
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
  const CacheSize l2_size = cache_size(2);
  const CacheSize l3_size = cache_size(3);
  if (l2_size.bytes == 0 || l3_size.bytes == 0) {
    throw UnavailableError("neither sysfs (/sys/devices/system/cpu) nor CPUID gives the L2 and L3 cache sizes");
  }
  const std::size_t l2 = l2_size.bytes;
  const std::size_t l3 = l3_size.bytes;
  const CorePeak core = derive_core_peak(facts);
  const int cores = std::max(facts.physical_cores, 1);
  const double running_Hz = running_clock_Hz(cores);
  const std::string measured = "measured by dsgd bench layers on " + where + ": ";

  CpuKernelDescription description;
  platforms::Cpu& cpu = description.cpu;
  cpu.model = facts.model;
  cpu.cores_per_socket = cores;
  cpu.clock_Hz = running_Hz > 0 ? running_Hz : facts.clock_Hz;
  cpu.vector_width_bits = core.vector_width_bits;
  cpu.sp_flops_per_cycle_per_core = core.sp_flops_per_cycle;
  cpu.peak_flops = cores * cpu.clock_Hz * core.sp_flops_per_cycle;
  cpu.sources = {{"sockets", "/proc/cpuinfo"},
                 {"cores_per_socket", "/proc/cpuinfo: physical cores"},
                 {"clock_Hz", running_Hz > 0 ? measured +
                                                   "dependent integer adds, one per cycle, on every core at "
                                                   "once (/proc/cpuinfo's cpu MHz: " +
                                                   fixed(facts.clock_Hz / 1e9, 2) + " GHz)"
                                             : std::string("/proc/cpuinfo: cpu MHz")},
                 {"vector_width_bits", core.width_source},
                 {"sp_flops_per_cycle_per_core", core.per_cycle_source},
                 {"peak_flops", "derived: cores x clock x FLOP/cycle"}};

  platforms::KernelModel model;
  model.parallel_units = cores;
  // No padded blocks: the GEMMs' edges cost about their own work here (docs/simulation.md "Kernels by shape").
  model.tile_m = 1;
  model.tile_n = 1;
  const int lanes = std::max(1, core.vector_width_bits / 32);
  model.fixed_s = smallest_kernel_seconds(1);
  model.sync_s_per_unit = std::max(0.0, (smallest_kernel_seconds(cores) - model.fixed_s) / cores);
  const ReferenceGemms gemms = reference_gemms(model.fixed_s, cores);
  model.gemm_library["inner_product"] = gemms.inner_product;
  model.gemm_library["convolution"] = gemms.convolution;
  for (const LayerKind kind : {LayerKind::kReLU, LayerKind::kMaxPool, LayerKind::kSoftmax}) {
    model.streaming[std::string(to_string(kind))] = streaming_rate(kind, cores, model.fixed_s, lanes);
  }
  platforms::Memory cache;
  cache.name = "L2";
  cache.size_bytes = static_cast<double>(l2) * cores;
  cache.bandwidth_Bps = copy_rate_Bps(l2 / 4, cores);
  cache.sources = {{"size_bytes", l2_size.source + ": cpu0's L2 x " + std::to_string(cores) + " cores"},
                   {"bandwidth_Bps", measured + "memcpy within half of each core's L2, every core"}};
  model.cache = cache;
  model.efficiency = 1;
  model.sources = {
      {"parallel_units", "/proc/cpuinfo: physical cores"},
      {"tile",
       "1 x 1: OpenBLAS computes a GEMM's last rows and columns on what is there (one core, 1568 x 153 products: "
       "33 columns took 1.14 times 32's time, 17 columns 1.21 times 16's); oneDNN pads to blocks of 16 along "
       "the output plane of a lowered convolution, which it runs one image at a time (LeNet's planes, 8 x 8 and "
       "24 x 24, are whole blocks)"},
      {"fixed_s", measured + "median of a ReLU over one float on one thread (the back end's dispatch)"},
      {"sync_s_per_unit", measured + "the back end's ReLU over one float on every core less on one thread, per core"},
      {"streaming",
       measured + "the back end's relu and max_pool (4 images of L x 16 x 16 and L x 28 x 28, L the "
                  "lanes of a register) and its softmax loss (32 rows of 100 against 32 of 2: the rate "
                  "and the work per row; fixed_s: one row of 2; max_pool's: its smallest layer), one "
                  "thread: the bytes layer_kernels counts over the median times of forward and "
                  "backward beyond the dispatch; padded_share and tail_s from L + 1 channels on planes 28 and 8 wide "
                  "against L; threaded "
                  "where 16 times as much took under 0.75 of one core's time on every core, at its "
                  "speed-up over the cores"},
      {"gemm_library",
       "the back end's inner products call OpenBLAS's sgemm (core/nn/cpu/inner_product.cpp), which "
       "packs both operands (GotoBLAS's algorithm) and, in 0.3.21, runs up to SMP_THRESHOLD_MIN 65536 x "
       "GEMM_MULTITHREAD_THRESHOLD 4 multiply-adds on one thread, more on every thread (interface/gemm.c); its "
       "convolutions on plain layouts "
       "are oneDNN's im2col / col2im + GEMM, " +
           measured +
           "lowering_s per column element of a 3x3 convolution of 17 to 33 channels on 16 x 16 planes beyond "
           "its 1x1 twin of the same GEMMs, 8 images, one thread, each pass; the inner products' "
           "relative_efficiency: that twin's time over an inner product's of the same GEMMs beyond its packing; "
           "pack_Bps: the operands of an inner product of 1000 to 300 on one row over its time; "
           "parallel_efficiency: the twin's and that inner product's speed-up on every core, per core"},
      {"efficiency", "1 until fitted"}};
  cpu.kernels = model;

  platforms::Memory l3_memory;
  l3_memory.name = "L3";
  l3_memory.size_bytes = static_cast<double>(l3);
  l3_memory.bandwidth_Bps = copy_rate_Bps(l3 / 4 / static_cast<std::size_t>(cores), cores);
  l3_memory.sources = {{"size_bytes", l3_size.source + ": cpu0's L3"},
                       {"bandwidth_Bps", measured + "memcpy within half of the L3, every core"}};
  platforms::Memory dram;
  dram.name = "DRAM";
  dram.bandwidth_Bps = stream_triad(cores).bytes_per_s;
  dram.sources = {{"bandwidth_Bps", measured + "STREAM triad on every core"}};
  description.memories = {l3_memory, dram};
  return description;
}

}  // namespace dsgd::measure
