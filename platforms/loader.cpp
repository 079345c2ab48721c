#include "platforms/loader.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"

namespace dsgd::platforms {

namespace {

// A platform's peak FLOP/s must agree with cores x clock x FLOP/cycle within this fraction: a typo in any of
// them (a missing factor 2 for FMA, GHz written as MHz) then shows up as an error rather than a wrong prediction.
constexpr double kPeakTolerance = 0.01;

// Bounds on every latency and bandwidth: far outside any real machine (a WAN hop is under 1 s, a link between 1 kB/s
// and 1 PB/s), so a value beyond them is a typo or hostile input, which would otherwise overflow the simulation's
// arithmetic or stall it for simulated years.
constexpr double kMaxLatency_s = 1.0;
constexpr double kMinBandwidth_Bps = 1e3;
constexpr double kMaxBandwidth_Bps = 1e15;
// A processor's peak: from a small core (1 GFLOP/s) to a whole node of the largest accelerators (100 PFLOP/s).
constexpr double kMinPeak_flops = 1e9;
constexpr double kMaxPeak_flops = 1e17;

// The unit slips that would put `value`, written in a prefixed unit, within [low, high]: "GFLOP/s (4.947e11) or
// TFLOP/s (4.947e14)"; empty where none would.
std::string unit_slips(double value, double low, double high, const std::string& unit) {
  constexpr std::pair<const char*, double> kPrefixes[] = {{"n", 1e-9}, {"\u00b5", 1e-6}, {"m", 1e-3}, {"k", 1e3},
                                                          {"M", 1e6},  {"G", 1e9},       {"T", 1e12}, {"P", 1e15}};
  std::vector<std::string> slips;
  for (const auto& [prefix, factor] : kPrefixes) {
    const double meant = value * factor;
    if (meant >= low && meant <= high) slips.push_back(prefix + unit + " (" + significant(meant, 4) + ")");
  }
  if (slips.empty()) return "";
  return "; written in " + join(slips, " or ") + "?";
}

// A latency in [0, kMaxLatency_s] (0 only where `zero_allowed`: a fitted segment, an on-node fabric).
double latency(const JsonView& view, bool zero_allowed) {
  const double value = zero_allowed ? view.nonnegative() : view.positive();
  if (value > kMaxLatency_s) {
    view.fail("expected a latency in seconds, at most 1 s, got " + significant(value) + " s" +
              unit_slips(value, 1e-9, kMaxLatency_s / 10, "s"));
  }
  return value;
}

double bandwidth(const JsonView& view) {
  const double value = view.positive();
  if (value < kMinBandwidth_Bps || value > kMaxBandwidth_Bps) {
    view.fail("expected a bandwidth in bytes/s, between 1e3 and 1e15, got " + significant(value) +
              unit_slips(value, 1e6, kMaxBandwidth_Bps, "B/s"));
  }
  return value;
}

double peak(const JsonView& view) {
  const double value = view.positive();
  if (value < kMinPeak_flops || value > kMaxPeak_flops) {
    view.fail("expected a peak in FLOP/s, between 1e9 and 1e17, got " + significant(value) +
              unit_slips(value, kMinPeak_flops, kMaxPeak_flops, "FLOP/s"));
  }
  return value;
}

std::string show(double value) { return significant(value); }

// --- sources --------------------------------------------------------------------------------------------------

bool holds_number(const Json& value) {
  if (value.is_number()) return true;
  if (value.is_array()) {
    for (const auto& item : value) {
      if (holds_number(item)) return true;
    }
  }
  return false;
}

// The `sources` map of `object`, checked: every member that is a number (or an array holding numbers) has a
// non-empty source, and every source names a member. Call after the members themselves were read, so that a
// missing or mistyped field is reported as such rather than as a source problem.
//
// `covered` members need no source of their own: a parent's source covers them (an NVLink pair's devices are
// cited once for the whole list of pairs).
Sources take_sources(const JsonView& object, std::initializer_list<std::string_view> covered = {}) {
  Sources sources;
  std::set<std::string> members;
  for (const auto& key : object.keys()) {
    if (key != "sources") members.insert(key);
  }
  if (const auto listed = object.find("sources")) {
    for (const auto& key : listed->keys()) {
      const JsonView entry = listed->at(key);
      if (!members.contains(key)) {
        if (object.reported(key)) continue;  // its field is missing, and that is already said
        entry.fail("source for '" + key + "', which is not a field of " + object.path() +
                   "; sources are keyed by the name of a sibling field");
      }
      std::string text = entry.string();
      if (text.empty()) entry.fail("expected a non-empty source (where the number comes from), got \"\"");
      sources.emplace(key, std::move(text));
    }
  }
  for (const auto& key : members) {
    if (std::find(covered.begin(), covered.end(), key) != covered.end() || object.reported(key)) continue;
    if (holds_number(object.raw().at(key)) && !sources.contains(key)) {
      std::string what = "number without a source; every number needs an entry \"" + key + "\" in ";
      what += object.path() == "/" ? "/sources" : object.path() + "/sources";
      what += " saying where it comes from (docs/platform-schema.md)";
      object.at(key).fail(what);
    }
  }
  return sources;
}

// --- scalars --------------------------------------------------------------------------------------------------

int checked_int(const JsonView& view, std::int64_t value) {
  if (value > INT_MAX) {
    view.fail("expected an integer of at most " + std::to_string(INT_MAX) + ", got " + std::to_string(value));
  }
  return static_cast<int>(value);
}

int positive_int(const JsonView& view) { return checked_int(view, view.positive_integer()); }

int nonnegative_int(const JsonView& view) {
  const std::int64_t value = view.integer();
  if (value < 0) view.fail("expected a non-negative integer, got " + std::to_string(value));
  return checked_int(view, value);
}

std::vector<int> positive_int_array(const JsonView& view) {
  std::vector<int> values;
  const std::size_t size = view.size();
  if (size == 0) view.fail("expected a non-empty array of positive integers, got []");
  for (std::size_t i = 0; i < size; ++i) values.push_back(positive_int(view.at(i)));
  return values;
}

std::string nonempty_string(const JsonView& view) {
  std::string value = view.string();
  if (value.empty()) view.fail("expected a non-empty string, got \"\"");
  return value;
}

// Names end up in file names, command lines and SimGrid host names: keep them to a safe alphabet.
std::string entry_name(const JsonView& view) {
  std::string value = nonempty_string(view);
  for (char c : value) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) view.fail("expected a name of letters, digits, '-', '_' and '.', got \"" + value + "\"");
  }
  return value;
}

template <typename Enum>
Enum enum_value(const JsonView& view, const std::vector<std::string>& names) {
  const std::string value = view.one_of(names);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == value) return static_cast<Enum>(i);
  }
  return static_cast<Enum>(0);  // unreachable: one_of threw
}

void expect_schema(const JsonView& root, std::string_view expected) {
  const JsonView schema = root.at("schema");
  const std::string value = schema.string();
  if (value == expected) return;
  if (value == kLinkSchema) schema.fail("this is a link description (schema \"dsgd-link/1\"), not a platform");
  if (value == kPlatformSchema) schema.fail("this is a platform description, not a link (schema \"dsgd-link/1\")");
  schema.fail("expected \"" + std::string(expected) + "\", got \"" + value + "\"");
}

// --- node parts -----------------------------------------------------------------------------------------------

// Sets `out` from `parse()`. Gathering (JsonView::attempt), a failure is recorded and the next field is still
// checked, so a file's errors come in one run (docs/platform-schema.md). Returns whether it parsed.
template <typename T, typename Parse>
bool field(const JsonView& view, T& out, Parse&& parse) {
  return view.attempt([&] { out = parse(); });
}

Memory parse_memory(const JsonView& view) {
  view.allow_only({"name", "size_bytes", "bandwidth_Bps", "sources"});
  Memory memory;
  field(view, memory.name, [&] { return nonempty_string(view.at("name")); });
  if (const auto size = view.find("size_bytes")) field(view, memory.size_bytes, [&] { return size->positive(); });
  field(view, memory.bandwidth_Bps, [&] { return bandwidth(view.at("bandwidth_Bps")); });
  field(view, memory.sources, [&] { return take_sources(view); });
  return memory;
}

KernelEfficiency parse_efficiency(const JsonView& view) {
  // Kept in step with kernel_class_names() (a test loads every class).
  view.allow_only({"conv", "gemm", "elementwise", "copy", "sources"});
  KernelEfficiency efficiency;
  for (const auto& name : kernel_class_names()) {
    const auto value = view.find(name);
    if (!value) continue;
    const double fraction = value->positive();
    if (fraction > 1) value->fail("expected a fraction of peak in (0, 1], got " + show(fraction));
    efficiency.by_class[name] = fraction;
  }
  efficiency.sources = take_sources(view);
  return efficiency;
}

// The model zoo's layer kind names ("relu", "max_pool", ...), which `streaming_Bps` is keyed by.
std::vector<std::string> layer_kind_names() {
  std::vector<std::string> names;
  for (int kind = 0;; ++kind) {
    const std::string_view name = to_string(static_cast<LayerKind>(kind));
    if (name == "unknown") return names;
    names.emplace_back(name);
  }
}

// A member keyed by a layer kind must be named by one.
void check_layer_kind(const JsonView& member, const std::string& kind) {
  const std::vector<std::string> kinds = layer_kind_names();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    member.fail("expected a layer kind (" + join(kinds, ", ") + "), got '" + kind + "'");
  }
}

KernelModel parse_kernel_model(const JsonView& view) {
  view.allow_only({"parallel_units", "tile", "tiles", "tile_k_overhead", "fixed_s", "sync_s_per_unit", "cache",
                   "winograd_3x3", "streaming", "gemm_library", "efficiency", "sources"});
  KernelModel model;
  model.parallel_units = positive_int(view.at("parallel_units"));
  const JsonView tile = view.at("tile");
  if (tile.size() != 2) tile.fail("expected [m, n]: the output tile one unit computes at a time");
  model.tile_m = positive_int(tile.at(std::size_t{0}));
  model.tile_n = positive_int(tile.at(std::size_t{1}));
  if (const auto tiles = view.find("tiles")) {
    for (std::size_t i = 0; i < tiles->size(); ++i) {
      const JsonView other = tiles->at(i);
      if (other.size() != 2) other.fail("expected [m, n]: an output tile the library can also choose");
      model.tiles.push_back({positive_int(other.at(std::size_t{0})), positive_int(other.at(std::size_t{1}))});
    }
  }
  if (const auto overhead = view.find("tile_k_overhead")) model.tile_k_overhead = overhead->nonnegative();
  if (const auto fixed = view.find("fixed_s")) model.fixed_s = fixed->nonnegative();
  if (const auto sync = view.find("sync_s_per_unit")) model.sync_s_per_unit = sync->nonnegative();
  if (const auto winograd = view.find("winograd_3x3")) {
    for (std::size_t i = 0; i < winograd->size(); ++i) {
      const int output_tile = positive_int(winograd->at(i));
      if (output_tile > 6) {
        winograd->at(i).fail("expected an output tile of at most 6 (F(6x6, 3x3)), got " + std::to_string(output_tile));
      }
      model.winograd_3x3_tiles.push_back(output_tile);
    }
  }
  if (const auto streaming = view.find("streaming")) {
    for (const std::string& kind : streaming->keys()) {
      const JsonView rate = streaming->at(kind);
      check_layer_kind(rate, kind);
      rate.allow_only({"forward_Bps", "backward_Bps", "fixed_s", "threaded", "parallel_efficiency", "per_image_s",
                       "channel_block", "padded_share", "tail_s"});
      StreamingRate& out = model.streaming[kind];
      out.forward_Bps = rate.at("forward_Bps").positive();
      out.backward_Bps = rate.at("backward_Bps").positive();
      if (const auto fixed = rate.find("fixed_s")) out.fixed_s = fixed->nonnegative();
      if (const auto threaded = rate.find("threaded")) out.threaded = threaded->boolean();
      if (const auto efficiency = rate.find("parallel_efficiency")) {
        out.parallel_efficiency = efficiency->positive();
        if (out.parallel_efficiency > 1) efficiency->fail("expected a share of the units' speed in (0, 1]");
      }
      if (const auto per_image = rate.find("per_image_s")) out.per_image_s = per_image->nonnegative();
      if (const auto block = rate.find("channel_block")) out.channel_block = block->positive_integer();
      // [forward, backward] values of a blocked library, each at least 0 and at most `most`.
      const auto per_pass = [&](std::string_view key, const std::string& what, const std::string& unit, double most,
                                double& forward, double& backward) {
        const auto pair = rate.find(key);
        if (!pair) return;
        if (out.channel_block == 0) pair->fail(what + " needs the channel_block it pads to");
        if (pair->size() != 2) pair->fail("expected [forward, backward] " + unit);
        for (std::size_t pass = 0; pass < 2; ++pass) {
          const double value = pair->at(pass).nonnegative();
          if (value > most) pair->at(pass).fail("expected a share of the work in [0, 1]");
          (pass == 0 ? forward : backward) = value;
        }
      };
      per_pass("padded_share", "a padded share", "shares of the work", 1, out.forward_padded_share,
               out.backward_padded_share);
      per_pass("tail_s", "a tail's cost", "seconds per image", std::numeric_limits<double>::infinity(),
               out.forward_tail_s, out.backward_tail_s);
    }
  }
  if (const auto libraries = view.find("gemm_library")) {
    for (const std::string& kind : libraries->keys()) {
      const JsonView library = libraries->at(kind);
      check_layer_kind(library, kind);
      library.allow_only({"one_thread_up_to", "packs_operands", "pack_Bps", "relative_efficiency",
                          "parallel_efficiency", "lowering_s"});
      GemmLibrary& out = model.gemm_library[kind];
      if (const auto work = library.find("one_thread_up_to")) out.one_thread_up_to = work->nonnegative();
      if (const auto packs = library.find("packs_operands")) out.packs_operands = packs->boolean();
      if (const auto rate = library.find("pack_Bps")) {
        if (!out.packs_operands) rate->fail("a packing rate needs packs_operands true");
        out.pack_Bps = rate->positive();
      }
      if (const auto relative = library.find("relative_efficiency")) out.relative_efficiency = relative->positive();
      if (const auto parallel = library.find("parallel_efficiency")) {
        out.parallel_efficiency = parallel->positive();
        if (out.parallel_efficiency > 1) parallel->fail("expected a share of the units' speed in (0, 1]");
      }
      if (const auto lowering = library.find("lowering_s")) {
        if (kind != "convolution") lowering->fail("only a convolution is lowered to a GEMM");
        if (lowering->size() != 3) {
          lowering->fail("expected [forward, backward-data, backward-weights] seconds per column element");
        }
        out.forward_lowering_s = lowering->at(std::size_t{0}).nonnegative();
        out.backward_data_lowering_s = lowering->at(std::size_t{1}).nonnegative();
        out.backward_weights_lowering_s = lowering->at(std::size_t{2}).nonnegative();
      }
    }
  }
  if (const auto cache = view.find("cache")) {
    model.cache = parse_memory(*cache);
    if (!model.cache->size_bytes) cache->fail("a cache needs its size_bytes");
  }
  const JsonView efficiency = view.at("efficiency");
  model.efficiency = efficiency.positive();
  if (model.efficiency > 1) efficiency.fail("expected a fraction of peak in (0, 1], got " + show(model.efficiency));
  model.sources = take_sources(view);
  return model;
}

Cpu parse_cpu(const JsonView& view) {
  view.allow_only({"model", "sockets", "cores_per_socket", "clock_Hz", "vector_width_bits",
                   "sp_flops_per_cycle_per_core", "peak_flops", "kernel_efficiency", "kernels", "kernel_profile",
                   "datagram_Bps", "sources"});
  Cpu cpu;
  field(view, cpu.model, [&] { return nonempty_string(view.at("model")); });
  // `&`, not `&&`: both fields are checked whatever the first gives.
  bool cores = field(view, cpu.sockets, [&] { return positive_int(view.at("sockets")); }) &
               field(view, cpu.cores_per_socket, [&] { return positive_int(view.at("cores_per_socket")); });
  // Bounded so that cores() cannot overflow (2147483647 per socket made a negative peak).
  constexpr std::int64_t kMostCoresPerNode = 1 << 20;
  if (cores && std::int64_t{cpu.sockets} * cpu.cores_per_socket > kMostCoresPerNode) {
    cores = false;  // the peak is not checked against that count
    view.attempt([&] {
      view.at("cores_per_socket")
          .fail("sockets x cores_per_socket = " + std::to_string(std::int64_t{cpu.sockets} * cpu.cores_per_socket) +
                " cores per node, more than " + std::to_string(kMostCoresPerNode));
    });
  }
  const bool clock = field(view, cpu.clock_Hz, [&] { return view.at("clock_Hz").positive(); });
  field(view, cpu.vector_width_bits, [&] { return positive_int(view.at("vector_width_bits")); });
  const bool per_cycle =
      field(view, cpu.sp_flops_per_cycle_per_core, [&] { return view.at("sp_flops_per_cycle_per_core").positive(); });
  view.attempt([&] {
    const JsonView peak = view.at("peak_flops");
    cpu.peak_flops = platforms::peak(peak);
    const double expected = cpu.cores() * cpu.clock_Hz * cpu.sp_flops_per_cycle_per_core;
    if (cores && clock && per_cycle && std::abs(cpu.peak_flops - expected) > kPeakTolerance * expected) {
      peak.fail(show(cpu.peak_flops) + " disagrees by more than 1% with sockets x cores_per_socket x clock_Hz x " +
                "sp_flops_per_cycle_per_core = " + show(expected));
    }
  });
  if (const auto efficiency = view.find("kernel_efficiency")) {
    field(view, cpu.efficiency, [&] { return parse_efficiency(*efficiency); });
  }
  if (const auto kernels = view.find("kernels")) field(view, cpu.kernels, [&] { return parse_kernel_model(*kernels); });
  if (const auto profile = view.find("kernel_profile")) {
    field(view, cpu.profile, [&] { return std::make_shared<const KernelProfile>(parse_kernel_profile(*profile)); });
  }
  if (const auto datagram = view.find("datagram_Bps")) {
    field(view, cpu.datagram_Bps, [&] { return datagram->positive(); });
  }
  field(view, cpu.sources, [&] { return take_sources(view); });
  return cpu;
}

DeviceGroup parse_device_group(const JsonView& view) {
  view.allow_only(
      {"model", "count", "peak_flops", "memory", "kernel_efficiency", "kernels", "kernel_profile", "sources"});
  DeviceGroup group;
  field(view, group.model, [&] { return nonempty_string(view.at("model")); });
  field(view, group.count, [&] { return positive_int(view.at("count")); });
  field(view, group.peak_flops, [&] { return peak(view.at("peak_flops")); });
  field(view, group.memory, [&] { return parse_memory(view.at("memory")); });
  if (const auto efficiency = view.find("kernel_efficiency")) {
    field(view, group.efficiency, [&] { return parse_efficiency(*efficiency); });
  }
  if (const auto kernels = view.find("kernels")) {
    field(view, group.kernels, [&] { return parse_kernel_model(*kernels); });
  }
  if (const auto profile = view.find("kernel_profile")) {
    field(view, group.profile, [&] { return std::make_shared<const KernelProfile>(parse_kernel_profile(*profile)); });
  }
  field(view, group.sources, [&] { return take_sources(view); });
  return group;
}

std::vector<MeshStop> parse_stops(const JsonView& view, const KnlMesh& mesh) {
  std::vector<MeshStop> stops;
  for (std::size_t i = 0; i < view.size(); ++i) {
    const JsonView pair = view.at(i);
    if (pair.size() != 2) pair.fail("expected an [x, y] pair of mesh coordinates");
    const MeshStop stop{nonnegative_int(pair.at(std::size_t{0})), nonnegative_int(pair.at(std::size_t{1}))};
    if (stop.x >= mesh.columns || stop.y >= mesh.rows) {
      pair.fail("stop [" + std::to_string(stop.x) + ", " + std::to_string(stop.y) + "] is outside the " +
                std::to_string(mesh.columns) + " x " + std::to_string(mesh.rows) + " mesh");
    }
    stops.push_back(stop);
  }
  return stops;
}

KnlMesh parse_knl_mesh(const JsonView& view, const Cpu& cpu) {
  view.allow_only({"kind", "columns", "rows", "physical_tiles", "active_tiles", "cores_per_tile", "controllers",
                   "cluster_mode", "mcdram_mode", "link_bandwidth_Bps", "hop_latency_s", "sources"});
  KnlMesh mesh;
  if (const auto value = view.find("link_bandwidth_Bps")) mesh.link_bandwidth_Bps = bandwidth(*value);
  if (const auto value = view.find("hop_latency_s")) mesh.hop_latency_s = latency(*value, false);
  mesh.columns = positive_int(view.at("columns"));
  mesh.rows = positive_int(view.at("rows"));

  const JsonView controllers = view.at("controllers");
  controllers.allow_only({"mcdram", "ddr4", "sources"});
  mesh.mcdram_controllers = parse_stops(controllers.at("mcdram"), mesh);
  mesh.ddr_controllers = parse_stops(controllers.at("ddr4"), mesh);
  mesh.controller_sources = take_sources(controllers);
  std::set<std::pair<int, int>> taken;
  for (const auto& stop : mesh.mcdram_controllers) taken.insert({stop.x, stop.y});
  for (const auto& stop : mesh.ddr_controllers) taken.insert({stop.x, stop.y});
  const std::size_t controller_count = mesh.mcdram_controllers.size() + mesh.ddr_controllers.size();
  if (taken.size() != controller_count) controllers.fail("two memory controllers share a mesh stop");

  const JsonView physical = view.at("physical_tiles");
  mesh.physical_tiles = positive_int(physical);
  const int free_stops = mesh.columns * mesh.rows - static_cast<int>(controller_count);
  if (mesh.physical_tiles > free_stops) {
    physical.fail(std::to_string(mesh.physical_tiles) + " tiles do not fit in the " + std::to_string(free_stops) +
                  " mesh stops left by the memory controllers");
  }
  const JsonView active = view.at("active_tiles");
  mesh.active_tiles = positive_int(active);
  if (mesh.active_tiles > mesh.physical_tiles) {
    active.fail(std::to_string(mesh.active_tiles) + " active tiles exceed the " + std::to_string(mesh.physical_tiles) +
                " physical tiles");
  }
  mesh.cores_per_tile = positive_int(view.at("cores_per_tile"));
  if (mesh.active_tiles * mesh.cores_per_tile != cpu.cores()) {
    active.fail("active_tiles x cores_per_tile = " + std::to_string(mesh.active_tiles * mesh.cores_per_tile) +
                " does not match the CPU's " + std::to_string(cpu.cores()) + " cores");
  }

  const JsonView cluster_mode = view.at("cluster_mode");
  mesh.cluster_mode = enum_value<ClusterMode>(cluster_mode, cluster_mode_names());
  // Quadrant and SNC-4 tie each quarter of the chip to its own MCDRAM controllers (seed 000 sec. 2.1).
  if (mesh.cluster_mode != ClusterMode::kAll2All && mesh.mcdram_controllers.size() % 4 != 0) {
    cluster_mode.fail("'" + std::string(to_string(mesh.cluster_mode)) + "' splits the chip into 4 quadrants, but " +
                      std::to_string(mesh.mcdram_controllers.size()) +
                      " MCDRAM controllers do not split evenly into 4");
  }
  mesh.mcdram_mode = enum_value<McdramMode>(view.at("mcdram_mode"), mcdram_mode_names());
  mesh.sources = take_sources(view);
  return mesh;
}

PcieLink parse_pcie_link(const JsonView& view) {
  view.allow_only({"lanes", "bandwidth_Bps", "sources"});
  PcieLink link;
  link.lanes = positive_int(view.at("lanes"));
  link.bandwidth_Bps = bandwidth(view.at("bandwidth_Bps"));
  link.sources = take_sources(view);
  return link;
}

// Devices hanging from one attachment point (the host or a switch): `count` of them, each through `link`.
std::optional<PcieLink> parse_device_attachment(const JsonView& parent, std::string_view count_field,
                                                std::string_view link_field, int& count) {
  count = 0;
  if (const auto devices = parent.find(count_field)) count = nonnegative_int(*devices);
  const auto link = parent.find(link_field);
  if (count > 0 && !link) {
    parent.fail("missing required field '" + std::string(link_field) + "' (needed when " + std::string(count_field) +
                " > 0)");
  }
  if (count == 0 && link) {
    link->fail("a device link without devices; set " + std::string(count_field) + " or remove it");
  }
  if (!link) return std::nullopt;
  return parse_pcie_link(*link);
}

PcieTree parse_pcie_tree(const JsonView& view, int devices_per_node) {
  view.allow_only({"kind", "host_lanes", "host_devices", "host_device_link", "switches", "sources"});
  PcieTree tree;
  if (const auto lanes = view.find("host_lanes")) tree.host_lanes = positive_int(*lanes);
  tree.host_device_link = parse_device_attachment(view, "host_devices", "host_device_link", tree.host_devices);

  const JsonView switches = view.at("switches");
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < switches.size(); ++i) {
    const JsonView item = switches.at(i);
    item.allow_only({"name", "model", "parent", "lanes", "ports", "uplink", "devices", "device_link", "sources"});
    PcieSwitch sw;
    const JsonView name = item.at("name");
    sw.name = entry_name(name);
    if (sw.name == "host" || index_of.contains(sw.name)) {
      name.fail("switch name '" + sw.name + "' is " + (sw.name == "host" ? "reserved for the root complex" : "taken"));
    }
    sw.model = nonempty_string(item.at("model"));
    const JsonView parent = item.at("parent");
    sw.parent = parent.string();
    // Parents must be listed first: that keeps the tree acyclic without a separate check.
    if (sw.parent != "host" && !index_of.contains(sw.parent)) {
      parent.fail("unknown parent '" + sw.parent + "'; expected \"host\" or a switch listed before this one");
    }
    sw.lanes = positive_int(item.at("lanes"));
    if (const auto ports = item.find("ports")) sw.ports = positive_int(*ports);
    sw.uplink = parse_pcie_link(item.at("uplink"));
    sw.device_link = parse_device_attachment(item, "devices", "device_link", sw.devices);
    sw.sources = take_sources(item);
    index_of.emplace(sw.name, i);
    tree.switches.push_back(std::move(sw));
  }

  // Lane and port budgets: what hangs below a switch (plus its uplink) must fit in its lanes and ports.
  for (std::size_t i = 0; i < tree.switches.size(); ++i) {
    const PcieSwitch& sw = tree.switches[i];
    int lanes = sw.uplink.lanes + (sw.device_link ? sw.devices * sw.device_link->lanes : 0);
    int ports = 1 + sw.devices;
    for (const auto& child : tree.switches) {
      if (child.parent == sw.name) {
        lanes += child.uplink.lanes;
        ports += 1;
      }
    }
    const JsonView item = switches.at(i);
    if (lanes > sw.lanes) {
      item.at("lanes").fail("switch '" + sw.name + "' needs " + std::to_string(lanes) +
                            " lanes (uplink + devices + child switches) but has " + std::to_string(sw.lanes));
    }
    if (sw.ports && ports > *sw.ports) {
      item.at("ports").fail("switch '" + sw.name + "' needs " + std::to_string(ports) +
                            " ports (uplink + devices + child switches) but has " + std::to_string(*sw.ports));
    }
  }
  if (tree.host_lanes) {
    int lanes = tree.host_device_link ? tree.host_devices * tree.host_device_link->lanes : 0;
    for (const auto& sw : tree.switches) {
      if (sw.parent == "host") lanes += sw.uplink.lanes;
    }
    if (lanes > *tree.host_lanes) {
      view.at("host_lanes")
          .fail("the root complex needs " + std::to_string(lanes) + " lanes (host devices + switch uplinks) but has " +
                std::to_string(*tree.host_lanes));
    }
  }

  int attached = tree.host_devices;
  for (const auto& sw : tree.switches) attached += sw.devices;
  if (attached != devices_per_node) {
    view.fail("the PCIe tree attaches " + std::to_string(attached) + " devices but the node has " +
              std::to_string(devices_per_node) + " (sum of /nodes/devices/*/count)");
  }
  tree.sources = take_sources(view);
  return tree;
}

// --- devices' links and NICs ------------------------------------------------------------------------------------

// A device of the node (numbered in the order of /nodes/devices).
int device_index(const JsonView& view, int devices) {
  const std::int64_t index = view.integer();
  if (index < 0 || index >= devices) {
    view.fail("expected a device from 0 to " + std::to_string(devices - 1) +
              " (the node's devices, numbered in the order of /nodes/devices), got " + std::to_string(index));
  }
  return static_cast<int>(index);
}

void expect_devices(const JsonView& view, const Nodes& nodes, std::string_view what) {
  const int devices = nodes.devices_per_node();
  if (devices < 2) {
    view.fail(std::string(what) + " joins a node's devices, but these nodes have " + std::to_string(devices) +
              " (sum of /nodes/devices/*/count); at least 2 are needed");
  }
}

NvLinkPair parse_nvlink_pair(const JsonView& item, const NvLinkMesh& mesh, int devices) {
  item.allow_only({"a", "b", "links", "bandwidth_Bps", "latency_s", "sources"});
  NvLinkPair pair;
  pair.a = device_index(item.at("a"), devices);
  pair.b = device_index(item.at("b"), devices);
  if (pair.a == pair.b) item.at("b").fail("a device has no NVLink to itself; expected a device other than a");
  pair.links = positive_int(item.at("links"));
  // The pair's own numbers, else the list's.
  const auto resolve = [&](std::string_view field, const std::optional<double>& fallback, bool positive) {
    if (const auto own = item.find(field)) return positive ? bandwidth(*own) : latency(*own, true);
    if (!fallback) {
      item.fail("missing required field '" + std::string(field) + "' (give it here or beside 'pairs' in " +
                item.path().substr(0, item.path().rfind("/pairs")) + ")");
    }
    return *fallback;
  };
  pair.bandwidth_Bps = resolve("bandwidth_Bps", mesh.bandwidth_Bps, true);
  pair.latency_s = resolve("latency_s", mesh.latency_s, false);
  pair.sources = take_sources(item, {"a", "b", "links"});  // the devices and link counts: cited by `pairs`
  return pair;
}

NvLinkMesh parse_nvlink(const JsonView& view, const Nodes& nodes) {
  view.allow_only({"bandwidth_Bps", "latency_s", "links_per_device", "route_through_devices", "pairs", "sources"});
  expect_devices(view, nodes, "NVLink");
  const int devices = nodes.devices_per_node();
  NvLinkMesh mesh;
  if (const auto value = view.find("bandwidth_Bps")) mesh.bandwidth_Bps = bandwidth(*value);
  if (const auto value = view.find("latency_s")) mesh.latency_s = latency(*value, true);
  if (const auto ports = view.find("links_per_device")) mesh.links_per_device = positive_int(*ports);
  if (const auto route = view.find("route_through_devices")) mesh.route_through_devices = route->boolean();

  const JsonView pairs = view.at("pairs");
  if (pairs.size() == 0) pairs.fail("expected at least one NVLink pair {\"a\", \"b\", \"links\"}, got []");
  std::map<std::pair<int, int>, std::size_t> seen;  // unordered pair -> its index
  std::vector<int> used(static_cast<std::size_t>(devices), 0);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const JsonView item = pairs.at(i);
    NvLinkPair pair = parse_nvlink_pair(item, mesh, devices);
    const auto key = std::minmax(pair.a, pair.b);
    if (const auto found = seen.find(key); found != seen.end()) {
      item.fail("devices " + std::to_string(key.first) + " and " + std::to_string(key.second) +
                " are already paired at " + pairs.path() + "/" + std::to_string(found->second) +
                "; give one pair with its link count");
    }
    seen.emplace(key, i);
    for (const int device : {pair.a, pair.b}) {
      int& count = used[static_cast<std::size_t>(device)];
      count += pair.links;
      if (mesh.links_per_device && count > *mesh.links_per_device) {
        item.at("links").fail("device " + std::to_string(device) + " would have " + std::to_string(count) +
                              " NVLinks, more than links_per_device = " + std::to_string(*mesh.links_per_device));
      }
    }
    mesh.pairs.push_back(std::move(pair));
  }
  mesh.sources = take_sources(view);
  if (!mesh.sources.contains("pairs")) {
    pairs.fail("pairs without a source; every topology needs an entry \"pairs\" in " + view.path() +
               "/sources saying where it comes from (docs/platform-schema.md)");
  }
  return mesh;
}

NvSwitch parse_nvswitch(const JsonView& view, const Nodes& nodes) {
  view.allow_only({"bandwidth_Bps", "latency_s", "sources"});
  expect_devices(view, nodes, "an NVSwitch");
  NvSwitch fabric;
  fabric.bandwidth_Bps = bandwidth(view.at("bandwidth_Bps"));
  fabric.latency_s = latency(view.at("latency_s"), true);
  fabric.sources = take_sources(view);
  return fabric;
}

// Whether every pair of devices can exchange messages over the NVLinks alone: each pair linked, or, routing
// through devices, all devices connected.
std::optional<std::pair<int, int>> unreachable_pair(const NvLinkMesh& mesh, int devices) {
  std::vector<std::vector<char>> linked(static_cast<std::size_t>(devices),
                                        std::vector<char>(static_cast<std::size_t>(devices), 0));
  for (const auto& pair : mesh.pairs) {
    linked[static_cast<std::size_t>(pair.a)][static_cast<std::size_t>(pair.b)] = 1;
    linked[static_cast<std::size_t>(pair.b)][static_cast<std::size_t>(pair.a)] = 1;
  }
  if (mesh.route_through_devices) {  // the transitive closure
    for (int via = 0; via < devices; ++via) {
      for (int a = 0; a < devices; ++a) {
        for (int b = 0; b < devices; ++b) {
          char& ab = linked[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
          if (linked[static_cast<std::size_t>(a)][static_cast<std::size_t>(via)] != 0 &&
              linked[static_cast<std::size_t>(via)][static_cast<std::size_t>(b)] != 0) {
            ab = 1;
          }
        }
      }
    }
  }
  for (int a = 0; a < devices; ++a) {
    for (int b = a + 1; b < devices; ++b) {
      if (!linked[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]) return std::pair{a, b};
    }
  }
  return std::nullopt;
}

Nics parse_nics(const JsonView& view, const Nodes& nodes) {
  view.allow_only({"count", "bandwidth_Bps", "devices", "pcie_switches", "sources"});
  const int devices = nodes.devices_per_node();
  if (devices == 0) view.fail("NICs serve a node's devices, but these nodes have none (/nodes/devices)");
  Nics nics;
  nics.count = positive_int(view.at("count"));
  if (const auto value = view.find("bandwidth_Bps")) nics.bandwidth_Bps = bandwidth(*value);

  const JsonView served = view.at("devices");
  if (static_cast<int>(served.size()) != nics.count) {
    served.fail("expected one list of devices per NIC (count = " + std::to_string(nics.count) + "), got " +
                std::to_string(served.size()));
  }
  std::vector<int> nic_of(static_cast<std::size_t>(devices), -1);
  for (std::size_t nic = 0; nic < served.size(); ++nic) {
    const JsonView list = served.at(nic);
    if (list.size() == 0) list.fail("a NIC that serves no device; list only the NICs the devices' traffic uses");
    std::vector<int> mine;
    for (std::size_t k = 0; k < list.size(); ++k) {
      const JsonView entry = list.at(k);
      const int device = device_index(entry, devices);
      int& owner = nic_of[static_cast<std::size_t>(device)];
      if (owner >= 0) {
        entry.fail("device " + std::to_string(device) + " is already served by NIC " + std::to_string(owner) +
                   "; each device's traffic leaves through one NIC");
      }
      owner = static_cast<int>(nic);
      mine.push_back(device);
    }
    nics.devices.push_back(std::move(mine));
  }
  for (int device = 0; device < devices; ++device) {
    if (nic_of[static_cast<std::size_t>(device)] < 0) {
      served.fail("device " + std::to_string(device) + " is served by no NIC; list every device once");
    }
  }

  if (const auto switches = view.find("pcie_switches")) {
    const auto* tree = std::get_if<PcieTree>(&nodes.intra_node);
    if (tree == nullptr) switches->fail("NICs on PCIe switches need the node's pcie_tree (/nodes/intra_node)");
    if (static_cast<int>(switches->size()) != nics.count) {
      switches->fail("expected one switch per NIC (count = " + std::to_string(nics.count) + "), got " +
                     std::to_string(switches->size()));
    }
    std::vector<std::string> valid = {"host"};
    for (const auto& sw : tree->switches) valid.push_back(sw.name);
    for (std::size_t nic = 0; nic < switches->size(); ++nic) {
      nics.pcie_switches.push_back(switches->at(nic).one_of(valid));
    }
  }
  nics.sources = take_sources(view);
  return nics;
}

IntraNode parse_intra_node(const JsonView& view, const Nodes& nodes) {
  const std::string kind = view.at("kind").one_of({"none", "knl_mesh", "pcie_tree"});
  if (kind == "knl_mesh") return parse_knl_mesh(view, nodes.cpu);
  if (kind == "pcie_tree") return parse_pcie_tree(view, nodes.devices_per_node());
  view.allow_only({"kind"});
  return std::monostate{};
}

Link parse_link_fields(const JsonView& view, bool require_description);
Link parse_network_link(const JsonView& view);

SharedChip parse_shared_chip(const JsonView& view, const Nodes& nodes) {
  view.allow_only({"nodes", "cores", "waiting_share", "kernel_efficiency_alone", "loaded_link", "sources"});
  if (!nodes.devices.empty() || !std::holds_alternative<std::monostate>(nodes.intra_node)) {
    view.fail("a shared chip groups nodes that are single CPU cores: these nodes have devices or an intra_node");
  }
  SharedChip chip;
  chip.nodes = positive_int(view.at("nodes"));
  chip.cores = positive_int(view.at("cores"));
  if (const auto share = view.find("waiting_share")) {
    chip.waiting_share = share->number();
    if (!(chip.waiting_share >= 0 && chip.waiting_share <= 1)) {
      share->fail("expected the fraction of a core a waiting rank takes, in [0, 1], got " + show(chip.waiting_share));
    }
  }
  if (const auto efficiency = view.find("kernel_efficiency_alone")) chip.alone = parse_efficiency(*efficiency);
  if (const auto link = view.find("loaded_link")) chip.loaded_link = parse_network_link(*link);
  chip.sources = take_sources(view);
  return chip;
}

void parse_node_links(const JsonView& view, Nodes& nodes);

Nodes parse_nodes(const JsonView& view) {
  view.allow_only(
      {"count", "cpu", "memories", "devices", "intra_node", "nvlink", "nvswitch", "nics", "shared_chip", "sources"});
  Nodes nodes;
  field(view, nodes.count, [&] { return positive_int(view.at("count")); });
  field(view, nodes.cpu, [&] { return parse_cpu(view.at("cpu")); });
  view.attempt([&] {
    const JsonView memories = view.at("memories");
    for (std::size_t i = 0; i < memories.size(); ++i) nodes.memories.push_back(parse_memory(memories.at(i)));
  });
  // The parts below join the devices: checked only when the devices were read whole, as their errors would
  // otherwise follow from a device group's error rather than from their own.
  const std::size_t errors_before = view.gathered_count();
  if (const auto devices = view.find("devices")) {
    view.attempt([&] {
      for (std::size_t i = 0; i < devices->size(); ++i) nodes.devices.push_back(parse_device_group(devices->at(i)));
    });
  }
  if (view.gathered_count() > errors_before) return nodes;
  view.attempt([&] { parse_node_links(view, nodes); });
  return nodes;
}

// The parts of a node that join its devices and NICs (parse_nodes).
void parse_node_links(const JsonView& view, Nodes& nodes) {
  if (const auto intra = view.find("intra_node")) nodes.intra_node = parse_intra_node(*intra, nodes);
  if (const auto nvlink = view.find("nvlink")) {
    nodes.nvlink = parse_nvlink(*nvlink, nodes);
    // Without a PCIe tree there is nothing else to carry a message between devices the NVLinks do not join.
    const auto unlinked = unreachable_pair(*nodes.nvlink, nodes.devices_per_node());
    if (unlinked && !std::holds_alternative<PcieTree>(nodes.intra_node)) {
      nvlink->fail("devices " + std::to_string(unlinked->first) + " and " + std::to_string(unlinked->second) +
                   " have no NVLink route" + (nodes.nvlink->route_through_devices ? "" : " of their own") +
                   " and the node has no pcie_tree to carry their messages; add the pair, the tree, or "
                   "route_through_devices");
    }
  }
  if (const auto nvswitch = view.find("nvswitch")) {
    if (nodes.nvlink) {
      nvswitch->fail("a node's devices are joined by NVLink pairs or by an NVSwitch, not both; remove one");
    }
    nodes.nvswitch = parse_nvswitch(*nvswitch, nodes);
  }
  if (const auto nics = view.find("nics")) nodes.nics = parse_nics(*nics, nodes);
  if (const auto chip = view.find("shared_chip")) nodes.shared_chip = parse_shared_chip(*chip, nodes);
  nodes.sources = take_sources(view);
}

// --- network --------------------------------------------------------------------------------------------------

// A piecewise link's segments: non-empty, the first at min_bytes 0 (every size has a segment), min_bytes strictly
// ascending. A segment's latency may be 0 (a calibration fitted through the origin); its bandwidth may not.
std::vector<LinkSegment> parse_link_segments(const JsonView& view) {
  std::vector<LinkSegment> segments;
  const std::size_t size = view.size();
  if (size == 0) view.fail("expected at least one segment; leave 'segments' out for a single latency and bandwidth");
  for (std::size_t i = 0; i < size; ++i) {
    const JsonView item = view.at(i);
    item.allow_only({"min_bytes", "latency_s", "bandwidth_Bps", "sources"});
    LinkSegment segment;
    const JsonView min_bytes = item.at("min_bytes");
    segment.min_bytes = min_bytes.nonnegative();
    if (i == 0 && segment.min_bytes != 0) {
      min_bytes.fail("the first segment must start at 0 bytes (so every message size has a segment), got " +
                     show(segment.min_bytes));
    }
    if (i > 0 && !(segment.min_bytes > segments.back().min_bytes)) {
      min_bytes.fail("segments must be in strictly ascending order of min_bytes; " + show(segment.min_bytes) +
                     " follows " + show(segments.back().min_bytes));
    }
    segment.latency_s = latency(item.at("latency_s"), true);
    segment.bandwidth_Bps = bandwidth(item.at("bandwidth_Bps"));
    segment.sources = take_sources(item);
    segments.push_back(std::move(segment));
  }
  return segments;
}

Link parse_link_fields(const JsonView& view, bool require_description) {
  Link link;
  field(view, link.name, [&] { return entry_name(view.at("name")); });
  if (require_description) {
    field(view, link.description, [&] { return nonempty_string(view.at("description")); });
  } else if (const auto description = view.find("description")) {
    field(view, link.description, [&] { return description->string(); });
  }
  field(view, link.latency_s, [&] { return latency(view.at("latency_s"), false); });
  field(view, link.bandwidth_Bps, [&] { return bandwidth(view.at("bandwidth_Bps")); });
  if (const auto segments = view.find("segments")) {
    field(view, link.segments, [&] { return parse_link_segments(*segments); });
  }
  return link;
}

Topology parse_topology(const JsonView& view, int node_count) {
  Topology topology;
  const std::string kind = view.at("kind").one_of(topology_names());
  if (kind == "star") {
    view.allow_only({"kind", "link_bandwidth_Bps", "link_latency_s", "sources"});
    topology.shape = StarTopology{};
  } else if (kind == "fat_tree") {
    view.allow_only({"kind", "levels", "down", "up", "link_counts", "link_bandwidth_Bps", "link_latency_s", "sources"});
    FatTreeTopology tree;
    const int levels = positive_int(view.at("levels"));
    for (const auto& [field, values] : {std::pair<std::string_view, std::vector<int>*>{"down", &tree.down},
                                        {"up", &tree.up},
                                        {"link_counts", &tree.link_counts}}) {
      const JsonView array = view.at(field);
      *values = positive_int_array(array);
      if (static_cast<int>(values->size()) != levels) {
        array.fail("expected " + std::to_string(levels) + " values (one per level), got " +
                   std::to_string(values->size()));
      }
    }
    topology.shape = tree;
  } else if (kind == "dragonfly") {
    view.allow_only({"kind", "groups", "group_links", "chassis_per_group", "chassis_links", "routers_per_chassis",
                     "router_links", "nodes_per_router", "link_bandwidth_Bps", "link_latency_s", "sources"});
    DragonflyTopology fly;
    fly.groups = positive_int(view.at("groups"));
    fly.group_links = positive_int(view.at("group_links"));
    fly.chassis_per_group = positive_int(view.at("chassis_per_group"));
    fly.chassis_links = positive_int(view.at("chassis_links"));
    fly.routers_per_chassis = positive_int(view.at("routers_per_chassis"));
    fly.router_links = positive_int(view.at("router_links"));
    fly.nodes_per_router = positive_int(view.at("nodes_per_router"));
    // More groups than routers per chassis describe a real machine (Cori has 34 groups of 16 routers per
    // chassis), which SimGrid 3.32 cannot wire: simulate/simgrid refuses those at the message and flow levels.
    topology.shape = fly;
  } else {
    view.allow_only({"kind", "dimensions", "link_bandwidth_Bps", "link_latency_s", "sources"});
    topology.shape = TorusTopology{positive_int_array(view.at("dimensions"))};
  }
  if (const auto value = view.find("link_bandwidth_Bps")) topology.link_bandwidth_Bps = bandwidth(*value);
  if (const auto value = view.find("link_latency_s")) topology.link_latency_s = latency(*value, false);
  topology.sources = take_sources(view);

  if (const auto capacity = topology_capacity(topology); capacity && *capacity < node_count) {
    view.fail("the " + kind + " (" + simgrid_topology_string(topology) + ") holds " + std::to_string(*capacity) +
              " nodes, fewer than /nodes/count = " + std::to_string(node_count));
  }
  return topology;
}

// A link inside a platform file (the network's, a shared chip's loaded one): its fields and sources.
Link parse_network_link(const JsonView& view) {
  view.allow_only({"name", "description", "latency_s", "bandwidth_Bps", "segments", "sources"});
  Link link = parse_link_fields(view, false);
  field(view, link.sources, [&] { return take_sources(view); });
  return link;
}

Network parse_network(const JsonView& view, int node_count) {
  view.allow_only({"link", "topology", "sources"});
  Network network;
  field(view, network.link, [&] { return parse_network_link(view.at("link")); });
  field(view, network.topology, [&] { return parse_topology(view.at("topology"), node_count); });
  view.attempt([&] { take_sources(view); });
  return network;
}

// --- noise ----------------------------------------------------------------------------------------------------

std::vector<Straggler> parse_stragglers(const JsonView& view, int node_count) {
  std::vector<Straggler> stragglers;
  for (std::size_t i = 0; i < view.size(); ++i) {
    const JsonView item = view.at(i);
    item.allow_only({"node", "slowdown"});
    Straggler straggler;
    const JsonView node = item.at("node");
    const std::int64_t index = node.integer();
    if (index < 0 || index >= node_count) {
      node.fail("expected a node from 0 to /nodes/count - 1 = " + std::to_string(node_count - 1) + ", got " +
                std::to_string(index));
    }
    straggler.node = static_cast<int>(index);
    for (const auto& earlier : stragglers) {
      if (earlier.node == straggler.node) node.fail("node " + std::to_string(straggler.node) + " is listed twice");
    }
    straggler.slowdown = item.at("slowdown").positive();
    stragglers.push_back(straggler);
  }
  return stragglers;
}

Noise parse_noise(const JsonView& view, int node_count) {
  Noise noise;
  noise.distribution = enum_value<NoiseDistribution>(view.at("distribution"), noise_distribution_names());
  auto spread_of = [&](std::string_view field, bool below_one) {
    const JsonView value = view.at(field);
    const double spread = value.nonnegative();
    // A factor 1 - spread must stay positive for the distributions whose support is not already positive.
    if (below_one && spread >= 1) value.fail("expected a value below 1 (a relative spread), got " + show(spread));
    return spread;
  };
  switch (noise.distribution) {
    case NoiseDistribution::kNone:
      view.allow_only({"distribution", "description", "sources", "stragglers"});
      break;
    case NoiseDistribution::kNormal:
      view.allow_only({"distribution", "relative_stddev", "correlation_s", "description", "sources", "stragglers"});
      noise.spread = spread_of("relative_stddev", true);
      break;
    case NoiseDistribution::kLognormal:
      view.allow_only({"distribution", "sigma", "correlation_s", "description", "sources", "stragglers"});
      noise.spread = spread_of("sigma", false);
      break;
    case NoiseDistribution::kUniform:
      view.allow_only({"distribution", "relative_half_width", "correlation_s", "description", "sources", "stragglers"});
      noise.spread = spread_of("relative_half_width", true);
      break;
  }
  if (const auto correlation = view.find("correlation_s")) noise.correlation_s = correlation->nonnegative();
  if (const auto stragglers = view.find("stragglers")) noise.stragglers = parse_stragglers(*stragglers, node_count);
  if (const auto description = view.find("description")) noise.description = description->string();
  noise.sources = take_sources(view);
  return noise;
}

// --- writing --------------------------------------------------------------------------------------------------

void put_sources(Json& object, const Sources& sources) {
  if (sources.empty()) return;
  Json& out = object["sources"] = Json::object();
  for (const auto& [key, text] : sources) out[key] = text;
}

Json efficiency_json(const KernelEfficiency& efficiency) {
  Json out = Json::object();
  for (const auto& [name, fraction] : efficiency.by_class) out[name] = fraction;
  put_sources(out, efficiency.sources);
  return out;
}

Json memory_json(const Memory& memory) {
  Json out = {{"name", memory.name}, {"bandwidth_Bps", memory.bandwidth_Bps}};
  if (memory.size_bytes) out["size_bytes"] = *memory.size_bytes;
  put_sources(out, memory.sources);
  return out;
}

Json kernel_model_json(const KernelModel& model) {
  Json out = {{"parallel_units", model.parallel_units},
              {"tile", {model.tile_m, model.tile_n}},
              {"efficiency", model.efficiency}};
  if (!model.tiles.empty()) out["tiles"] = model.tiles;
  // The optional costs as the file had them: absent ones stay absent (a number needs a source).
  for (const auto& [key, value] :
       {std::pair{"tile_k_overhead", model.tile_k_overhead}, std::pair{"fixed_s", model.fixed_s},
        std::pair{"sync_s_per_unit", model.sync_s_per_unit}}) {
    if (value != 0 || model.sources.contains(key)) out[key] = value;
  }
  if (model.cache) out["cache"] = memory_json(*model.cache);
  if (!model.winograd_3x3_tiles.empty()) out["winograd_3x3"] = model.winograd_3x3_tiles;
  for (const auto& [kind, library] : model.gemm_library) {
    Json& entry = out["gemm_library"][kind];
    entry = {{"one_thread_up_to", library.one_thread_up_to}, {"packs_operands", library.packs_operands}};
    if (library.pack_Bps > 0) entry["pack_Bps"] = library.pack_Bps;
    if (library.relative_efficiency != 1) entry["relative_efficiency"] = library.relative_efficiency;
    if (library.parallel_efficiency != 1) entry["parallel_efficiency"] = library.parallel_efficiency;
    if (library.forward_lowering_s > 0 || library.backward_data_lowering_s > 0 ||
        library.backward_weights_lowering_s > 0) {
      entry["lowering_s"] = {library.forward_lowering_s, library.backward_data_lowering_s,
                             library.backward_weights_lowering_s};
    }
  }
  for (const auto& [kind, rate] : model.streaming) {
    Json& entry = out["streaming"][kind];
    entry = {{"forward_Bps", rate.forward_Bps}, {"backward_Bps", rate.backward_Bps}, {"threaded", rate.threaded}};
    if (rate.fixed_s) entry["fixed_s"] = *rate.fixed_s;
    if (rate.parallel_efficiency < 1) entry["parallel_efficiency"] = rate.parallel_efficiency;
    if (rate.per_image_s > 0) entry["per_image_s"] = rate.per_image_s;
    if (rate.channel_block > 0) {
      entry["channel_block"] = rate.channel_block;
      entry["padded_share"] = {rate.forward_padded_share, rate.backward_padded_share};
      entry["tail_s"] = {rate.forward_tail_s, rate.backward_tail_s};
    }
  }
  put_sources(out, model.sources);
  return out;
}

Json pcie_link_json(const PcieLink& link) {
  Json out = {{"lanes", link.lanes}, {"bandwidth_Bps", link.bandwidth_Bps}};
  put_sources(out, link.sources);
  return out;
}

Json stops_json(const std::vector<MeshStop>& stops) {
  Json out = Json::array();
  for (const auto& stop : stops) out.push_back({stop.x, stop.y});
  return out;
}

Json intra_node_json(const IntraNode& intra) {
  if (const auto* mesh = std::get_if<KnlMesh>(&intra)) {
    Json controllers = {{"mcdram", stops_json(mesh->mcdram_controllers)}, {"ddr4", stops_json(mesh->ddr_controllers)}};
    put_sources(controllers, mesh->controller_sources);
    Json out = {{"kind", "knl_mesh"},
                {"columns", mesh->columns},
                {"rows", mesh->rows},
                {"physical_tiles", mesh->physical_tiles},
                {"active_tiles", mesh->active_tiles},
                {"cores_per_tile", mesh->cores_per_tile},
                {"controllers", controllers},
                {"cluster_mode", to_string(mesh->cluster_mode)},
                {"mcdram_mode", to_string(mesh->mcdram_mode)}};
    if (mesh->link_bandwidth_Bps) out["link_bandwidth_Bps"] = *mesh->link_bandwidth_Bps;
    if (mesh->hop_latency_s) out["hop_latency_s"] = *mesh->hop_latency_s;
    put_sources(out, mesh->sources);
    return out;
  }
  if (const auto* tree = std::get_if<PcieTree>(&intra)) {
    Json out = {{"kind", "pcie_tree"}, {"switches", Json::array()}};
    if (tree->host_lanes) out["host_lanes"] = *tree->host_lanes;
    if (tree->host_devices > 0) {
      out["host_devices"] = tree->host_devices;
      out["host_device_link"] = pcie_link_json(*tree->host_device_link);
    }
    for (const auto& sw : tree->switches) {
      Json item = {{"name", sw.name},
                   {"model", sw.model},
                   {"parent", sw.parent},
                   {"lanes", sw.lanes},
                   {"uplink", pcie_link_json(sw.uplink)}};
      if (sw.ports) item["ports"] = *sw.ports;
      if (sw.devices > 0) {
        item["devices"] = sw.devices;
        item["device_link"] = pcie_link_json(*sw.device_link);
      }
      put_sources(item, sw.sources);
      out["switches"].push_back(std::move(item));
    }
    put_sources(out, tree->sources);
    return out;
  }
  return {{"kind", "none"}};
}

Json nvlink_json(const NvLinkMesh& mesh) {
  Json out = {{"pairs", Json::array()}};
  if (mesh.bandwidth_Bps) out["bandwidth_Bps"] = *mesh.bandwidth_Bps;
  if (mesh.latency_s) out["latency_s"] = *mesh.latency_s;
  if (mesh.links_per_device) out["links_per_device"] = *mesh.links_per_device;
  if (mesh.route_through_devices || mesh.sources.contains("route_through_devices")) {
    out["route_through_devices"] = mesh.route_through_devices;
  }
  for (const auto& pair : mesh.pairs) {
    Json item = {{"a", pair.a}, {"b", pair.b}, {"links", pair.links}};
    // Only the pair's own numbers: the others come from the list's.
    if (pair.sources.contains("bandwidth_Bps") || !mesh.bandwidth_Bps) item["bandwidth_Bps"] = pair.bandwidth_Bps;
    if (pair.sources.contains("latency_s") || !mesh.latency_s) item["latency_s"] = pair.latency_s;
    put_sources(item, pair.sources);
    out["pairs"].push_back(std::move(item));
  }
  put_sources(out, mesh.sources);
  return out;
}

Json nvswitch_json(const NvSwitch& fabric) {
  Json out = {{"bandwidth_Bps", fabric.bandwidth_Bps}, {"latency_s", fabric.latency_s}};
  put_sources(out, fabric.sources);
  return out;
}

Json nics_json(const Nics& nics) {
  Json out = {{"count", nics.count}, {"devices", nics.devices}};
  if (nics.bandwidth_Bps) out["bandwidth_Bps"] = *nics.bandwidth_Bps;
  if (!nics.pcie_switches.empty()) out["pcie_switches"] = nics.pcie_switches;
  put_sources(out, nics.sources);
  return out;
}

Json topology_json(const Topology& topology) {
  Json out = {{"kind", to_string(topology.kind())}};
  if (const auto* tree = std::get_if<FatTreeTopology>(&topology.shape)) {
    out["levels"] = tree->down.size();
    out["down"] = tree->down;
    out["up"] = tree->up;
    out["link_counts"] = tree->link_counts;
  } else if (const auto* fly = std::get_if<DragonflyTopology>(&topology.shape)) {
    out["groups"] = fly->groups;
    out["group_links"] = fly->group_links;
    out["chassis_per_group"] = fly->chassis_per_group;
    out["chassis_links"] = fly->chassis_links;
    out["routers_per_chassis"] = fly->routers_per_chassis;
    out["router_links"] = fly->router_links;
    out["nodes_per_router"] = fly->nodes_per_router;
  } else if (const auto* torus = std::get_if<TorusTopology>(&topology.shape)) {
    out["dimensions"] = torus->dimensions;
  }
  if (topology.link_bandwidth_Bps) out["link_bandwidth_Bps"] = *topology.link_bandwidth_Bps;
  if (topology.link_latency_s) out["link_latency_s"] = *topology.link_latency_s;
  put_sources(out, topology.sources);
  return out;
}

// A byte count as an integer when it is one ("4044", not "4044.0").
Json byte_count_json(double bytes) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (bytes >= 0 && bytes < kExactIntegers && bytes == std::floor(bytes)) return static_cast<std::uint64_t>(bytes);
  return bytes;
}

Json link_fields_json(const Link& link) {
  Json out = {{"name", link.name}, {"latency_s", link.latency_s}, {"bandwidth_Bps", link.bandwidth_Bps}};
  if (!link.description.empty()) out["description"] = link.description;
  if (!link.segments.empty()) {
    Json& segments = out["segments"] = Json::array();
    for (const auto& segment : link.segments) {
      Json item = {{"min_bytes", byte_count_json(segment.min_bytes)},
                   {"latency_s", segment.latency_s},
                   {"bandwidth_Bps", segment.bandwidth_Bps}};
      put_sources(item, segment.sources);
      segments.push_back(std::move(item));
    }
  }
  put_sources(out, link.sources);
  return out;
}

Json noise_json(const Noise& noise) {
  Json out = {{"distribution", to_string(noise.distribution)}};
  switch (noise.distribution) {
    case NoiseDistribution::kNone:
      break;
    case NoiseDistribution::kNormal:
      out["relative_stddev"] = noise.spread;
      break;
    case NoiseDistribution::kLognormal:
      out["sigma"] = noise.spread;
      break;
    case NoiseDistribution::kUniform:
      out["relative_half_width"] = noise.spread;
      break;
  }
  if (noise.distribution != NoiseDistribution::kNone && noise.correlation_s > 0) {
    out["correlation_s"] = noise.correlation_s;
  }
  if (!noise.stragglers.empty()) {
    Json stragglers = Json::array();
    for (const auto& straggler : noise.stragglers) {
      stragglers.push_back({{"node", straggler.node}, {"slowdown", straggler.slowdown}});
    }
    out["stragglers"] = stragglers;
  }
  if (!noise.description.empty()) out["description"] = noise.description;
  put_sources(out, noise.sources);
  return out;
}

}  // namespace

Platform parse_platform(const Json& json, const std::string& source) {
  const JsonView root = JsonView(json, source).gathering_errors();
  // First and alone: a link file given as a platform gets one message that says so.
  expect_schema(JsonView(json, source), kPlatformSchema);
  root.allow_only({"schema", "name", "description", "nodes", "network", "noise", "sources"});
  Platform platform;
  field(root, platform.name, [&] { return entry_name(root.at("name")); });
  field(root, platform.description, [&] { return nonempty_string(root.at("description")); });
  // The network and the noise are checked against the nodes' count: read without it, they would add errors that
  // only follow from its.
  const std::size_t errors_before = root.gathered_count();
  field(root, platform.nodes, [&] { return parse_nodes(root.at("nodes")); });
  const bool nodes_counted = platform.nodes.count > 0;
  if (nodes_counted)
    field(root, platform.network, [&] { return parse_network(root.at("network"), platform.nodes.count); });
  if (root.gathered_count() == errors_before && platform.nodes.nics && platform.nodes.nics->bandwidth_Bps &&
      !platform.network.link.segments.empty()) {
    root.attempt([&] {
      root.at("nodes")
          .at("nics")
          .at("bandwidth_Bps")
          .fail(
              "a piecewise network link (/network/link/segments) prices every message by its segments; give the "
              "NICs no bandwidth of their own");
    });
  }
  if (const auto noise = root.find("noise"); noise && nodes_counted) {
    field(root, platform.noise, [&] { return parse_noise(*noise, platform.nodes.count); });
  }
  root.attempt([&] { take_sources(root); });
  root.throw_gathered();
  return platform;
}

Platform parse_platform_text(std::string_view text, const std::string& source) {
  return parse_platform(parse_json(text, source), source);
}

Platform read_platform_file(const std::filesystem::path& path) {
  return parse_platform(read_json_file(path), path.string());
}

Link parse_link(const Json& json, const std::string& source) {
  expect_schema(JsonView(json, source), kLinkSchema);
  const JsonView root = JsonView(json, source).gathering_errors();
  root.allow_only({"schema", "name", "description", "latency_s", "bandwidth_Bps", "segments", "sources"});
  Link link = parse_link_fields(root, true);
  field(root, link.sources, [&] { return take_sources(root); });
  root.throw_gathered();
  return link;
}

Json to_json(const Platform& platform) {
  const Nodes& nodes = platform.nodes;
  Json cpu = {{"model", nodes.cpu.model},
              {"sockets", nodes.cpu.sockets},
              {"cores_per_socket", nodes.cpu.cores_per_socket},
              {"clock_Hz", nodes.cpu.clock_Hz},
              {"vector_width_bits", nodes.cpu.vector_width_bits},
              {"sp_flops_per_cycle_per_core", nodes.cpu.sp_flops_per_cycle_per_core},
              {"peak_flops", nodes.cpu.peak_flops}};
  if (!nodes.cpu.efficiency.by_class.empty()) cpu["kernel_efficiency"] = efficiency_json(nodes.cpu.efficiency);
  if (nodes.cpu.kernels) cpu["kernels"] = kernel_model_json(*nodes.cpu.kernels);
  if (nodes.cpu.profile) cpu["kernel_profile"] = to_json(*nodes.cpu.profile);
  if (nodes.cpu.datagram_Bps > 0) cpu["datagram_Bps"] = nodes.cpu.datagram_Bps;
  put_sources(cpu, nodes.cpu.sources);
  Json memories = Json::array();
  for (const auto& memory : nodes.memories) memories.push_back(memory_json(memory));
  Json devices = Json::array();
  for (const auto& group : nodes.devices) {
    Json item = {{"model", group.model},
                 {"count", group.count},
                 {"peak_flops", group.peak_flops},
                 {"memory", memory_json(group.memory)}};
    if (!group.efficiency.by_class.empty()) item["kernel_efficiency"] = efficiency_json(group.efficiency);
    if (group.kernels) item["kernels"] = kernel_model_json(*group.kernels);
    if (group.profile) item["kernel_profile"] = to_json(*group.profile);
    put_sources(item, group.sources);
    devices.push_back(std::move(item));
  }
  Json nodes_json = {{"count", nodes.count},
                     {"cpu", cpu},
                     {"memories", memories},
                     {"devices", devices},
                     {"intra_node", intra_node_json(nodes.intra_node)}};
  if (nodes.nvlink) nodes_json["nvlink"] = nvlink_json(*nodes.nvlink);
  if (nodes.nvswitch) nodes_json["nvswitch"] = nvswitch_json(*nodes.nvswitch);
  if (nodes.nics) nodes_json["nics"] = nics_json(*nodes.nics);
  if (nodes.shared_chip) {
    Json chip = {{"nodes", nodes.shared_chip->nodes}, {"cores", nodes.shared_chip->cores}};
    if (nodes.shared_chip->waiting_share != 0 || nodes.shared_chip->sources.contains("waiting_share")) {
      chip["waiting_share"] = nodes.shared_chip->waiting_share;
    }
    if (!nodes.shared_chip->alone.by_class.empty()) {
      chip["kernel_efficiency_alone"] = efficiency_json(nodes.shared_chip->alone);
    }
    if (nodes.shared_chip->loaded_link) chip["loaded_link"] = link_fields_json(*nodes.shared_chip->loaded_link);
    put_sources(chip, nodes.shared_chip->sources);
    nodes_json["shared_chip"] = std::move(chip);
  }
  put_sources(nodes_json, nodes.sources);
  return {{"schema", kPlatformSchema},
          {"name", platform.name},
          {"description", platform.description},
          {"nodes", nodes_json},
          {"network",
           {{"link", link_fields_json(platform.network.link)}, {"topology", topology_json(platform.network.topology)}}},
          {"noise", noise_json(platform.noise)}};
}

Json to_json(const Link& link) {
  Json out = link_fields_json(link);
  out["schema"] = kLinkSchema;
  return out;
}

std::vector<std::string> platform_warnings(const Platform& platform) {
  std::vector<std::string> warnings;
  const auto check = [&](const std::string& what, double peak_flops, const KernelEfficiency& efficiency,
                         const std::optional<KernelModel>& kernels,
                         const std::shared_ptr<const KernelProfile>& profile) {
    if (!efficiency.by_class.empty() || kernels || profile) return;
    warnings.push_back(platform.name + ": " + what +
                       " has no kernel_efficiency, kernels or kernel_profile: its kernels run at its full peak (" +
                       significant(peak_flops, 4) +
                       " FLOP/s), several times faster than any real one (docs/platform-schema.md)");
  };
  if (platform.nodes.devices.empty()) {
    const Cpu& cpu = platform.nodes.cpu;
    check("the CPU '" + cpu.model + "'", cpu.peak_flops, cpu.efficiency, cpu.kernels, cpu.profile);
  }
  for (const DeviceGroup& group : platform.nodes.devices) {
    check("device '" + group.model + "'", group.peak_flops, group.efficiency, group.kernels, group.profile);
  }
  return warnings;
}

}  // namespace dsgd::platforms
