#pragma once
// The in-memory form of a platform description: what a cluster is made of (nodes, their CPU, memories and
// devices, the topology inside a node), how its nodes are networked, and how noisy compute times are.
// docs/platform-schema.md documents the JSON form field by field; platforms/loader.hpp reads and writes it.
//
// Units are in the names (`bandwidth_Bps`, `latency_s`, `clock_Hz`, `size_bytes`); FLOP rates are single
// precision FLOP/s (`peak_flops`). Every number read from a file carries its source in the `sources` map of the
// object that holds it (field name -> citation); the loader rejects a number without one.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dsgd::platforms {

class KernelProfile;  // platforms/kernel_profile.hpp

// Where the numbers of one JSON object come from: sibling field name -> citation ("seed 000 Table 2", a
// datasheet, "derived: a x b"). Kept in memory so that `dsgd platforms show` and reports can cite them.
using Sources = std::map<std::string, std::string>;

// One kind of memory of a node or a device (MCDRAM, DDR4, GDDR5).
struct Memory {
  std::string name;
  std::optional<double> size_bytes;  // absent when no source gives the size
  double bandwidth_Bps = 0;          // sustained if the source is a measurement, else vendor peak (see sources)
  Sources sources;
};

// The fraction of peak a kernel class achieves on a processor (seed 000's kernels run far below peak: a
// convolution at a third of it is typical of CPU deep-learning libraries). Kernel classes are those a
// ComputeStep names (core/comm.hpp): "conv" (forward/backward), "gemm", "elementwise" (updates, memory-bound),
// "copy" (batch copies: its value scales the memory or PCIe bandwidth instead of the FLOP peak). A class not
// listed runs at 1 (peak, or full bandwidth) and the simulation says so.
struct KernelEfficiency {
  std::map<std::string, double> by_class;  // class -> fraction in (0, 1]
  Sources sources;

  // The fraction for `kernel_class`, 1 if not listed.
  double of(std::string_view kernel_class) const;
};
// The kernel classes a platform file may list.
const std::vector<std::string>& kernel_class_names();

// How a processor runs kernels, for pricing them by shape (simulate/kernel_cost.hpp, docs/platform-schema.md
// "kernels"): its parallel units, the output tile each computes at a time, the fixed costs, an on-chip cache, and
// the one efficiency left once the shape is accounted for.
struct StreamingRate {
  double forward_Bps = 0;
  double backward_Bps = 0;
  std::optional<double> fixed_s;  // its dispatch, where not KernelModel::fixed_s (a plain function, no primitive)
  bool threaded = true;           // false: the library runs it on one unit whatever the rank has
  // Threaded, the share of the units' speed it gets: its speed-up on all of them over their count (a pass bound by
  // the memory the units share, or by a serial part, gains less than the units).
  double parallel_efficiency = 1;
  // Work per image beyond the bytes, forward and backward alike (the loss: a row's logarithm and label check).
  double per_image_s = 0;
  // A library that works on channels in blocks (oneDNN's NCHW pooling transposes to blocks of one vector's lanes)
  // pads the last block: a pass's padded share of its work is done on channels padded to `channel_block`, the rest
  // on the channels there are. 0: no blocks.
  std::int64_t channel_block = 0;
  double forward_padded_share = 0;
  double backward_padded_share = 0;
  // A pass's cost per image for a last block that is not whole, whatever its plane's size (its masked setup).
  double forward_tail_s = 0;
  double backward_tail_s = 0;
  bool operator==(const StreamingRate&) const = default;
};

// How a CPU BLAS runs a layer's GEMM (KernelModel::gemm_library).
struct GemmLibrary {
  // The multiply-adds up to which the library runs a GEMM on one unit; above them, on every unit (OpenBLAS 0.3.21:
  // 65536 x GEMM_MULTITHREAD_THRESHOLD 4). 0: every unit.
  double one_thread_up_to = 0;
  // GotoBLAS's algorithm copies both operands into packed panels first: their bytes read and written once more, at
  // the memory tier's rate.
  bool packs_operands = false;
  // The operands' bytes packed per second (a strided, transposing copy: slower than the memory tier's); 0: read
  // and written once more at the memory tier's rate.
  double pack_Bps = 0;
  // Its GEMMs' speed against those the device's `efficiency` describes, on the same products (OpenBLAS's sgemm
  // against oneDNN's own in the CPU back end's convolutions): they run at the device's efficiency times this.
  double relative_efficiency = 1;
  // On more than one unit, the share of their speed its GEMMs get: their speed-up over the units' count.
  double parallel_efficiency = 1;
  // A library that lowers a convolution to a GEMM (im2col + GEMM: oneDNN's gemm convolution on plain layouts) first
  // writes the column matrix (forward, backward-weights) or, after the GEMM, adds it back into the input's gradient
  // (col2im, backward-data): seconds per column element on one unit, by pass (LayerKernel::lowered_elements).
  // 0: no lowering.
  double forward_lowering_s = 0;
  double backward_data_lowering_s = 0;
  double backward_weights_lowering_s = 0;
  bool operator==(const GemmLibrary&) const = default;
};

struct KernelModel {
  int parallel_units = 0;   // a GPU's SMs; a CPU's cores (per node)
  std::int64_t tile_m = 0;  // the output block one unit computes at a time
  std::int64_t tile_n = 0;
  // More [m, n] output tiles the library can choose from per GEMM (cuBLAS's and CUTLASS's thread-block shapes);
  // empty: `tile` alone.
  std::vector<std::array<std::int64_t, 2>> tiles;
  double tile_k_overhead = 0;   // a tile's fixed cost in steps of k
  double fixed_s = 0;           // per kernel: launch or dispatch
  double sync_s_per_unit = 0;   // per kernel and unit taking part: a fork-join across a CPU's threads
  std::optional<Memory> cache;  // on-chip, shared by the units (an L2)
  // The output tiles m of the library's Winograd F(m x m, 3x3) for 3x3 stride-1 convolutions; empty: none.
  std::vector<std::int64_t> winograd_3x3_tiles;
  // The library's streaming kernels of a layer kind ("relu", "max_pool", "softmax", ...; model_zoo's names): the
  // bytes core/layer_kernels.hpp counts for them per second on one unit, forward and backward, and whether the
  // library spreads them over the units. A kind not listed streams at its memory tier's bandwidth.
  std::map<std::string, StreamingRate> streaming;
  // Per layer kind whose GEMMs a CPU BLAS called per layer runs (the CPU back end's inner products: OpenBLAS).
  std::map<std::string, GemmLibrary> gemm_library;
  double efficiency = 1;  // in (0, 1]
  Sources sources;
};

// The host processor(s) of a node. `peak_flops` is the whole node's single-precision peak (all sockets).
struct Cpu {
  std::string model;
  int sockets = 1;
  int cores_per_socket = 0;
  double clock_Hz = 0;
  int vector_width_bits = 0;
  double sp_flops_per_cycle_per_core = 0;  // vector lanes x vector units x 2 if FMA
  double peak_flops = 0;
  KernelEfficiency efficiency;         // JSON `kernel_efficiency`, optional
  std::optional<KernelModel> kernels;  // JSON `kernels`, optional
  // JSON `kernel_profile`, optional: measured per-layer times that price the kernels they cover (shared, not
  // copied, by the platform's copies and ranks).
  std::shared_ptr<const KernelProfile> profile;
  // JSON `datagram_Bps`, optional: the bytes per second one core tags (sending) or checks (receiving) dsgd's
  // authenticated datagrams (core/datagram.hpp, SipHash-2-4); 0: free.
  double datagram_Bps = 0;
  Sources sources;

  int cores() const { return sockets * cores_per_socket; }
};

// `count` identical accelerators of a node (for example 4 GK210 halves = 2 Tesla K80 boards).
struct DeviceGroup {
  std::string model;
  int count = 0;
  double peak_flops = 0;                         // per device, single precision
  Memory memory;                                 // per device
  KernelEfficiency efficiency;                   // JSON `kernel_efficiency`, optional
  std::optional<KernelModel> kernels;            // JSON `kernels`, optional
  std::shared_ptr<const KernelProfile> profile;  // JSON `kernel_profile`, optional (as Cpu::profile)
  Sources sources;
};

// --- intra-node topology ------------------------------------------------------------------------------------------

enum class ClusterMode { kAll2All, kQuadrant, kSnc4 };
enum class McdramMode { kCache, kFlat, kHybrid };

// A stop of the KNL mesh, column x (0 = left), row y (0 = top).
struct MeshStop {
  int x = 0;
  int y = 0;
  friend bool operator==(const MeshStop&, const MeshStop&) = default;
};

// Knights Landing's on-chip 2-D mesh: `columns` x `rows` stops, of which the memory controllers take the listed
// ones and tiles (2 cores sharing an L2) take the others in row-major order; `active_tiles` of the
// `physical_tiles` are enabled on a given SKU (34 of 38 on the 7250).
struct KnlMesh {
  int columns = 0;
  int rows = 0;
  int physical_tiles = 0;
  int active_tiles = 0;
  int cores_per_tile = 0;
  std::vector<MeshStop> mcdram_controllers;
  std::vector<MeshStop> ddr_controllers;
  ClusterMode cluster_mode = ClusterMode::kQuadrant;
  McdramMode mcdram_mode = McdramMode::kCache;
  // One mesh link (between adjacent stops, per direction) and one hop; optional in a file, needed to simulate.
  std::optional<double> link_bandwidth_Bps;
  std::optional<double> hop_latency_s;
  Sources sources;             // of the mesh object's numbers
  Sources controller_sources;  // of the controller position lists
};

// One PCIe connection: `lanes` wide, `bandwidth_Bps` per direction.
struct PcieLink {
  int lanes = 0;
  double bandwidth_Bps = 0;
  Sources sources;
};

// A PCIe switch. `parent` is "host" (the CPU's root complex) or the name of another switch. Its `devices`
// accelerators hang directly below it, each through `device_link`.
struct PcieSwitch {
  std::string name;
  std::string model;
  std::string parent;
  int lanes = 0;
  std::optional<int> ports;  // switch ports (uplink included), where the source gives them
  PcieLink uplink;
  int devices = 0;
  std::optional<PcieLink> device_link;  // present iff devices > 0
  Sources sources;
};

// The PCIe tree of a multi-GPU node. Devices are numbered 0.. in order: first those attached to the host
// directly, then those below each switch in the order the switches are listed.
struct PcieTree {
  std::optional<int> host_lanes;  // lanes of the root complex, where known; checked against what hangs from it
  int host_devices = 0;
  std::optional<PcieLink> host_device_link;  // present iff host_devices > 0
  std::vector<PcieSwitch> switches;
  Sources sources;
};

// The topology inside a node: none described (monostate), a KNL mesh, or a PCIe tree.
using IntraNode = std::variant<std::monostate, KnlMesh, PcieTree>;

// --- links between a node's devices, and its NICs -------------------------------------------------------------
// Besides (or instead of) a PCIe tree, a node's devices may have their own links: NVLink pairs or one NVSwitch
// fabric; and a node may have several NICs, each serving some of its devices. docs/platform-schema.md, "Devices'
// links and NICs", gives the routing rules simulate/ follows.

// `links` bonded NVLinks between devices a and b, each `bandwidth_Bps` per direction; a message between the two
// takes latency_s + n / (links x bandwidth_Bps).
struct NvLinkPair {
  int a = 0;
  int b = 0;
  int links = 1;
  double bandwidth_Bps = 0;  // one link, per direction
  double latency_s = 0;
  Sources sources;  // of bandwidth_Bps and latency_s where the pair sets its own; else NvLinkMesh's apply

  double pair_bandwidth_Bps() const { return links * bandwidth_Bps; }
};

// Point-to-point NVLinks between a node's devices (DGX-1's hybrid cube mesh).
struct NvLinkMesh {
  std::vector<NvLinkPair> pairs;  // each unordered pair at most once
  // The values of the pairs that do not set their own (JSON `bandwidth_Bps`, `latency_s` beside `pairs`).
  std::optional<double> bandwidth_Bps;
  std::optional<double> latency_s;
  std::optional<int> links_per_device;  // NVLink ports of a device, where given: no device uses more
  // Whether a message between two devices without a direct link crosses other devices' NVLinks (the fewest hops:
  // NCCL's paths through an intermediate GPU). false: it takes the PCIe tree and the host, as CUDA peer copies do.
  bool route_through_devices = false;
  Sources sources;
};

// Every device of a node on one NVLink switch fabric (DGX-2, DGX A100): a message between two devices takes
// latency_s + n / bandwidth_Bps, and a device's messages share its bandwidth_Bps each way.
struct NvSwitch {
  double bandwidth_Bps = 0;  // one device's, per direction
  double latency_s = 0;      // device to device
  Sources sources;
};

// A node's network interfaces, when it has several (DGX-1: 4 EDR InfiniBand, DGX A100: 8 HDR). NIC i carries
// the inter-node traffic of devices[i] (every device exactly once; the CPU's goes through NIC 0), each NIC with the
// network link's latency and bandwidth_Bps (absent: the link's). A NIC hangs from pcie_switches[i] of the node's
// PCIe tree ("host": the root complex; empty list: every NIC on the root complex).
struct Nics {
  int count = 0;
  std::optional<double> bandwidth_Bps;  // per NIC, per direction
  std::vector<std::vector<int>> devices;
  std::vector<std::string> pcie_switches;
  Sources sources;

  // The NIC device `device`'s traffic leaves through.
  int nic_of_device(int device) const;
};

// --- links ----------------------------------------------------------------------------------------------------

// One message-size range of a piecewise link: a message of n >= min_bytes bytes (below the next segment's
// min_bytes) takes latency_s + n / bandwidth_Bps. latency_s may be 0 (a fit through the origin).
struct LinkSegment {
  double min_bytes = 0;
  double latency_s = 0;
  double bandwidth_Bps = 0;
  Sources sources;
};

// An alpha-beta point-to-point link model: a message of n bytes between two nodes takes
// latency_s + n / bandwidth_Bps (beta = 1 / bandwidth_Bps seconds per byte). End to end, as a ping-pong measures
// it; how a SimGrid builder splits it over hops is simulate/'s business.
//
// A calibrated link may also be piecewise (`segments`, ordered by min_bytes, the first at 0): then a message of n
// bytes uses the last segment with min_bytes <= n, because measured transports change regime with the size (eager
// and rendezvous protocols, caches). latency_s and bandwidth_Bps stay the link's representative values, used by
// the closed-form costs and summaries.
struct Link {
  std::string name;
  std::string description;
  double latency_s = 0;
  double bandwidth_Bps = 0;
  Sources sources;
  std::vector<LinkSegment> segments;  // empty: latency_s and bandwidth_Bps hold for every size

  // The segment an n-byte message uses; nullptr for a link without segments.
  const LinkSegment* segment_for(double bytes) const {
    const LinkSegment* found = nullptr;
    for (const auto& segment : segments) {
      if (segment.min_bytes <= bytes) found = &segment;
    }
    return found;
  }
  // Latency and bandwidth an n-byte message sees.
  double latency_s_for(double bytes) const {
    const LinkSegment* segment = segment_for(bytes);
    return segment ? segment->latency_s : latency_s;
  }
  double bandwidth_Bps_for(double bytes) const {
    const LinkSegment* segment = segment_for(bytes);
    return segment ? segment->bandwidth_Bps : bandwidth_Bps;
  }
  // One-way time of an n-byte message: latency + n / bandwidth of its segment.
  double message_s(double bytes) const { return latency_s_for(bytes) + bytes / bandwidth_Bps_for(bytes); }
};

// Consecutive nodes that are the cores of one chip, for a platform that models each core as a node of its own (a
// calibrated machine: one host per rank). The cores share the chip's boost clock, caches and memory bandwidth, so a
// core computes faster while the others are idle: at `alone`, against the CPU's kernel_efficiency with every core
// busy. A rank that is not computing (waiting for a message) still takes `waiting_share` of a core: dsgd's MPI
// ranks poll for a millisecond and then sleep between polls, threads sleep. With the chip's load
// k = computing ranks + waiting_share x its other ranks, a step takes
//   alone time + (busy time - alone time) x (min(k, cores) - 1) / (cores - 1),   times k / cores beyond the cores
// (more ranks than cores take turns). simulate/compute_cost.hpp computes it; the SimGrid levels apply it.
//
// A transfer between two ranks of the chip needs both on a core. While the chip's other ranks compute on all but
// fewer than two of its cores, the pair shares cores with them and the operating system's time slices may set its
// pace: then a message costs `loaded_link`'s time (a ping-pong measured beside computing ranks) instead of the
// network link's. The SimGrid levels choose the link per message from the steps running when it starts.
struct SharedChip {
  int nodes = 0;                    // nodes per chip; node n is on chip n / nodes
  int cores = 0;                    // physical cores of the chip (may be fewer than `nodes`: an oversubscribed machine)
  double waiting_share = 0;         // in [0, 1]; optional in JSON (0)
  KernelEfficiency alone;           // JSON `kernel_efficiency_alone`
  std::optional<Link> loaded_link;  // JSON `loaded_link`, optional (none: the network link always)
  Sources sources;
};

// `count` identical nodes.
struct Nodes {
  int count = 0;
  Cpu cpu;
  std::vector<Memory> memories;
  std::vector<DeviceGroup> devices;
  IntraNode intra_node;
  std::optional<NvLinkMesh> nvlink;       // JSON `nvlink`, optional; never with nvswitch
  std::optional<NvSwitch> nvswitch;       // JSON `nvswitch`, optional
  std::optional<Nics> nics;               // JSON `nics`, optional: absent, one NIC (the network link) per node
  std::optional<SharedChip> shared_chip;  // JSON `shared_chip`, optional
  Sources sources;

  int devices_per_node() const;
  // The smallest stated memory of the nodes' devices, in bytes; 0 without devices or sizes.
  std::uint64_t device_memory_bytes() const;
  // CPU peak plus every device's peak, FLOP/s.
  double peak_flops_per_node() const;
};

// --- network --------------------------------------------------------------------------------------------------

// Every node on its own link to one switch (SimGrid's flat cluster).
struct StarTopology {
  friend bool operator==(const StarTopology&, const StarTopology&) = default;
};

// SimGrid's fat tree "levels;down;up;link_counts": per level, children per switch, parents per switch, and
// parallel links between a switch and each parent.
struct FatTreeTopology {
  std::vector<int> down;
  std::vector<int> up;
  std::vector<int> link_counts;
  friend bool operator==(const FatTreeTopology&, const FatTreeTopology&) = default;
};

// SimGrid's dragonfly "groups,group_links;chassis,chassis_links;routers,router_links;nodes" (Cray's blue, black
// and green levels). SimGrid 3.32 attaches every blue link to chassis 0, so groups <= routers_per_chassis.
struct DragonflyTopology {
  int groups = 0;
  int group_links = 0;
  int chassis_per_group = 0;
  int chassis_links = 0;
  int routers_per_chassis = 0;
  int router_links = 0;
  int nodes_per_router = 0;
  friend bool operator==(const DragonflyTopology&, const DragonflyTopology&) = default;
};

// A torus of the given dimensions, one node per position.
struct TorusTopology {
  std::vector<int> dimensions;
  friend bool operator==(const TorusTopology&, const TorusTopology&) = default;
};

enum class TopologyKind { kStar, kFatTree, kDragonfly, kTorus };

struct Topology {
  std::variant<StarTopology, FatTreeTopology, DragonflyTopology, TorusTopology> shape;
  // The fabric's own links (switch to switch, router to router; for a star, the shared backbone). Absent: the
  // fabric is not a bottleneck and adds no latency beyond the node link's.
  std::optional<double> link_bandwidth_Bps;
  std::optional<double> link_latency_s;
  Sources sources;  // of every number in the topology object (shape parameters included)

  TopologyKind kind() const { return static_cast<TopologyKind>(shape.index()); }
};

struct Network {
  Link link;  // per node: end-to-end alpha and bandwidth between two nodes
  Topology topology;
};

// --- noise ------------------------------------------------------------------------------------------------------

enum class NoiseDistribution { kNone, kNormal, kLognormal, kUniform };

// Run-to-run spread of compute times: each compute step's duration is multiplied by a factor of mean 1.
//   normal:    factor ~ N(1, spread^2), spread = relative standard deviation (JSON `relative_stddev`)
//   lognormal: factor = exp(N(-spread^2/2, spread^2)), spread = sigma of log(factor) (JSON `sigma`)
//   uniform:   factor ~ U(1 - spread, 1 + spread) (JSON `relative_half_width`)
// With a correlation time (JSON `correlation_s`), a node stays fast or slow for about that long: its factor is the
// distribution's quantile of a standard normal that follows an Ornstein-Uhlenbeck process in simulated time
// (correlation exp(-dt / correlation_s) between steps dt apart). 0: independent draws per compute step.
// A node that computes slower (or faster) than the others by a constant factor, on top of the spread: a straggler
// of an asynchronous study.
struct Straggler {
  int node = 0;
  double slowdown = 1;  // compute times multiplied by this (> 0)
};
struct Noise {
  NoiseDistribution distribution = NoiseDistribution::kNone;
  double spread = 0;
  double correlation_s = 0;
  std::vector<Straggler> stragglers;  // at most one per node
  std::string description;
  Sources sources;
};

// --- the platform -----------------------------------------------------------------------------------------------

struct Platform {
  std::string name;
  std::string description;
  Nodes nodes;
  Network network;
  Noise noise;
};

// Names used in files and messages ("quadrant", "dragonfly", ...), and the full lists for "valid values are".
std::string_view to_string(ClusterMode mode);
std::string_view to_string(McdramMode mode);
std::string_view to_string(TopologyKind kind);
std::string_view to_string(NoiseDistribution distribution);
const std::vector<std::string>& cluster_mode_names();
const std::vector<std::string>& mcdram_mode_names();
const std::vector<std::string>& topology_names();
const std::vector<std::string>& noise_distribution_names();

// How many nodes the topology can hold; nullopt for a star (any number).
std::optional<std::int64_t> topology_capacity(const Topology& topology);

// What a kernel model's efficiency rests on, from its source: the text after the "FITTED: " a fitted value's source
// opens with (`fitted` true), else the source itself, or "the platform's value" where it has none.
struct EfficiencyBasis {
  std::string text;
  bool fitted = false;
};
EfficiencyBasis efficiency_basis(const KernelModel& model);

// The topology in SimGrid's string form ("16,16;6,3;16,1;4" for a dragonfly, "2;4,4;1,2;1,2" for a fat tree,
// "4,4,4" for a torus, "" for a star), for simulate/'s builder and for messages.
std::string simgrid_topology_string(const Topology& topology);

}  // namespace dsgd::platforms
