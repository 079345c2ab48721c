#pragma once
// The command-line options of a training run, which `dsgd run`, `dsgd study`, `dsgd validate` and `dsgd-mpi run`
// share, and their forwarding to dsgd-mpi as arguments. Links neither SimGrid nor OpenMPI, so both executables can.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/runner.hpp"
#include "core/checkpoint.hpp"
#include "core/collectives.hpp"
#include "core/nn/sgd.hpp"

namespace dsgd::app {

// CLI11 checks that an output option names a path dsgd may write (check_output_file / check_output_folder,
// core/atomic_file.hpp), at parse time: an unwritable --results fails before the work, not after it.
CLI::Validator output_file_check();
CLI::Validator output_folder_check();
// A number > 0 ("expected a positive number, got -1"), for budgets and sizes where 0 would mean "no limit".
CLI::Validator positive_check();

struct RunCli {
  algorithms::RunOptions run;
  std::string dataset = "fashion-mnist";
  // Evaluate on at most the first this many test images; 0: all. A run that times its rounds but not its accuracy (dsgd
  // validate) keeps the evaluation between rounds short with it.
  std::int64_t test_images = 0;
  std::string results;  // write the results here when not empty
  // The memory the run may take on this machine (algorithms/memory_estimate.hpp); 0: what is available now.
  double memory_limit_bytes = 0;
};

// Registers --lr-scaling, --reference-batch, --warmup-iterations, --lars and --lars-trust (the large-batch rules,
// docs/nn.md "Optimizer options") on `command`, bound to the given variables. `dsgd run`, `dsgd study`'s runs and
// `dsgd train` share them.
void add_large_batch_options(CLI::App& command, nn::LrScaling& lr_scaling, int& reference_batch,
                             std::int64_t& warmup_iterations, bool& lars, float& lars_trust);
// Registers --compression and --topk-ratio (core/compressed_collectives.hpp) on `command`, bound to `hyper`.
// `dsgd run` and `dsgd simulate` share them.
void add_compression_options(CLI::App& command, algorithms::Hyperparameters& hyper);
// Registers --allreduce (the allreduce Sync SGD sums with: ring, ..., hierarchical, hierarchical_2d) on `command`,
// bound to `algorithm`.
CLI::Option* add_allreduce_option(CLI::App& command, AllreduceAlgorithm& algorithm);
// geeps's --device-memory (Hyperparameters::device_memory_bytes), with size suffixes.
CLI::Option* add_device_memory_option(CLI::App& command, std::uint64_t& bytes);
// Registers --memory-limit SIZE (bytes, or 8GB, 512MB; 0: what is available) on `command`, bound to `limit_bytes`.
CLI::Option* add_memory_limit_option(CLI::App& command, double& limit_bytes);
// Registers --checkpoint FILE, --checkpoint-every N and --resume (docs/checkpoint.md) on `command`, bound to
// `checkpoint`. `dsgd run` (through add_run_options) and `dsgd train` share them.
void add_checkpoint_options(CLI::App& command, CheckpointOptions& checkpoint);
// The note on `err` before a run with --resume: "<command>: resuming from FILE at iteration N" where `iteration`
// holds one, else that FILE does not exist yet and the run starts fresh.
void note_resume(const std::string& command, const CheckpointOptions& checkpoint,
                 const std::optional<std::int64_t>& iteration, std::ostream& err);
// Registers --algo, --workers, --model, --data, the hyper-parameters (the large-batch rules and --allreduce among
// them), the budget
// and --threads on `command`.
void add_run_options(CLI::App& command, RunCli& cli);
// --NAME for every option an algorithm of the catalog declares (algorithms::AlgorithmOption), stored in `own` when
// given; the run refuses one its algorithm does not declare (algorithms::resolve_options).
void add_algorithm_options(CLI::App& command, std::map<std::string, double>& own);
// The same options as arguments, for `dsgd-mpi run` (without --results).
std::vector<std::string> run_arguments(const RunCli& cli);
}  // namespace dsgd::app
