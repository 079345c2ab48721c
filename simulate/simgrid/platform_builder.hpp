#pragma once
// Turns a dsgd platform description (platforms/platform.hpp) into SimGrid hosts, links and routes.
//
// Between nodes (Network::topology):
//  * star: every node has a private split-duplex link of latency alpha/2 and the node link's bandwidth, so a
//    message of n bytes between two nodes costs alpha + n / bandwidth end to end (tests hold SimGrid to it); a
//    backbone (Topology::link_bandwidth_Bps / link_latency_s) adds one shared link crossed once per message.
//  * fat_tree, dragonfly, torus: SimGrid's own cluster zones, whose fabric links get the topology's link bandwidth
//    and latency (absent: the node link's bandwidth and no latency). Every node is then a zone whose route to the
//    fabric ends with the node's own split-duplex link (alpha/2, the node link's bandwidth), so a message costs
//    alpha + the fabric's hops (SimGrid's cluster zones also put a fabric link between a node and its router). Only the
//    leaves that hold ranks are built as nodes; a dragonfly is built with only the groups (and, within one group, the
//    chassis) the ranks occupy: minimal routes between occupied nodes never leave them, so the times are those of the
//    whole machine.
// Inside a node (Nodes::intra_node):
//  * none: the node is one host at the CPU's peak; one rank per node.
//  * knl_mesh: core level. A rank is a group of cores (by default one core) on the tile of its first core; tiles
//    take the stops the controllers leave, row-major. Adjacent stops are joined by split-duplex mesh links
//    (KnlMesh::link_bandwidth_Bps, hop_latency_s); routes are dimension-ordered (X, then Y). Messages between
//    ranks of a node go through memory: from the sender's stop to an MCDRAM controller, then to the receiver's
//    stop; each controller is a shared link of (MCDRAM bandwidth / controllers). Quadrant and all-to-all modes
//    use the controller nearest the sender; SNC-4 the nearest one in the receiver's quadrant (its NUMA node's
//    memory). Traffic leaving the node enters at the NIC stop (top row, middle column: the PCIe root of the die).
//  * devices (with a pcie_tree, NVLink pairs or an NVSwitch, or none of them): the CPU is one host and every device
//    one host; every PCIe connection, NVLink pair and NVSwitch port is a split-duplex link of its bandwidth (and
//    latency), laid out by device_node_layout(). Devices talk over their NVSwitch; else over their NVLink pair;
//    else over the fewest NVLink hops if the platform routes through devices (NCCL's paths through an
//    intermediate GPU); else over the PCIe tree and the root complex, as CUDA peer copies between GPUs that are
//    not NVLink neighbours do (on a DGX-1 across the CPUs' QPI, not modelled). The CPU talks over the tree.
//    Traffic leaving the node goes up the tree to where the unit's NIC hangs (the root complex without
//    platforms::Nics) and out through that NIC's link (alpha / 2, the NIC's bandwidth); a node with several NICs
//    holds their links itself, so a star joins it through a free link.
// Ranks fill the compute units of node 0, then node 1, ...: cores (or groups of them) of a mesh, devices of a
// node with devices (PlacementOptions::master_on_host puts rank 0 on node 0's CPU), else the node itself;
// RankSite::node says which node a rank is on. docs/platform-schema.md, "Devices' links and NICs", has the rules.
//
// SimGrid's types stay out of this header (the simulate library links SimGrid privately).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "platforms/kernel_profile.hpp"
#include "platforms/platform.hpp"
#include "simulate/kernel_cost.hpp"

namespace simgrid::s4u {
class Host;
}  // namespace simgrid::s4u

namespace dsgd::simulate {

// Where ranks go on a platform's nodes.
struct PlacementOptions {
  // Ranks per node: 0 takes one per compute unit (a core of a KNL mesh, a device of a node with devices, else
  // 1). On a KNL mesh a smaller number makes groups of cores (seed 000 Fig 12's chip partitions): rank k of a node
  // gets cores [k c / g, (k + 1) c / g).
  int ranks_per_node = 0;
  // Rank 0 on node 0's CPU and the others on devices, as the master of seed 000's multi-GPU algorithms.
  bool master_on_host = false;
  // With master_on_host: ranks 0..host_ranks-1 on the CPUs of nodes 0..host_ranks-1 (a parameter server sharded over
  // S servers, one per node as ps-lite deployments colocate them), the workers on devices from node 0 on.
  int host_ranks = 1;
};

// What a rank computes on and how fast.
struct RankSite {
  int node = 0;
  int unit_index = 0;     // which unit of its node: core group or device number; -1 for the CPU
  std::string unit;       // "cpu", "cores 0-16", "device 3"
  double peak_flops = 0;  // of its unit
  platforms::KernelEfficiency efficiency;
  double memory_bandwidth_Bps = 0;  // its share of the memory it works in (0: memory traffic is free)
  double copy_bandwidth_Bps = 0;    // where its batches come from: PCIe for a device, memory otherwise
  // On a shared chip (platforms::SharedChip; a rank owning a node's CPU): the chip's index and cores, and the
  // efficiencies with the chip's other cores idle. chip -1: none, the rank computes at `efficiency` always.
  int chip = -1;
  int chip_cores = 0;
  int chip_ranks = 0;             // ranks placed on the chip
  double chip_waiting_share = 0;  // of a core, taken by a rank of the chip that is not computing

  platforms::KernelEfficiency efficiency_alone;

  // Where its processor describes how it runs kernels (platforms::KernelModel): the rank's share of it, for pricing
  // a step's layer kernels by shape (simulate/kernel_cost.hpp).
  std::optional<KernelMachine> kernels;
  // Where its processor holds measured per-layer times (platforms/kernel_profile.hpp): they price the kernels they
  // cover, looked up at the rank's CPU threads (0 on a device).
  std::shared_ptr<const platforms::KernelProfile> profile;
  int threads = 0;
  // The node's CPU's rate for tagging and checking datagrams (platforms::Cpu::datagram_Bps); 0: free.
  double datagram_Bps = 0;
};

// Throws unless `ranks` can be placed on `platform`:
//  * InputError for ranks < 1, more ranks than the platform's units, ranks_per_node beyond a node's units or on a
//    node without a mesh, a non-positive link bandwidth, negative latency or non-positive peak, link segments
//    that are not as the loader requires, a mesh without link_bandwidth_Bps / hop_latency_s, master_on_host on
//    a platform without devices; NVLink pairs, an NVSwitch or NICs that would make no SimGrid link.
// Needs no SimGrid engine, so the executor checks before it starts one.
void check_simulatable(const platforms::Platform& platform, int ranks, const PlacementOptions& placement = {});

// False for a platform SimGrid 3.32 cannot build though its description is valid: a dragonfly of more groups than
// routers per chassis. The analytic level needs no SimGrid platform and takes those too. The check throws
// InputError saying so.
bool simgrid_can_build(const platforms::Platform& platform);
void check_simgrid_can_build(const platforms::Platform& platform);

// The bandwidth of the PCIe connection of device `device` of a node (numbered as platforms::PcieTree says), per
// direction; 0 where the node has no PCIe tree or no such device.
double device_link_Bps(const platforms::Platform& platform, int device);

// A rank's `share` of a processor that describes how it runs kernels (`model`; none without one): its units, tile
// and costs, with its cache (kernel scope) and `memories` (iteration scope, fastest first) as tiers; capacities and
// bandwidths are shared out like the units. A memory without a stated size holds anything. `peak_flops` is the
// rank's share of the peak already.
std::optional<KernelMachine> kernel_machine(const std::optional<platforms::KernelModel>& model, double peak_flops,
                                            double share, const std::vector<platforms::Memory>& memories);

// The sites of `ranks` ranks (no SimGrid needed).
std::vector<RankSite> place_ranks(const platforms::Platform& platform, int ranks,
                                  const PlacementOptions& placement = {});

// Ranks on each full node: PlacementOptions::ranks_per_node, or one per compute unit when that is 0.
int ranks_per_node(const platforms::Platform& platform, const PlacementOptions& placement);

// How many ranks fit on `platform` with `placement`.
long long rank_capacity(const platforms::Platform& platform, const PlacementOptions& placement = {});

// The mesh's geometry, for tests and reports: the stop of group `group` of `groups` per node, the NIC's stop, the
// dimension-ordered path between two stops (one hop per adjacent pair), and the MCDRAM controller (index into
// KnlMesh::mcdram_controllers) a message from `from` to `to` goes through.
using platforms::MeshStop;
struct MeshHop {
  MeshStop from;
  MeshStop to;
};
MeshStop rank_stop(const platforms::Platform& platform, int group, int groups);
MeshStop nic_stop(const platforms::KnlMesh& mesh);
// The dimension-ordered route between two stops of any 2-D mesh: along x first, then y (the KNL mesh and
// simulate/mesh_sharing.hpp's chip both route so).
std::vector<MeshHop> xy_route(MeshStop from, MeshStop to);
int memory_controller(const platforms::KnlMesh& mesh, MeshStop from, MeshStop to);

// The memory the ranks of a KNL node work in, whose controllers carry its messages: MCDRAM if the node has it (seed
// 000 keeps weights and data there), else the fastest memory; bytes per second over all its controllers.
double mesh_memory_Bps(const platforms::Platform& platform);

// A node's PCIe tree as elements: element 0 is the root complex (the CPU and the NIC hang from it, crossing it is
// free), every other one a device or a switch with the connection to its parent.
struct PcieElement {
  int parent = 0;
  const platforms::PcieLink* link = nullptr;  // the connection to the parent
  std::string label;                          // "host-dev0", "sw0-up", "sw0-dev2"
};
struct PcieLayout {
  std::vector<PcieElement> elements;
  std::vector<int> device_element;            // per device, numbered as platforms::PcieTree says
  std::map<std::string, int> switch_element;  // per switch name; "host" is element 0
  // The elements whose connections a route from element a to element b crosses: up from a to (not including)
  // their lowest common ancestor, then down from it to b.
  std::pair<std::vector<int>, std::vector<int>> route(int a, int b) const;
};
PcieLayout pcie_layout(const platforms::PcieTree& tree);

// A node with devices as connections and the routes over them: its PCIe tree, its devices' NVLinks or NVSwitch,
// and where each unit's traffic leaves for its NIC. build_platform() wires exactly these in SimGrid and
// simulate/analytic/route_model.hpp prices them in closed form, so both take the same routes. Units are the
// devices (numbered as platforms::PcieTree says), then the CPU.
struct NodeConnection {
  std::string label;         // "sw0-up", "nvlink-0-4", "nvswitch-dev3"
  double bandwidth_Bps = 0;  // per direction
  double latency_s = 0;
};
// A connection crossed one way: forward goes from its first end to its second (a PCIe element to its parent,
// device a to device b of an NVLink pair, a device to the NVSwitch).
struct NodeHop {
  int connection = 0;
  bool forward = true;
};
using NodeRoute = std::vector<NodeHop>;
struct DeviceNodeLayout {
  std::vector<NodeConnection> connections;
  // [from unit][to unit]; empty: the two meet at the root complex, which is free to cross. The route from b to a
  // is the route from a to b backwards.
  std::vector<std::vector<NodeRoute>> between;
  std::vector<NodeRoute> to_nic;  // per unit: to where its NIC hangs (the NIC's own link not included)
  std::vector<int> nic;           // per unit: the NIC its traffic leaves through (always 0 with one NIC)
};
// Device to device: over their NVSwitch; over their NVLink pair; without one, over the fewest NVLink hops when the
// platform routes through devices (ties: the path through the lowest-numbered devices); else over the PCIe tree.
// CPU to device: the PCIe tree. A node without a PCIe tree has free routes where the tree would be (no latency,
// no bandwidth limit). Throws InternalError if the platform's nodes have no devices.
DeviceNodeLayout device_node_layout(const platforms::Platform& platform);

// Builds the platform in the running SimGrid engine (one per process: see simulate/simgrid/executor.hpp) and
// returns the host of each rank. Calls check_simulatable first. Must be called before Engine::run().
std::vector<::simgrid::s4u::Host*> build_platform(const platforms::Platform& platform, int ranks,
                                                  const PlacementOptions& placement = {});

// Makes every message between two hosts of `platform` cost its link segment's latency + n / bandwidth (plus the
// backbone's latency, and capped by the backbone's bandwidth, where the topology has one), through SimGrid's
// network factor callbacks on the root netzone's network model: SimGrid multiplies a message's route latency by the
// latency factor and the rate its bottleneck link allows by the bandwidth factor, so the factors are the segment's
// values over the route's. Does nothing for a link without segments. Call after build_platform(), before
// Engine::run(). SimGrid takes either a model's configured factors or callbacks, not both, and the callbacks
// replace LV08's and SMPI's own size-dependent factors: the executor installs them under CM02 only, the pure
// alpha-beta model the segments describe.
//
// Where the platform has a shared chip with a loaded link (platforms::SharedChip::loaded_link) and `shares_cores`
// is given, a message for which shares_cores(source host, destination host) holds as it starts costs the loaded
// link's segment instead (World::transfer_shares_cores).
using SharesCores = std::function<bool(const ::simgrid::s4u::Host*, const ::simgrid::s4u::Host*)>;
void install_segment_factors(const platforms::Platform& platform, const SharesCores& shares_cores = {});

// A flat alpha-beta star of `nodes` identical nodes, for tests and calibration: a message of n bytes between two
// nodes costs latency_s + n / bandwidth_Bps, and a node computes `flops` FLOP/s. No memories, devices or noise.
// Throws InputError for nodes < 1, latency_s < 0, bandwidth_Bps <= 0 or flops <= 0.
platforms::Platform flat_platform(int nodes, double latency_s, double bandwidth_Bps, double flops);

}  // namespace dsgd::simulate
