#include "simulate/mesh_sharing.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <new>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <string>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "core/stopwatch.hpp"
#include "simulate/forked.hpp"
#include "simulate/simgrid/engine_settings.hpp"

namespace dsgd::simulate {

namespace s4u = ::simgrid::s4u;

namespace {

std::string shape_of(const MeshOptions& mesh) {
  return "mesh of " + std::to_string(mesh.cores) + " cores (" + std::to_string(mesh.columns) + " x " +
         std::to_string(mesh.rows) + " stops, " + std::to_string(mesh.cores_per_stop) + " cores per stop)";
}

// --- one simulation in a forked child --------------------------------------------------------------------------
// Each simulation runs in a child process (simulate/forked.hpp) that starts the process's only SimGrid engine, runs
// the body and sends back its numbers.

enum class Report : char { kValues = 'V', kError = 'E' };

// Starts the engine, SimGrid silent. kFlowPerOwner: the pure alpha-beta flow model (CM02 without cross traffic or
// TCP window), solved in full at every event: every flow shares a link with some other, so the mesh is one system
// that the lazy update re-solves whole anyway, at more bookkeeping (Full is ~1.7 times faster here).
// kTaskPerPhase: the parallel-task model (ptask_L07), alpha-beta too. Two precisions are SimGrid's defaults scaled
// to this chip. SimGrid's time precision (1e-9 s) is about one hop here: 1e-15 s keeps event times exact (without it
// pass times move by ~0.05%). Links carry ~1e11 B/s, whose rounding leaves ~1e-5 B/s in a saturated link -- what the
// default rate precision (1e-5, absolute) takes for spare capacity, and aborts on (64 cores do it): 1e-13 of a
// link's bandwidth is far above that and still exact.
void start_engine(double link_Bps, TransferModel model) {
  char rate_precision[64];
  std::snprintf(rate_precision, sizeof rate_precision, "--cfg=maxmin/precision:%g", 1e-13 * link_Bps);
  std::vector<std::string> arguments = {"dsgd-mesh-sharing", "--cfg=surf/precision:1e-15", rate_precision,
                                        "--log=root.thres:critical", "--log=root.app:file:/dev/null"};
  if (model == TransferModel::kTaskPerPhase) {
    arguments.emplace_back("--cfg=host/model:ptask_L07");
  } else {
    for (const char* setting : {"--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
                                "--cfg=network/optim:Full"}) {
      arguments.emplace_back(setting);
    }
  }
  add_sanitizer_settings(arguments);
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(arguments.size());
  // Never destroyed: the child exits with _exit() right after its report.
  new s4u::Engine(&argc, argv.data());
}

// The child's report: kValues and the numbers `body` returned, or kError and what it failed with.
std::string report_of(double link_Bps, TransferModel model, const std::function<std::vector<double>()>& body) {
  try {
    start_engine(link_Bps, model);
    const std::vector<double> values = body();
    std::string report(1, static_cast<char>(Report::kValues));
    report.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
    return report;
  } catch (const std::bad_alloc&) {
    return std::string(1, static_cast<char>(Report::kError)) + out_of_memory_text();
  } catch (const std::exception& error) {
    return std::string(1, static_cast<char>(Report::kError)) + error.what();
  } catch (...) {
    return std::string(1, static_cast<char>(Report::kError)) + "unknown exception";
  }
}

// Runs `body` in a child process with its own SimGrid engine, set up for links of `link_Bps` and `model`, and
// returns the numbers it returned. `what` names the simulation in errors.
std::vector<double> run_forked(const std::string& what, double link_Bps, TransferModel model, double wall_timeout_s,
                               const std::function<std::vector<double>()>& body) {
  const ForkedOutcome outcome =
      run_forked_child(what, wall_timeout_s, [&] { return report_of(link_Bps, model, body); });
  const bool timed_out = outcome.timed_out;
  const int status = outcome.status;
  const std::string& report = outcome.report;
  if (timed_out) throw TimeoutError(what + " ran past its wall-time limit of " + significant(wall_timeout_s) + " s");
  if (WIFSIGNALED(status)) {
    throw InternalError(what + ": the simulation process died of signal " + std::to_string(WTERMSIG(status)));
  }
  if (report.empty()) throw InternalError(what + ": the simulation process exited without a report");
  if (report[0] == static_cast<char>(Report::kError)) {
    std::string message = report.substr(1);
    std::replace(message.begin(), message.end(), '\n', ' ');  // SimGrid's messages may span lines; ours do not
    throw InternalError(what + ": " + message);
  }
  const std::size_t count = (report.size() - 1) / sizeof(double);
  DSGD_ENFORCE((report.size() - 1) % sizeof(double) == 0, what + ": a truncated report");
  std::vector<double> values(count);
  std::memcpy(values.data(), report.data() + 1, count * sizeof(double));
  return values;
}

// --- the chip in SimGrid --------------------------------------------------------------------------------------

double mesh_link_Bps(const MeshOptions& mesh) { return mesh.link_bytes_per_cycle * mesh.clock_Hz; }

int stop_index(const MeshOptions& mesh, MeshStop stop) { return stop.y * mesh.columns + stop.x; }

// Builds the chip in the running engine and returns one host per core, whose speed is the clock: work is cycles.
std::vector<s4u::Host*> build_mesh(const MeshOptions& mesh) {
  const double bandwidth_Bps = mesh_link_Bps(mesh);
  const double hop_s = mesh.hop_cycles / mesh.clock_Hz;
  const double local_s = mesh.local_cycles / mesh.clock_Hz;
  const int stops = mesh.columns * mesh.rows;
  auto* zone = s4u::create_full_zone("mesh");

  std::vector<s4u::Host*> hosts;
  hosts.reserve(static_cast<std::size_t>(mesh.cores));
  for (int core = 0; core < mesh.cores; ++core) {
    hosts.push_back(zone->create_host("core-" + std::to_string(core), mesh.clock_Hz));
  }
  // Per stop: the link to its east neighbour (UP = towards +x), to its south neighbour (UP = towards +y), and the
  // local link of its cores (UP = from the lower core to the higher one).
  std::vector<s4u::Link*> east(static_cast<std::size_t>(stops), nullptr);
  std::vector<s4u::Link*> south(static_cast<std::size_t>(stops), nullptr);
  std::vector<s4u::Link*> local(static_cast<std::size_t>(stops), nullptr);
  for (int y = 0; y < mesh.rows; ++y) {
    for (int x = 0; x < mesh.columns; ++x) {
      const auto s = static_cast<std::size_t>(stop_index(mesh, {x, y}));
      const std::string at = std::to_string(x) + "-" + std::to_string(y);
      if (x + 1 < mesh.columns) {
        east[s] = zone->create_split_duplex_link("east-" + at, bandwidth_Bps)->set_latency(hop_s)->seal();
      }
      if (y + 1 < mesh.rows) {
        south[s] = zone->create_split_duplex_link("south-" + at, bandwidth_Bps)->set_latency(hop_s)->seal();
      }
      if (mesh.cores_per_stop > 1) {
        local[s] = zone->create_split_duplex_link("local-" + at, bandwidth_Bps)->set_latency(local_s)->seal();
      }
    }
  }

  using Direction = s4u::LinkInRoute::Direction;
  for (int a = 0; a < mesh.cores; ++a) {
    for (int b = 0; b < mesh.cores; ++b) {
      if (a == b) continue;
      const MeshStop from = core_stop(mesh, a);
      const MeshStop to = core_stop(mesh, b);
      std::vector<s4u::LinkInRoute> links;
      if (from == to) {
        links.emplace_back(local[static_cast<std::size_t>(stop_index(mesh, from))],
                           a < b ? Direction::UP : Direction::DOWN);
      }
      for (const MeshHop& hop : mesh_route(mesh, from, to)) {
        const auto here = static_cast<std::size_t>(stop_index(mesh, hop.from));
        const auto there = static_cast<std::size_t>(stop_index(mesh, hop.to));
        if (hop.to.x > hop.from.x) links.emplace_back(east[here], Direction::UP);
        if (hop.to.x < hop.from.x) links.emplace_back(east[there], Direction::DOWN);
        if (hop.to.y > hop.from.y) links.emplace_back(south[here], Direction::UP);
        if (hop.to.y < hop.from.y) links.emplace_back(south[there], Direction::DOWN);
      }
      // Each direction gets its own route: the reverse of an XY route is a YX route, not the XY one.
      zone->add_route(hosts[static_cast<std::size_t>(a)]->get_netpoint(),
                      hosts[static_cast<std::size_t>(b)]->get_netpoint(), nullptr, nullptr, links,
                      /*symmetrical=*/false);
    }
  }
  zone->seal();
  return hosts;
}

// --- the sharing pattern ------------------------------------------------------------------------------------------

// One batch of one core, as the actors run it.
struct BatchPlan {
  double compute_cycles = 0;  // gradients + the dense write loop's instructions
  std::uint64_t read_bytes_per_owner = 0;
  std::uint64_t write_bytes_per_owner = 0;
  double stagger_s = 0;  // core c starts c x stagger_s late
  int batches = 0;       // warm-up + measured + cool-down
  int first_measured = 0;
  int measured = 0;
  TransferModel model = TransferModel::kTaskPerPhase;
  int cores_per_stop = 1;
};

// Waits for `bytes` from every other core, all transfers at once.
void pull_from_all(const std::vector<s4u::Host*>& hosts, int cores_per_stop, int core, std::uint64_t bytes,
                   TransferModel model) {
  if (bytes == 0) return;
  const std::size_t cores = hosts.size();
  const auto me = static_cast<std::size_t>(core);
  if (model == TransferModel::kTaskPerPhase) {
    // One parallel task over every core: only the column of this core (bytes from each owner to it) is non-zero.
    std::vector<double> matrix(cores * cores, 0.0);
    for (std::size_t owner = 0; owner < cores; ++owner) {
      if (owner != me) matrix[owner * cores + me] = static_cast<double>(bytes);
    }
    s4u::this_actor::parallel_execute(hosts, std::vector<double>(cores, 0.0), matrix);
    return;
  }
  // The owners of one other stop share their route to this core, start together and move as much: under max-min
  // sharing their flows run at the same rate throughout, so one flow of their bytes together is the same thing at
  // a fraction of the solver's work. Owners on this core's own stop each have their direction of the local link.
  std::vector<s4u::CommPtr> transfers;
  transfers.reserve(cores - 1);
  const auto my_stop = me / static_cast<std::size_t>(cores_per_stop);
  for (std::size_t first = 0; first < cores; first += static_cast<std::size_t>(cores_per_stop)) {
    if (first / static_cast<std::size_t>(cores_per_stop) != my_stop) {
      transfers.push_back(
          s4u::Comm::sendto_async(hosts[first], hosts[me], bytes * static_cast<std::uint64_t>(cores_per_stop)));
      continue;
    }
    for (std::size_t owner = first; owner < first + static_cast<std::size_t>(cores_per_stop); ++owner) {
      if (owner != me) transfers.push_back(s4u::Comm::sendto_async(hosts[owner], hosts[me], bytes));
    }
  }
  s4u::Comm::wait_all(transfers);
}

// The body of core `core`'s actor: adds its measured batches' compute, read and write seconds to sums[3 core ...].
void run_core(const std::vector<s4u::Host*>& hosts, const BatchPlan& plan, int core, std::vector<double>& sums) {
  if (plan.stagger_s > 0) s4u::this_actor::sleep_for(plan.stagger_s * core);
  for (int batch = 0; batch < plan.batches; ++batch) {
    const double start_s = s4u::Engine::get_clock();
    // (a) the batch's gradients (and the write loop's instructions).
    if (plan.compute_cycles > 0) s4u::this_actor::execute(plan.compute_cycles);
    const double computed_s = s4u::Engine::get_clock();
    // (b) every line the samples read comes from the core that last wrote it.
    pull_from_all(hosts, plan.cores_per_stop, core, plan.read_bytes_per_owner, plan.model);
    const double read_s = s4u::Engine::get_clock();
    // (c) ownership of every line of the model, from its current owners, before the dense write.
    pull_from_all(hosts, plan.cores_per_stop, core, plan.write_bytes_per_owner, plan.model);
    const double written_s = s4u::Engine::get_clock();
    if (batch >= plan.first_measured && batch < plan.first_measured + plan.measured) {
      const auto at = 3 * static_cast<std::size_t>(core);
      sums[at] += computed_s - start_s;
      sums[at + 1] += read_s - computed_s;
      sums[at + 2] += written_s - read_s;
    }
  }
}

std::uint64_t rounded_bytes(double bytes) { return static_cast<std::uint64_t>(std::llround(bytes)); }

}  // namespace

MeshOptions seed003_mesh(int cores) {
  if (cores < 1) throw InputError("seed003_mesh: cores must be >= 1, got " + std::to_string(cores));
  if (cores > 1 && cores % 2 != 0) {
    throw InputError("seed003_mesh: seed 003's chip has 2 cores per stop, so cores must be 1 or even, got " +
                     std::to_string(cores));
  }
  MeshOptions mesh;
  mesh.cores = cores;
  mesh.cores_per_stop = cores == 1 ? 1 : 2;
  const int stops = cores / mesh.cores_per_stop;
  // The most nearly square grid: the largest divisor of `stops` not above its square root is the rows.
  int rows = 1;
  for (int r = 1; r * r <= stops; ++r) {
    if (stops % r == 0) rows = r;
  }
  mesh.rows = rows;
  mesh.columns = stops / rows;
  return mesh;
}

void check_mesh(const MeshOptions& mesh) {
  if (mesh.cores < 1) throw InputError("mesh: cores must be >= 1, got " + std::to_string(mesh.cores));
  if (mesh.cores_per_stop < 1) {
    throw InputError("mesh: cores_per_stop must be >= 1, got " + std::to_string(mesh.cores_per_stop));
  }
  if (mesh.cores % mesh.cores_per_stop != 0) {
    throw InputError("mesh: " + std::to_string(mesh.cores) + " cores is not a multiple of cores_per_stop " +
                     std::to_string(mesh.cores_per_stop));
  }
  if (mesh.columns < 1 || mesh.rows < 1) {
    throw InputError("mesh: columns and rows must be >= 1, got " + std::to_string(mesh.columns) + " x " +
                     std::to_string(mesh.rows));
  }
  const int stops = mesh.cores / mesh.cores_per_stop;
  if (static_cast<long long>(mesh.columns) * mesh.rows != stops) {
    throw InputError("mesh: " + std::to_string(mesh.cores) + " cores at " + std::to_string(mesh.cores_per_stop) +
                     " per stop need " + std::to_string(stops) + " stops, but columns x rows = " +
                     std::to_string(mesh.columns) + " x " + std::to_string(mesh.rows));
  }
  if (!(mesh.clock_Hz > 0)) throw InputError("mesh: clock_Hz must be > 0, got " + significant(mesh.clock_Hz));
  if (!(mesh.link_bytes_per_cycle > 0)) {
    throw InputError("mesh: link_bytes_per_cycle must be > 0, got " + significant(mesh.link_bytes_per_cycle));
  }
  if (!(mesh.hop_cycles >= 0)) throw InputError("mesh: hop_cycles must be >= 0, got " + significant(mesh.hop_cycles));
  if (!(mesh.local_cycles >= 0)) {
    throw InputError("mesh: local_cycles must be >= 0, got " + significant(mesh.local_cycles));
  }
}

MeshStop core_stop(const MeshOptions& mesh, int core) {
  if (core < 0 || core >= mesh.cores) {
    throw InputError("mesh: core " + std::to_string(core) + " outside 0.." + std::to_string(mesh.cores - 1));
  }
  const int stop = core / mesh.cores_per_stop;
  return {stop % mesh.columns, stop / mesh.columns};
}

std::vector<MeshHop> mesh_route(const MeshOptions& mesh, MeshStop from, MeshStop to) {
  for (const MeshStop& stop : {from, to}) {
    if (stop.x < 0 || stop.x >= mesh.columns || stop.y < 0 || stop.y >= mesh.rows) {
      throw InputError("mesh: stop (" + std::to_string(stop.x) + ", " + std::to_string(stop.y) + ") outside the " +
                       std::to_string(mesh.columns) + " x " + std::to_string(mesh.rows) + " grid");
    }
  }
  return xy_route(from, to);
}

std::vector<double> simulate_mesh_transfers(const MeshOptions& mesh, const std::vector<MeshTransfer>& transfers,
                                            TransferModel model) {
  check_mesh(mesh);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const MeshTransfer& transfer = transfers[i];
    const std::string which = "mesh transfer " + std::to_string(i);
    core_stop(mesh, transfer.from_core);
    core_stop(mesh, transfer.to_core);
    if (transfer.from_core == transfer.to_core) {
      throw InputError(which + ": from and to are the same core " + std::to_string(transfer.from_core));
    }
    if (!(transfer.start_s >= 0))
      throw InputError(which + ": start_s must be >= 0, got " + significant(transfer.start_s));
  }
  return run_forked("the transfers on the " + shape_of(mesh), mesh_link_Bps(mesh), model, 60, [&mesh, &transfers] {
    const std::vector<s4u::Host*> hosts = build_mesh(mesh);
    std::vector<double> end_s(transfers.size(), 0.0);
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const MeshTransfer transfer = transfers[i];
      s4u::Actor::create("transfer-" + std::to_string(i), hosts[static_cast<std::size_t>(transfer.to_core)],
                         [&hosts, &end_s, transfer, i] {
                           if (transfer.start_s > 0) s4u::this_actor::sleep_for(transfer.start_s);
                           s4u::Comm::sendto(hosts[static_cast<std::size_t>(transfer.from_core)],
                                             hosts[static_cast<std::size_t>(transfer.to_core)], transfer.bytes);
                           end_s[i] = s4u::Engine::get_clock();
                         });
    }
    s4u::Engine::get_instance()->run();
    return end_s;
  });
}

void check_pattern(const SharingPattern& pattern) {
  if (pattern.rows < 1) throw InputError("sharing pattern: rows must be >= 1, got " + std::to_string(pattern.rows));
  if (!(pattern.nnz_per_row > 0)) {
    throw InputError("sharing pattern: nnz_per_row must be > 0, got " + significant(pattern.nnz_per_row));
  }
  if (pattern.features < 1) {
    throw InputError("sharing pattern: features must be >= 1, got " + std::to_string(pattern.features));
  }
  if (pattern.batch_rows < 1) {
    throw InputError("sharing pattern: batch_rows must be >= 1, got " + std::to_string(pattern.batch_rows));
  }
  if (pattern.value_bytes < 1 || pattern.line_bytes < 1) {
    throw InputError("sharing pattern: value_bytes and line_bytes must be >= 1, got " +
                     std::to_string(pattern.value_bytes) + " and " + std::to_string(pattern.line_bytes));
  }
  if (!(pattern.write_cycles_per_feature >= 0)) {
    throw InputError("sharing pattern: write_cycles_per_feature must be >= 0, got " +
                     significant(pattern.write_cycles_per_feature));
  }
}

double seconds_per_nnz(const CoreRate& rate, double clock_Hz) {
  if (!(rate.native_nnz_per_s > 0)) {
    throw InputError("core rate: native_nnz_per_s must be > 0, got " + significant(rate.native_nnz_per_s));
  }
  if (!(rate.native_clock_Hz > 0)) {
    throw InputError("core rate: native_clock_Hz must be > 0, got " + significant(rate.native_clock_Hz));
  }
  if (!(rate.in_order_penalty > 0)) {
    throw InputError("core rate: in_order_penalty must be > 0, got " + significant(rate.in_order_penalty));
  }
  if (!(clock_Hz > 0)) throw InputError("core rate: the simulated clock_Hz must be > 0, got " + significant(clock_Hz));
  // Cycles per non-zero measured here, the same cycles on the simulated core, times the in-order penalty.
  const double native_cycles_per_nnz = rate.native_clock_Hz / rate.native_nnz_per_s;
  return native_cycles_per_nnz * rate.in_order_penalty / clock_Hz;
}

MeshPass simulate_mesh_pass(const MeshOptions& mesh, const SharingPattern& pattern, double seconds_per_nnz,
                            const MeshSimulationOptions& options) {
  check_mesh(mesh);
  check_pattern(pattern);
  if (!(seconds_per_nnz > 0)) {
    throw InputError("mesh pass: seconds_per_nnz must be > 0, got " + significant(seconds_per_nnz));
  }
  if (options.warmup_batches < 0 || options.measured_batches < 1 || options.cooldown_batches < 0) {
    throw InputError("mesh pass: needs warmup_batches >= 0, measured_batches >= 1, cooldown_batches >= 0, got " +
                     std::to_string(options.warmup_batches) + ", " + std::to_string(options.measured_batches) + ", " +
                     std::to_string(options.cooldown_batches));
  }
  if (!(options.wall_timeout_s > 0)) {
    throw InputError("mesh pass: wall_timeout_s must be > 0, got " + significant(options.wall_timeout_s));
  }

  const int others = mesh.cores - 1;
  const double nnz_per_batch = pattern.batch_rows * pattern.nnz_per_row;
  const double gradient_s = nnz_per_batch * seconds_per_nnz;
  const double write_loop_s = static_cast<double>(pattern.features) * pattern.write_cycles_per_feature / mesh.clock_Hz;
  // Every non-zero read is one line (a cache line holds one touched value: rows are sparse); the write covers the
  // whole model, rounded up to lines.
  const double read_bytes = std::round(nnz_per_batch) * pattern.line_bytes;
  const double model_lines =
      std::ceil(static_cast<double>(pattern.features) * pattern.value_bytes / static_cast<double>(pattern.line_bytes));
  const double write_bytes = model_lines * pattern.line_bytes;

  BatchPlan plan;
  plan.compute_cycles = (gradient_s + write_loop_s) * mesh.clock_Hz;
  plan.read_bytes_per_owner = others > 0 ? rounded_bytes(read_bytes / others) : 0;
  plan.write_bytes_per_owner = others > 0 ? rounded_bytes(write_bytes / others) : 0;
  plan.stagger_s = options.staggered_start ? gradient_s / mesh.cores : 0;
  plan.first_measured = options.warmup_batches;
  plan.measured = options.measured_batches;
  plan.batches = options.warmup_batches + options.measured_batches + options.cooldown_batches;
  plan.model = options.transfers;
  plan.cores_per_stop = mesh.cores_per_stop;

  MeshPass pass;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<double> sums =
      run_forked("the sharing pattern on the " + shape_of(mesh), mesh_link_Bps(mesh), options.transfers,
                 options.wall_timeout_s, [&mesh, &plan] {
                   const std::vector<s4u::Host*> hosts = build_mesh(mesh);
                   std::vector<double> totals(3 * hosts.size(), 0.0);
                   for (int core = 0; core < mesh.cores; ++core) {
                     s4u::Actor::create("core-" + std::to_string(core), hosts[static_cast<std::size_t>(core)],
                                        [&hosts, &plan, &totals, core] { run_core(hosts, plan, core, totals); });
                   }
                   s4u::Engine::get_instance()->run();
                   return totals;
                 });
  pass.wall_s = seconds_since(start);
  DSGD_ENFORCE(sums.size() == 3 * static_cast<std::size_t>(mesh.cores), "one compute, read, write sum per core");

  // A pass: full batches, then the remaining fraction of one whose compute and reads shrink with its samples but
  // whose write still covers the model.
  pass.rows_per_core = std::ceil(static_cast<double>(pattern.rows) / mesh.cores);
  pass.batches_per_core = pass.rows_per_core / pattern.batch_rows;
  const double full_batches = std::floor(pass.batches_per_core);
  const double fraction = pass.batches_per_core - full_batches;
  const double measured = options.measured_batches;
  for (int core = 0; core < mesh.cores; ++core) {
    const auto at = 3 * static_cast<std::size_t>(core);
    const double read_s = sums[at + 1] / measured;
    const double write_s = sums[at + 2] / measured;
    // The compute is deterministic: take its closed form rather than the simulated sum (equal up to rounding).
    PassBreakdown breakdown;
    breakdown.compute_s = full_batches * (gradient_s + write_loop_s);
    breakdown.read_s = full_batches * read_s;
    breakdown.write_s = full_batches * write_s;
    if (fraction > 0) {
      breakdown.compute_s += fraction * gradient_s + write_loop_s;
      breakdown.read_s += fraction * read_s;
      breakdown.write_s += write_s;
    }
    if (core == 0 || breakdown.total_s() > pass.time_per_pass_s) {
      pass.per_pass = breakdown;
      pass.time_per_pass_s = breakdown.total_s();
      pass.slowest_core = core;
    }
  }
  pass.read_bytes_per_batch = plan.read_bytes_per_owner * static_cast<std::uint64_t>(others);
  pass.write_bytes_per_batch = plan.write_bytes_per_owner * static_cast<std::uint64_t>(others);
  pass.transfers_per_batch = others > 0 ? 2 * static_cast<std::uint64_t>(others) : 0;
  return pass;
}

MeshSpeedupStudy predict_mesh_speedup(const std::vector<MeshPoint>& points, const SharingPattern& pattern,
                                      double serial_passes_to_target, const CoreRate& rate,
                                      const MeshSimulationOptions& options) {
  if (points.empty()) throw InputError("mesh speed-up: no chips to simulate");
  if (!(serial_passes_to_target > 0)) {
    throw InputError("mesh speed-up: serial passes to target must be > 0, got " + significant(serial_passes_to_target));
  }
  check_pattern(pattern);
  const double clock_Hz = points.front().mesh.clock_Hz;
  for (const MeshPoint& point : points) {
    check_mesh(point.mesh);
    if (point.mesh.clock_Hz != clock_Hz) {
      throw InputError("mesh speed-up: every chip needs the same clock (serial runs at it), got " +
                       significant(clock_Hz) + " and " + significant(point.mesh.clock_Hz) + " Hz");
    }
    if (!(point.passes_to_target > 0)) {
      throw InputError("mesh speed-up: passes to target for " + std::to_string(point.mesh.cores) +
                       " cores must be > 0, got " + significant(point.passes_to_target));
    }
  }

  MeshSpeedupStudy study;
  study.seconds_per_nnz = seconds_per_nnz(rate, clock_Hz);
  study.in_order_penalty = rate.in_order_penalty;
  // Serial SGD on one core: its model stays in the core's cache, so a pass is its compute alone.
  study.serial_time_per_pass_s = static_cast<double>(pattern.rows) * pattern.nnz_per_row * study.seconds_per_nnz;
  study.serial_passes_to_target = serial_passes_to_target;
  study.serial_time_to_target_s = serial_passes_to_target * study.serial_time_per_pass_s;
  for (const MeshPoint& point : points) {
    MeshSpeedup result;
    result.mesh = point.mesh;
    result.pass = simulate_mesh_pass(point.mesh, pattern, study.seconds_per_nnz, options);
    result.passes_to_target = point.passes_to_target;
    result.time_to_target_s = point.passes_to_target * result.pass.time_per_pass_s;
    result.hardware_speedup = study.serial_time_per_pass_s / result.pass.time_per_pass_s;
    result.speedup = study.serial_time_to_target_s / result.time_to_target_s;
    study.wall_s += result.pass.wall_s;
    study.points.push_back(result);
  }
  return study;
}

}  // namespace dsgd::simulate
