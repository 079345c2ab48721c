#include "platforms/starting_point.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"

namespace dsgd::platforms {

namespace {

// nlohmann's ordered kind: the catalog entry's fields stay in the order its authors wrote them.
using OrderedJson = nlohmann::ordered_json;

// What each field is, by "parent.field" (the parent: the key above it, or above its array) or by "field" alone.
// Units are said where a slip is likely: the loader refuses a value out of range and names the slip.
const std::map<std::string, std::string, std::less<>> kFieldNotes = {
    {"schema", "the format and its version; leave it"},
    {".name", "letters, digits, '-', '_' and '.': it becomes file names and results' platform field"},
    {".description", "one line: what machine this is"},
    {"nodes", "the nodes, all alike"},
    {"nodes.count", "how many nodes"},
    {"cpu", "a node's host CPU"},
    {"model", "the model as its vendor names it"},
    {"sockets", "CPU sockets per node"},
    {"cores_per_socket", "cores per socket"},
    {"clock_Hz", "clock in Hz (2.6e9 for 2.6 GHz): the sustained all-core clock where known"},
    {"vector_width_bits", "SIMD width in bits (256 for AVX2, 512 for AVX-512)"},
    {"sp_flops_per_cycle_per_core", "single-precision FLOP a core retires per cycle (2 FMA pipes x lanes x 2)"},
    {"peak_flops", "peak in FLOP/s, not GFLOP/s or TFLOP/s (the CPU's: sockets x cores x clock x FLOP per cycle)"},
    {"kernel_efficiency",
     "the share of peak each kernel class reaches, in (0, 1]; without it, `kernels` or a `kernel_profile`, kernels "
     "run at the full peak, several times faster than any real one"},
    {"kernels", "the kernel model: units, tiles, caches and fixed costs (docs/platform-schema.md)"},
    {"memories", "a node's memory tiers"},
    {"size_bytes", "bytes, not GB (80 GiB is 85899345920)"},
    {"bandwidth_Bps", "bytes per second, not bits (100 Gb/s is 1.25e10 B/s)"},
    {"latency_s", "seconds, not microseconds (1 us is 1e-6)"},
    {"nodes.devices", "a node's accelerators, one group per model; leave it out for CPU-only nodes"},
    {"devices.count", "devices of this model per node"},
    {"devices.peak_flops",
     "a device's peak in FLOP/s, not TFLOP/s (156 TFLOP/s is 1.56e14), in the precision it trains in"},
    {"memory", "a device's own memory"},
    {"intra_node", "how a node's parts connect: a PCIe tree of switches, or a many-core chip's mesh"},
    {"switches", "PCIe switches, each under the host or another switch"},
    {"nvlink", "NVLink pairs between devices"},
    {"nvswitch", "an NVSwitch joining every device of a node"},
    {"nics", "network cards: how many, each one's bandwidth, and the devices each serves"},
    {"network", "the network between nodes"},
    {"link", "a node's link into the network: latency and bandwidth (or segments by message size)"},
    {"topology",
     "star, fat_tree (levels, down, up, link_counts), dragonfly or torus; a topology without link_bandwidth_Bps "
     "gives every link the nodes' injection bandwidth times the nodes, no bottleneck"},
    {"kind", "one of the kinds docs/platform-schema.md lists"},
    {"link_bandwidth_Bps", "bytes per second of each link of the topology itself"},
    {"noise", "compute-time noise across nodes: none, normal, lognormal or uniform"},
    {"sources",
     "where each number beside it comes from (every number needs one): a datasheet, a measurement, "
     "'derived: <formula>' or 'assumed: <why>'"},
};

// The note of a field and the key it is filed under: "parent.field" where the note is the parent's own, else the
// field's, so a unit's note ("bytes per second, not bits") comes once in the file and a parent's once per parent.
std::pair<std::string, std::string> note_of(const std::string& parent, const std::string& key) {
  if (const auto it = kFieldNotes.find(parent + "." + key); it != kFieldNotes.end()) return *it;
  if (const auto it = kFieldNotes.find(key); it != kFieldNotes.end()) return *it;
  return {};
}

bool scalar_array(const OrderedJson& value) {
  if (!value.is_array()) return false;
  for (const auto& item : value) {
    if (item.is_structured()) return false;
  }
  return true;
}

// Each source marked as the catalog machine's, so an unchanged number still says where it came from and a changed
// one shows its source is left to rewrite.
void mark_sources(OrderedJson& value, const std::string& from) {
  if (value.is_array()) {
    for (auto& item : value) mark_sources(item, from);
  }
  if (!value.is_object()) return;
  for (auto& [key, member] : value.items()) {
    if (key == "sources" && member.is_object()) {
      for (auto& [field, source] : member.items()) {
        if (source.is_string()) source = from + ": " + source.get<std::string>();
      }
    } else {
      mark_sources(member, from);
    }
  }
}

// JSON text, two spaces an indent, a comment line above the first field of each note (note_of), so the 8 entries
// of an array are not each annotated.
void write(const OrderedJson& value, const std::string& parent, int indent, std::set<std::string>& noted,
           std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  if (value.is_object()) {
    out += "{\n";
    std::size_t left = value.size();
    for (const auto& [key, member] : value.items()) {
      const auto [filed_under, note] = note_of(parent, key);
      if (!note.empty() && noted.insert(filed_under).second) out += pad + "  // " + note + "\n";
      out += pad + "  " + OrderedJson(key).dump() + ": ";
      write(member, key, indent + 1, noted, out);
      out += --left ? ",\n" : "\n";
    }
    out += pad + "}";
  } else if (value.is_array() && !value.empty() && !scalar_array(value)) {
    out += "[\n";
    for (std::size_t i = 0; i < value.size(); ++i) {
      out += pad + "  ";
      write(value[i], parent, indent + 1, noted, out);
      out += i + 1 < value.size() ? ",\n" : "\n";
    }
    out += pad + "]";
  } else {
    out += value.dump(-1, ' ', false);
  }
}

}  // namespace

std::string starting_point(std::string_view from, const std::string& name) {
  OrderedJson json = OrderedJson::parse(catalog_text(from));
  if (json.value("schema", "") != "dsgd-platform/1") {
    throw InputError("platforms new: '" + std::string(from) + "' is a link, not a platform; start from one of " +
                     join(catalog_names()));
  }
  json["name"] = name;
  mark_sources(json, "catalog " + std::string(from));
  std::string text = "// A dsgd platform file (docs/platform-schema.md), started from the catalog's '" +
                     std::string(from) + "' by `dsgd platforms new`.\n" +
                     "// Every number is that machine's: change those that differ on yours, and beside each one its "
                     "entry in \"sources\".\n" +
                     "// Check it with `dsgd platforms show FILE` (it lists every error at once), then run "
                     "`dsgd simulate --platform FILE ...`.\n";
  std::set<std::string> noted;
  write(json, "", 0, noted, text);
  text += "\n";
  (void)parse_platform_text(text, name + ".json");  // what it writes loads, and a bad name is refused here
  return text;
}

}  // namespace dsgd::platforms
