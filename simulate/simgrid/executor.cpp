#include "simulate/simgrid/executor.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <sstream>

#include "core/enum_names.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "core/stopwatch.hpp"
#include "simulate/analytic/executor.hpp"
#include "simulate/forked.hpp"
#include "simulate/simgrid/comm.hpp"
#include "simulate/simgrid/engine_settings.hpp"
#include "simulate/simgrid/kernel_pool.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace s4u = ::simgrid::s4u;

namespace {

// Set once this process has started SimGrid's engine (or was forked from one that had): no second engine can run.
bool g_engine_started = false;

// --- running in this process ----------------------------------------------------------------------------------------

std::vector<std::string> engine_arguments(const SimulationOptions& options) {
  std::vector<std::string> arguments = {
      "dsgd-simulate",
      "--cfg=network/model:" + options.network_model,
      std::string("--cfg=network/crosstraffic:") + (options.cross_traffic ? "1" : "0"),
  };
  if (!options.tcp_gamma) arguments.emplace_back("--cfg=network/TCP-gamma:0");
  add_sanitizer_settings(arguments);
  if (options.log.empty()) {
    // SimGrid prints even at its highest threshold (e.g. its deadlock report, which we turn into an error).
    arguments.emplace_back("--log=root.thres:critical");
    arguments.emplace_back("--log=root.app:file:/dev/null");
  } else {
    std::istringstream settings(options.log);
    for (std::string setting; settings >> setting;) arguments.push_back("--log=" + setting);
  }
  return arguments;
}

// The body of rank `rank`'s actor. Errors are recorded in the world, never thrown to SimGrid -- except SimGrid's
// own kill, which must unwind the actor.
void run_rank(World& world, const WorkerFunction& worker, int rank, std::vector<double>& end_s) {
  SimgridComm& comm = world.comm(rank);
  try {
    worker(comm);
    comm.finish();
    end_s[static_cast<std::size_t>(rank)] = comm.now_s();
  } catch (const ::simgrid::ForcefulKillException&) {
    throw;
  } catch (const Error&) {
    world.fail(rank, std::current_exception());
  } catch (const std::bad_alloc&) {
    world.fail(rank, std::make_exception_ptr(Error("rank " + std::to_string(rank) + ": " + out_of_memory_text())));
  } catch (const std::exception& error) {
    world.fail(rank, std::make_exception_ptr(Error("rank " + std::to_string(rank) + ": " + error.what())));
  } catch (...) {
    world.fail(rank, std::make_exception_ptr(Error("rank " + std::to_string(rank) + ": unknown exception")));
  }
}

Fidelity resolve(Fidelity fidelity, const WorldOptions& world) {
  if (fidelity != Fidelity::kAuto) return fidelity;
  return !world.payload && world.size >= kFlowFromRanks ? Fidelity::kFlow : Fidelity::kMessage;
}

SimulationResult simulate_here(const platforms::Platform& platform, const WorldOptions& world_options,
                               const WorkerFunction& worker, const SimulationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  g_engine_started = true;
  std::vector<std::string> arguments = engine_arguments(options);
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(arguments.size());
  // Never destroyed: SimGrid allows one engine per process, for the life of the process.
  auto* engine = new s4u::Engine(&argc, argv.data());

  std::vector<s4u::Host*> hosts;
  try {
    hosts = build_platform(platform, world_options.size, options.placement);
  } catch (const ::simgrid::Exception& error) {
    throw InternalError("SimGrid refused the platform built from '" + platform.name + "': " + error.what());
  }
  const Fidelity fidelity = resolve(options.fidelity, world_options);
  // Declared before the world, so it outlives the actors' comms; made here, in the simulation's process.
  std::unique_ptr<KernelPool> kernel_pool;
  const int kernel_threads = world_options.payload ? kernel_threads_for(options.kernel_threads) : 1;
  if (kernel_threads > 1) kernel_pool = std::make_unique<KernelPool>(kernel_threads);
  World world(world_options, hosts, place_ranks(platform, world_options.size, options.placement),
              fidelity == Fidelity::kFlow, platform.noise, options.noise_seed, options.trace_events,
              options.fold_fatpipe_flows, options.flow_replicas);
  // A piecewise link's segments describe pure alpha-beta costs; the other models bring their own factors.
  if (options.network_model == "CM02") {
    install_segment_factors(platform, [&world](const s4u::Host* source, const s4u::Host* destination) {
      return world.transfer_shares_cores(source, destination);
    });
  }
  world.set_kernel_pool(kernel_pool.get());
  s4u::Engine::on_deadlock_cb([&world] { world.on_deadlock(); });
  std::vector<double> end_s(static_cast<std::size_t>(world_options.size), 0.0);
  for (int rank = 0; rank < world_options.size; ++rank) {
    s4u::Actor::create("rank-" + std::to_string(rank), hosts[static_cast<std::size_t>(rank)],
                       [&world, &worker, &end_s, rank] { run_rank(world, worker, rank, end_s); });
  }

  SimulationResult result;
  result.fidelity = fidelity;
  result.setup_wall_s = seconds_since(start);
  const auto run_start = std::chrono::steady_clock::now();
  engine->run();
  result.run_wall_s = seconds_since(run_start);
  world.failure().rethrow_if_any();

  result.time_s = *std::max_element(end_s.begin(), end_s.end());
  result.per_rank.reserve(end_s.size());
  for (int rank = 0; rank < world_options.size; ++rank) result.per_rank.push_back(world.comm(rank).breakdown());
  if (options.collect) result.collected = options.collect();
  result.events = world.timeline();
  result.events_dropped = world.timeline_dropped();
  return result;
}

// --- the child's report, through a pipe -------------------------------------------------------------------------

// Which dsgd error class a report carries; the parent rethrows the same class with the same message.
enum class ErrorKind : std::uint32_t {
  kNone,
  kError,
  kInput,
  kIo,
  kUnavailable,
  kInternal,
  kComm,
  kTimeout,
  kDiverged
};

ErrorKind kind_of(const Error& error) {
  if (dynamic_cast<const DivergedError*>(&error)) return ErrorKind::kDiverged;
  if (dynamic_cast<const TimeoutError*>(&error)) return ErrorKind::kTimeout;
  if (dynamic_cast<const CommError*>(&error)) return ErrorKind::kComm;
  if (dynamic_cast<const InputError*>(&error)) return ErrorKind::kInput;  // UnknownNameError included
  if (dynamic_cast<const IoError*>(&error)) return ErrorKind::kIo;
  if (dynamic_cast<const UnavailableError*>(&error)) return ErrorKind::kUnavailable;
  if (dynamic_cast<const InternalError*>(&error)) return ErrorKind::kInternal;
  return ErrorKind::kError;
}

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kTimeout:
      throw TimeoutError(message);
    case ErrorKind::kComm:
      throw CommError(message);
    case ErrorKind::kInput:
      throw InputError(message);
    case ErrorKind::kIo:
      throw IoError(message);
    case ErrorKind::kUnavailable:
      throw UnavailableError(message);
    case ErrorKind::kInternal:
      throw InternalError(message);
    case ErrorKind::kDiverged:
      throw DivergedError(message);
    case ErrorKind::kNone:
    case ErrorKind::kError:
      break;
  }
  throw Error(message);
}

class Writer {
 public:
  void u64(std::uint64_t value) { raw(&value, sizeof value); }
  void f64(double value) { raw(&value, sizeof value); }
  void text(const std::string& value) {
    u64(value.size());
    raw(value.data(), value.size());
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void raw(const void* data, std::size_t size) { bytes_.append(static_cast<const char*>(data), size); }
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  std::uint64_t u64() { return raw<std::uint64_t>(); }
  double f64() { return raw<double>(); }
  std::string text() {
    const std::uint64_t size = u64();
    need(size);
    std::string value = bytes_.substr(offset_, size);
    offset_ += size;
    return value;
  }

 private:
  template <typename T>
  T raw() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  void need(std::uint64_t size) const {
    if (size > bytes_.size() - offset_) throw InternalError("the simulation process sent a truncated report");
  }
  const std::string& bytes_;
  std::size_t offset_ = 0;
};

std::string encode(const SimulationResult& result) {
  Writer out;
  out.u64(static_cast<std::uint64_t>(ErrorKind::kNone));
  out.u64(static_cast<std::uint64_t>(result.fidelity));
  out.f64(result.time_s);
  out.f64(result.setup_wall_s);
  out.f64(result.run_wall_s);
  out.u64(result.per_rank.size());
  for (const auto& breakdown : result.per_rank) {
    for (const double seconds : breakdown.seconds) out.f64(seconds);
  }
  out.text(result.collected);
  out.u64(result.events.size());
  for (const auto& span : result.events) {
    out.u64(static_cast<std::uint64_t>(span.rank));
    out.u64(static_cast<std::uint64_t>(span.category));
    out.f64(span.start_s);
    out.f64(span.duration_s);
  }
  out.u64(result.events_dropped);
  return out.bytes();
}

std::string encode(ErrorKind kind, const std::string& message) {
  Writer out;
  out.u64(static_cast<std::uint64_t>(kind));
  out.text(message);
  return out.bytes();
}

SimulationResult decode(const std::string& bytes) {
  Reader in(bytes);
  const auto kind = static_cast<ErrorKind>(in.u64());
  if (kind != ErrorKind::kNone) throw_error(kind, in.text());
  SimulationResult result;
  result.fidelity = static_cast<Fidelity>(in.u64());
  result.time_s = in.f64();
  result.setup_wall_s = in.f64();
  result.run_wall_s = in.f64();
  result.per_rank.resize(in.u64());
  for (auto& breakdown : result.per_rank) {
    for (double& seconds : breakdown.seconds) seconds = in.f64();
  }
  result.collected = in.text();
  result.events.resize(in.u64());
  for (auto& span : result.events) {
    span.rank = static_cast<int>(in.u64());
    span.category = static_cast<Category>(in.u64());
    span.start_s = in.f64();
    span.duration_s = in.f64();
  }
  result.events_dropped = in.u64();
  return result;
}

// --- the forked child -------------------------------------------------------------------------------------------

// The child's report: the result, or the error it failed with.
std::string report_of(const platforms::Platform& platform, const WorldOptions& world, const WorkerFunction& worker,
                      const SimulationOptions& options) {
  try {
    return encode(simulate_here(platform, world, worker, options));
  } catch (const Error& error) {
    return encode(kind_of(error), error.what());
  } catch (const std::bad_alloc&) {
    return encode(ErrorKind::kError, out_of_memory_text());
  } catch (const std::exception& error) {
    return encode(ErrorKind::kError, error.what());
  } catch (...) {
    return encode(ErrorKind::kError, "the simulation failed with an unknown exception");
  }
}

std::string signal_text(int signal_number) {
  const char* name = ::strsignal(signal_number);
  return std::to_string(signal_number) + (name ? " (" + std::string(name) + ")" : std::string());
}

SimulationResult simulate_forked(const platforms::Platform& platform, const WorldOptions& world,
                                 const WorkerFunction& worker, const SimulationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const ForkedOutcome outcome = run_forked_child(
      "simulation", options.wall_timeout_s, [&] { return report_of(platform, world, worker, options); },
      options.interrupt);
  if (outcome.interrupted_by != 0) {
    throw InterruptedError(outcome.interrupted_by, "stopped the simulation of " + std::to_string(world.size) +
                                                       " ranks on '" + platform.name + "' (no results)");
  }
  const bool timed_out = outcome.timed_out;
  const int status = outcome.status;
  const std::string& report = outcome.report;
  if (timed_out) {
    throw TimeoutError("the simulation of " + std::to_string(world.size) + " ranks on '" + platform.name +
                       "' ran past its wall-time limit of " + significant(options.wall_timeout_s) + " s");
  }
  if (WIFSIGNALED(status)) {
    throw InternalError("the simulation process of " + std::to_string(world.size) + " ranks on '" + platform.name +
                        "' died of signal " + signal_text(WTERMSIG(status)) +
                        " (a crash in a worker or in SimGrid; rerun with isolate = false to debug it)");
  }
  if (report.empty()) {
    throw InternalError("the simulation process of " + std::to_string(world.size) + " ranks on '" + platform.name +
                        "' exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                        " without a report (did a worker call exit()?)");
  }
  SimulationResult result = decode(report);
  result.wall_s = seconds_since(start);
  return result;
}

void check_request(const platforms::Platform& platform, const WorldOptions& world, const WorkerFunction& worker,
                   const SimulationOptions& options) {
  check_world(world, "simgrid", /*simulated=*/true);
  const auto& models = network_model_names();
  if (std::find(models.begin(), models.end(), options.network_model) == models.end()) {
    throw UnknownNameError("SimGrid network model", options.network_model, models);
  }
  kernel_threads_for(options.kernel_threads);  // refuses a negative count here, before anything runs
  if (!(options.wall_timeout_s >= 0)) {
    throw InputError("SimulationOptions::wall_timeout_s must be >= 0, got " + std::to_string(options.wall_timeout_s));
  }
  if (!worker) throw InputError("simgrid executor: the worker function is empty");
  if ((options.fidelity == Fidelity::kFlow || options.fidelity == Fidelity::kAnalytic) && world.payload) {
    throw InputError(std::string(to_string(options.fidelity)) +
                     " fidelity simulates sizes only: set WorldOptions::payload to false, or use message fidelity");
  }
  check_simulatable(platform, world.size, options.placement);
  if (options.fidelity == Fidelity::kAnalytic) return;  // no SimGrid engine
  check_simgrid_can_build(platform);
  if (g_engine_started) {
    throw UnavailableError(
        "this process already started SimGrid's engine (an in-process simulation, or a simulation that is running "
        "this very code); SimGrid allows one engine per process, so simgrid::run cannot start another here");
  }
}

}  // namespace

namespace {
constexpr EnumNames<4> kFidelityNames = {"auto", "message", "flow", "analytic"};  // Fidelity's order
}  // namespace

std::string_view to_string(Fidelity fidelity) { return name_of(fidelity, kFidelityNames); }

Fidelity fidelity_from_string(std::string_view name) { return from_name<Fidelity>("fidelity", name, kFidelityNames); }

const std::vector<std::string>& network_model_names() {
  // "Constant" is left out: SimGrid 3.32 aborts with it on links that have a bandwidth.
  static const std::vector<std::string> names = {"CM02", "LV08", "SMPI", "IB"};
  return names;
}

SimulationResult simgrid::run(const platforms::Platform& platform, const WorldOptions& world,
                              const WorkerFunction& worker, const SimulationOptions& options) {
  check_request(platform, world, worker, options);
  if (options.fidelity == Fidelity::kAnalytic) return analytic::run(platform, world, worker, options);
  if (options.isolate) return simulate_forked(platform, world, worker, options);
  const auto start = std::chrono::steady_clock::now();
  SimulationResult result = simulate_here(platform, world, worker, options);
  result.wall_s = seconds_since(start);
  return result;
}

}  // namespace dsgd::simulate
