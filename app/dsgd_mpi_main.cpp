// `dsgd-mpi`: the MPI worker executable. `dsgd` links SimGrid, whose library defines MPI_* too, so the MPI side is
// this separate program that dsgd (or a user) starts under mpirun (measure/mpi/launch.hpp). Subcommands:
//   pingpong   latency and bandwidth between ranks 0 and 1, 8 B .. 64 MiB (what `dsgd calibrate` fits), the
//              other ranks idle or (--busy) computing
//   allreduce  core/collectives.hpp's allreduce algorithms against MPI_Allreduce at DeepBench's sizes
//   waiting    the share of a core rank 0 takes while it waits and the other ranks compute (dsgd calibrate)
//   selftest   a quick end-to-end check of the MPI executor (used by the tests), optionally with a failing rank
//   run        training with an algorithm of the catalog (what `dsgd run --executor mpi` starts)
//   gemm       the distributed GEMM benchmark (algorithms/dmath/gemm_bench.hpp; what `dsgd bench gemm` starts)
//   lasso      STRADS Lasso with one scheduler (algorithms/strads/; what `dsgd lasso --executor mpi` starts)
// The measurements are measure/mpi/sweeps.hpp's; this file parses, prints and writes the results file (rank 0,
// reports/results.hpp schema). A rank that fails prints one line "dsgd-mpi: rank R: <what>" and ends the whole world
// with MPI_Abort, so no other rank waits for it.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "algorithms/dmath/gemm_entry.hpp"
#include "algorithms/runner.hpp"
#include "algorithms/strads/lasso_entry.hpp"
#include "app/cli_units.hpp"
#include "app/dsgd_mpi_sweeps.hpp"
#include "app/error_outcome.hpp"
#include "app/gemm_bench_cli.hpp"
#include "app/lasso_cli.hpp"
#include "app/run_common.hpp"
#include "core/process_environment.hpp"
#include "measure/mpi/executor.hpp"
#include "measure/mpi/leak_check.hpp"

namespace {

namespace mpi = dsgd::measure::mpi;
using mpi::MpiComm;

using dsgd::app::kExitFailure;
using dsgd::app::kExitOk;
using dsgd::app::kExitUsage;

std::string command_line(int argc, char** argv) {
  std::string text = "dsgd-mpi";
  for (int i = 1; i < argc; ++i) text += std::string(" ") + argv[i];
  return text;
}

// --- run ------------------------------------------------------------------------------------------------------

// Every rank loads the data and trains; rank 0 prints progress and writes the results.
void train(const dsgd::app::RunCli& cli, const dsgd::WorldOptions& world, const std::string& command) {
  dsgd::algorithms::check_run_options(cli.run);
  const auto data = dsgd::app::load_run_data(cli);
  dsgd::algorithms::RunResult result;
  const auto worker = dsgd::algorithms::training_worker(
      cli.run, data, &result, [](const auto& point) { std::fputs(dsgd::app::progress_line(point).c_str(), stderr); });
  int rank = 0;
  mpi::run(world, [&](dsgd::Comm& comm) {
    rank = comm.rank();
    if (comm.size() != dsgd::algorithms::world_size(cli.run)) {
      throw dsgd::InputError("run: " + cli.run.algorithm + " with " + std::to_string(cli.run.workers) +
                             " workers needs " + std::to_string(dsgd::algorithms::world_size(cli.run)) +
                             " ranks, mpirun started " + std::to_string(comm.size()));
    }
    worker(comm);
  });
  if (rank != 0 || cli.results.empty()) return;
  auto results = dsgd::app::new_results(command);
  results.benchmarks.push_back(dsgd::app::run_entry(cli, result, "mpi"));
  dsgd::reports::write_results(cli.results, results);
}

// --- gemm -----------------------------------------------------------------------------------------------------

// Every rank runs each size; rank 0 gathers the ranks' results, prints a line per size and writes the results.
void gemm(dsgd::app::GemmCli cli, const std::string& results_path, const dsgd::WorldOptions& world,
          const std::string& command) {
  dsgd::app::resolve_gemm_cli(cli);
  auto results = dsgd::app::new_results(command);
  mpi::run(world, [&](dsgd::Comm& comm) {
    for (const auto size : cli.sizes) {
      auto options = cli.bench;
      options.size = size;
      const auto mine = dsgd::algorithms::dmath::run_gemm_bench(comm, options);
      const auto all = dsgd::algorithms::dmath::gather_gemm_results(comm, mine);
      if (comm.rank() != 0) continue;
      const auto entry = dsgd::algorithms::dmath::to_entry(
          options, all, "mpi", "measured",
          dsgd::algorithms::dmath::make_blas_gemm(options.threads_per_rank)->description() + ", " +
              mpi::mpi_library_version());
      std::printf("gemm %s %lld on %d ranks: %.6g s, %.3f GFLOP/s\n", cli.algorithm.c_str(),
                  static_cast<long long>(size), comm.size(), entry.real_time, entry.counters.at("gflops"));
      std::fflush(stdout);
      results.benchmarks.push_back(entry);
    }
    if (comm.rank() == 0 && !results_path.empty()) dsgd::reports::write_results(results_path, results);
  });
}

// --- lasso ----------------------------------------------------------------------------------------------------

// Every rank loads the whole problem (each keeps its rows); rank 0 writes the one results entry.
void lasso(dsgd::app::LassoCli cli, const std::string& scheduler, int workers, const std::string& results_path,
           const dsgd::WorldOptions& world, const std::string& command) {
  const auto problem = dsgd::algorithms::strads::load_lasso(cli.problem);
  dsgd::app::resolve_lasso_cli(cli, scheduler, workers, problem);
  mpi::run(world, [&](dsgd::Comm& comm) {
    if (comm.size() != workers) {
      throw dsgd::InputError("lasso: --workers " + std::to_string(workers) + " but mpirun started " +
                             std::to_string(comm.size()) + " ranks");
    }
    const auto result = dsgd::algorithms::strads::run_lasso(comm, problem, cli.run);
    if (comm.rank() != 0 || results_path.empty()) return;
    auto results = dsgd::app::new_results(command);
    results.benchmarks.push_back(dsgd::algorithms::strads::to_entry(cli.run, problem, result, "mpi", workers));
    dsgd::reports::write_results(results_path, results);
  });
}

// --- command line ---------------------------------------------------------------------------------------------

template <typename T>
std::vector<T> parse_list(const std::string& text, const char* option) {
  std::vector<T> values;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      std::size_t used = 0;
      const double value = std::stod(item, &used);
      if (used != item.size() || value < 0) throw std::invalid_argument(item);
      values.push_back(static_cast<T>(value));
    } catch (const std::exception&) {
      throw dsgd::InputError(std::string(option) + ": '" + item + "' is not a non-negative number");
    }
  }
  return values;
}

int run(int argc, char** argv, int world_rank) {
  CLI::App app{"dsgd-mpi: the MPI side of dsgd, run under mpirun (dsgd starts it for `dsgd calibrate`)", "dsgd-mpi"};
  app.require_subcommand(1);
  double timeout_s = 60;
  app.add_option("--timeout", timeout_s, "Seconds any rank waits for another before failing")->capture_default_str();
  int ranks_per_node = 0;
  app.add_option("--ranks-per-node", ranks_per_node,
                 "Group the ranks into nodes of this many for node-aware collectives (0: the real nodes)")
      ->capture_default_str();

  dsgd::app::PingPongCli pingpong_cli;
  auto& sweep = pingpong_cli.sweep;
  std::string boundaries;
  auto* pingpong_command =
      app.add_subcommand("pingpong", "Ping-pong between ranks 0 and 1, 8 B .. 64 MiB, and its alpha-beta fit");
  dsgd::app::add_bytes_option(*pingpong_command, "--min-bytes", sweep.min_bytes, "Smallest message");
  dsgd::app::add_bytes_option(*pingpong_command, "--max-bytes", sweep.max_bytes, "Largest message");
  pingpong_command->add_option("--rounds", sweep.rounds, "Timed sweeps over all sizes")->capture_default_str();
  pingpong_command->add_option("--results", pingpong_cli.results, "Write the results (JSON) here");
  pingpong_command->add_flag("--quiet", pingpong_cli.quiet, "Print nothing but errors");
  pingpong_command->add_flag("--busy", sweep.busy, "Ranks 2 and up compute meanwhile instead of idling");
  pingpong_command
      ->add_option("--think", sweep.think_s,
                   "Rank 0 computes this many seconds before each round trip (one a sample) while rank 1 waits")
      ->capture_default_str();
  dsgd::app::add_bytes_option(
      *pingpong_command, "--pool-bytes", sweep.pool_bytes,
      "Cycle through buffers of this many bytes, so messages start cold in memory (0: one warm buffer)");
  pingpong_command->add_option("--boundaries", boundaries,
                               "Segment boundaries in bytes for the printed fit, e.g. 4096,65536");

  dsgd::app::AllreduceCli allreduce_cli;
  std::string sizes;
  std::string variants;
  auto* allreduce_command =
      app.add_subcommand("allreduce", "dsgd's allreduce algorithms against MPI_Allreduce at DeepBench's sizes");
  allreduce_command->add_option("--sizes", sizes, "Sizes in floats, comma-separated (default: DeepBench's)");
  allreduce_command->add_option("--max-floats", allreduce_cli.sweep.max_floats, "Leave out sizes above this");
  allreduce_command->add_option("--rounds", allreduce_cli.sweep.rounds, "Timed rounds (variants alternate within each)")
      ->capture_default_str();
  allreduce_command->add_option(
      "--algorithms", variants,
      "Comma-separated: ring, recursive_doubling, rabenseifner, reduce_broadcast, hierarchical, "
      "hierarchical_2d, mpi (default: all)");
  allreduce_command->add_option("--results", allreduce_cli.results, "Write the results (JSON) here");

  dsgd::app::WaitingCli waiting_cli;
  auto* waiting_command =
      app.add_subcommand("waiting", "Share of a core rank 0 takes waiting while the others compute");
  waiting_command->add_option("--seconds", waiting_cli.seconds, "How long the others compute")->capture_default_str();
  waiting_command->add_option("--results", waiting_cli.results, "Write the results (JSON) here");

  int fail_rank = -1;
  auto* selftest_command = app.add_subcommand("selftest", "Quick end-to-end check of the MPI executor");
  selftest_command->add_option("--fail-rank", fail_rank, "This rank fails on purpose (tests the abort path)");

  dsgd::app::GemmCli gemm_cli;
  std::string gemm_results;
  auto* gemm_command = app.add_subcommand("gemm", "The distributed GEMM benchmark (as `dsgd bench gemm`)");
  dsgd::app::add_gemm_options(*gemm_command, gemm_cli);
  gemm_command->add_option("--results", gemm_results, "Write the results (JSON) here");

  dsgd::app::LassoCli lasso_cli;
  std::string lasso_scheduler = "strads-dynamic";
  int lasso_workers = 2;
  std::string lasso_results;
  auto* lasso_command = app.add_subcommand("lasso", "STRADS Lasso with one scheduler (as `dsgd lasso`)");
  lasso_command->add_option("--scheduler", lasso_scheduler, "serial, shotgun, strads-static, strads-dynamic");
  lasso_command->add_option("--workers", lasso_workers, "Workers: must be mpirun's rank count");
  dsgd::app::add_lasso_options(*lasso_command, lasso_cli);
  lasso_command->add_option("--results", lasso_results, "Write the results (JSON) here");

  dsgd::app::RunCli run_cli;
  auto* run_command = app.add_subcommand("run", "Training with an algorithm of the catalog (as `dsgd run`)");
  dsgd::app::add_run_options(*run_command, run_cli);
  run_command->add_option("--results", run_cli.results, "Write the results (JSON) here");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same arguments and returns the same code, so MPI_Finalize still meets everyone.
    if (world_rank == 0) {
      if (e.get_exit_code() == 0) {
        std::cout << app.help();
      } else {
        std::cerr << "dsgd-mpi: " << e.what() << " (run `dsgd-mpi --help`)\n";
      }
    }
    return e.get_exit_code() == 0 ? kExitOk : kExitUsage;
  }

  if (!boundaries.empty()) pingpong_cli.boundaries = parse_list<double>(boundaries, "--boundaries");
  if (!sizes.empty()) allreduce_cli.sweep.sizes = parse_list<std::size_t>(sizes, "--sizes");
  if (!variants.empty()) {
    allreduce_cli.sweep.variants.clear();
    std::istringstream in(variants);
    for (std::string item; std::getline(in, item, ',');) allreduce_cli.sweep.variants.push_back(item);
  }

  dsgd::WorldOptions world;
  world.timeout_s = timeout_s;
  world.ranks_per_node = ranks_per_node;
  const std::string command = command_line(argc, argv);
  if (*run_command) {
    train(run_cli, world, command);
    return kExitOk;
  }
  if (*gemm_command) {
    gemm(gemm_cli, gemm_results, world, command);
    return kExitOk;
  }
  if (*lasso_command) {
    lasso(lasso_cli, lasso_scheduler, lasso_workers, lasso_results, world, command);
    return kExitOk;
  }
  mpi::run(world, [&](dsgd::Comm& base) {
    auto& comm = dynamic_cast<MpiComm&>(base);  // mpi::run hands out an MpiComm
    if (*pingpong_command) dsgd::app::pingpong_command(comm, pingpong_cli, command);
    if (*allreduce_command) dsgd::app::allreduce_command(comm, allreduce_cli, command);
    if (*waiting_command) dsgd::app::waiting_command(comm, waiting_cli, command);
    if (*selftest_command) {
      mpi::selftest(comm, fail_rank);
      if (comm.rank() == 0) {
        std::printf("dsgd-mpi selftest: %d ranks ok (%s)\n", comm.size(), mpi::mpi_library_version().c_str());
        std::fflush(stdout);
      }
    }
  });
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // Before MPI_Init: the restart keeps the process id mpirun knows.
  dsgd::set_process_environment(argv);
  std::unique_ptr<mpi::MpiSession> session;
  try {
    session = std::make_unique<mpi::MpiSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsgd-mpi: %s\n", e.what());
    return kExitFailure;
  }
  const int rank = session->world_rank();
  try {
    return run(argc, argv, rank);
  } catch (const std::exception& e) {
    // One line naming the rank, then end every rank: the others may be waiting for this one. A wait's limit is
    // dsgd-mpi's --timeout: the message says so.
    const bool timed_out = dynamic_cast<const dsgd::TimeoutError*>(&e) != nullptr;
    const dsgd::app::ErrorOutcome outcome = dsgd::app::outcome_of(e);
    std::fprintf(stderr, "dsgd-mpi: rank %d: %s%s\n", rank, outcome.message.c_str(), timed_out ? " (--timeout)" : "");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, outcome.exit_code);
  }
  return kExitFailure;  // not reached: MPI_Abort does not return
}
