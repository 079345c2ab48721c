#include "app/run_options.hpp"

#include <cmath>
#include <filesystem>

#include "app/cli_units.hpp"
#include "core/atomic_file.hpp"
#include "core/format.hpp"

namespace dsgd::app {

namespace {

CLI::Validator path_check(void (*check)(const std::filesystem::path&), const std::string& name) {
  return CLI::Validator(
      [check](std::string& path) {
        try {
          check(path);
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", name);
}

}  // namespace

CLI::Validator output_file_check() { return path_check(&check_output_file, "OUTPUT_FILE"); }
CLI::Validator output_folder_check() { return path_check(&check_output_folder, "OUTPUT_FOLDER"); }

CLI::Validator positive_check() {
  return CLI::Validator(
      [](std::string& text) {
        double value = 0;
        const bool number = CLI::detail::lexical_cast(text, value);
        return number && value > 0 ? std::string() : "expected a positive number, got " + text;
      },
      "POSITIVE");
}

void add_large_batch_options(CLI::App& command, nn::LrScaling& lr_scaling, int& reference_batch,
                             std::int64_t& warmup_iterations, bool& lars, float& lars_trust) {
  command
      .add_option_function<std::string>(
          "--lr-scaling", [&lr_scaling](const std::string& name) { lr_scaling = nn::parse_lr_scaling(name); },
          "none, or linear: the rate after warm-up is --lr x global batch / --reference-batch (Goyal et al. 2017)")
      ->default_str(std::string(nn::lr_scaling_name(lr_scaling)));
  command.add_option("--reference-batch", reference_batch, "The global batch --lr is meant for (linear scaling)")
      ->capture_default_str();
  command
      .add_option("--warmup-iterations", warmup_iterations,
                  "Steps over which the rate ramps linearly from --lr to the scaled rate (needs --lr-scaling linear)")
      ->capture_default_str();
  command.add_flag("--lars", lars, "LARS: a local rate per layer, trust x |w| / (|g| + weight decay x |w|)");
  command.add_option("--lars-trust", lars_trust, "LARS's trust coefficient")->capture_default_str();
}

void add_compression_options(CLI::App& command, algorithms::Hyperparameters& hyper) {
  std::vector<std::string> names;
  for (const auto compression : kCompressions) names.emplace_back(to_string(compression));
  command
      .add_option_function<std::string>(
          "--compression", [&hyper](const std::string& name) { hyper.compression = compression_from_string(name); },
          "Gradient compression of the exchange (" + join(names) + "; algorithms/README.md)")
      ->default_str(std::string(to_string(hyper.compression)));
  command.add_option("--topk-ratio", hyper.topk_ratio, "topk: the fraction of gradient entries each worker sends")
      ->capture_default_str();
}

void add_datagram_options(CLI::App& command, algorithms::Hyperparameters& hyper) {
  auto& datagrams = hyper.datagrams;
  command
      .add_option("--loss-rate", datagrams.loss_rate,
                  "dogwild: datagrams lost at random at the senders, a fraction in [0, 1) (docs/dogwild.md)")
      ->capture_default_str();
  command
      .add_option("--receive-buffer", datagrams.receive_buffer_bytes,
                  "dogwild on MPI: each UDP socket's buffer (bytes)")
      ->transform(byte_sizes())
      ->capture_default_str();
  command
      .add_option("--send-rate", datagrams.send_rate_Bps,
                  "dogwild on MPI: bytes per second each rank sends at most (0: unpaced)")
      ->transform(byte_sizes())
      ->capture_default_str();
  command
      .add_option("--chunk-floats", hyper.chunk_floats,
                  "dogwild: floats per datagram (at most " + std::to_string(kMaxChunkFloats) + ")")
      ->capture_default_str();
}

CLI::Option* add_device_memory_option(CLI::App& command, std::uint64_t& bytes) {
  return command
      .add_option("--device-memory", bytes,
                  "geeps: device memory a worker's buffers may take, e.g. 4GiB; beyond it they are swapped (0: no "
                  "limit natively, the platform's device memory in simulation)")
      ->transform(byte_sizes())
      ->capture_default_str();
}

CLI::Option* add_allreduce_option(CLI::App& command, AllreduceAlgorithm& algorithm) {
  std::string names;
  for (const auto each : kAllreduceAlgorithms) names += (names.empty() ? "" : ", ") + std::string(to_string(each));
  return command
      .add_option_function<std::string>(
          "--allreduce", [&algorithm](const std::string& name) { algorithm = allreduce_algorithm_from_string(name); },
          "Sync SGD's allreduce: " + names + " (hierarchical ones follow the ranks' nodes: --ranks-per-node)")
      ->default_str(std::string(to_string(algorithm)));
}

void add_checkpoint_options(CLI::App& command, CheckpointOptions& checkpoint) {
  command
      .add_option("--checkpoint", checkpoint.path,
                  "Write a checkpoint to this file after evaluations (docs/checkpoint.md; deterministic algorithms)")
      ->check(output_file_check());
  command
      .add_option("--checkpoint-every", checkpoint.every,
                  "Iterations between checkpoints, a multiple of --eval-every (0: after every evaluation)")
      ->capture_default_str();
  command.add_flag("--resume", checkpoint.resume,
                   "Continue from --checkpoint's file if it exists (bit-identically; a fresh start if it does not)");
}

void note_resume(const std::string& command, const CheckpointOptions& checkpoint,
                 const std::optional<std::int64_t>& iteration, std::ostream& err) {
  if (!checkpoint.resume) return;
  if (iteration) {
    err << command << ": resuming from " << checkpoint.path << " at iteration " << *iteration << std::endl;
  } else {
    err << command << ": --resume: " << checkpoint.path << " does not exist yet; starting from iteration 0"
        << std::endl;
  }
}

CLI::Option* add_memory_limit_option(CLI::App& command, double& limit_bytes) {
  return command
      .add_option("--memory-limit", limit_bytes,
                  "Refuse a run whose estimated memory is over this (bytes; 8GB, 512MB; default: what is available)")
      ->transform(byte_sizes());
}

void add_run_options(CLI::App& command, RunCli& cli) {
  auto& run = cli.run;
  command.add_option("--algo", run.algorithm, "Algorithm (`dsgd algorithms` lists them)")->capture_default_str();
  command.add_option("--workers", run.workers, "Workers (a master, if the algorithm has one, is one more rank)")
      ->capture_default_str();
  command.add_option("--model", run.model, "Model of the zoo (sequential ones: lenet, cifar10_alexnet, ...)")
      ->capture_default_str();
  command.add_option("--data", cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")->capture_default_str();
  command.add_option("--lr", run.hyper.learning_rate, "Learning rate eta")->capture_default_str();
  command.add_option("--momentum", run.hyper.momentum, "Momentum mu (where the algorithm has one)")
      ->capture_default_str();
  command.add_option("--weight-decay", run.hyper.weight_decay, "L2 weight decay")->capture_default_str();
  command.add_option("--rho", run.hyper.elastic_rho, "EASGD's rho, alpha = eta rho (0: alpha = 0.9 / workers)")
      ->capture_default_str();
  command.add_option("--batch", run.hyper.batch, "Images per worker per iteration")->capture_default_str();
  command.add_option("--period", run.hyper.period, "Iterations between exchanges (tau)")->capture_default_str();
  command.add_flag("--per-layer", run.hyper.per_layer, "One message per layer instead of one packed message");
  command
      .add_option("--servers", run.hyper.servers,
                  "Parameter-server algorithms: shard the server over this many ranks (ranks 0..S-1)")
      ->capture_default_str();
  command
      .add_option("--staleness-bound", run.hyper.staleness_bound,
                  "ssp-sgd: pushes a worker may run ahead of the slowest (0: BSP)")
      ->capture_default_str();
  add_bytes_option(command, "--bucket-bytes", run.hyper.bucket_bytes,
                   "wfbp-sgd: bytes per gradient bucket (0: per layer)");
  add_device_memory_option(command, run.hyper.device_memory_bytes);
  add_allreduce_option(command, run.hyper.allreduce);
  add_large_batch_options(command, run.hyper.lr_scaling, run.hyper.reference_batch, run.hyper.warmup_iterations,
                          run.hyper.lars, run.hyper.lars_trust);
  add_compression_options(command, run.hyper);
  add_datagram_options(command, run.hyper);
  command.add_option("--seed", run.hyper.seed, "Seed of initialisation, sampling and dropout")->capture_default_str();
  command.add_option("--iterations", run.budget.iterations, "Stop after this many iterations per worker")
      ->check(positive_check());
  command.add_option("--seconds", run.budget.seconds, "Stop after this much training time")->check(positive_check());
  command.add_option("--target-accuracy", run.budget.target_accuracy, "Stop at this test accuracy (0: none)")
      ->capture_default_str();
  command.add_option("--eval-every", run.budget.eval_every, "Iterations per worker between test evaluations")
      ->capture_default_str();
  command.add_option("--threads", run.threads_per_rank, "CPU threads per rank")->capture_default_str();
  command
      .add_option("--backend", run.backend,
                  "cpu, or cuda: each rank's forward and backward on a GPU (round robin over the visible devices)")
      ->capture_default_str();
  add_memory_limit_option(command, cli.memory_limit_bytes);
  command.add_option("--test-images", cli.test_images, "Evaluate on at most the first this many test images (0: all)")
      ->capture_default_str();
  add_checkpoint_options(command, run.checkpoint);
  add_algorithm_options(command, run.hyper.own);
}

void add_algorithm_options(CLI::App& command, std::map<std::string, double>& own) {
  // Each name once, with the algorithms that declare it (a name two algorithms share means the same to both).
  std::map<std::string, std::pair<algorithms::AlgorithmOption, std::vector<std::string>>> declared;
  for (const auto& entry : algorithms::algorithm_catalog()) {
    for (const auto& option : entry.info.options) {
      auto& [first, owners] = declared.try_emplace(option.name, option, std::vector<std::string>{}).first->second;
      owners.push_back(entry.info.name);
    }
  }
  for (const auto& [name, declaration] : declared) {
    const auto& [option, owners] = declaration;
    auto* added = command.add_option_function<double>(
        "--" + name, [&own, name = name](double value) { own[name] = value; },
        join(owners, ", ") + ": " + option.help + " (default " + significant(option.default_value) + ")");
    if (option.bytes) added->transform(byte_sizes());
  }
}

std::vector<std::string> run_arguments(const RunCli& cli) {
  const auto& run = cli.run;
  // Every real number with 9 significant digits: a float's value comes back unchanged.
  const auto real = [](double value) { return significant(value, 9); };
  const std::pair<const char*, std::string> options[] = {
      {"--algo", run.algorithm},
      {"--workers", std::to_string(run.workers)},
      {"--model", run.model},
      {"--data", cli.dataset},
      {"--lr", real(run.hyper.learning_rate)},
      {"--momentum", real(run.hyper.momentum)},
      {"--weight-decay", real(run.hyper.weight_decay)},
      {"--rho", real(run.hyper.elastic_rho)},
      {"--batch", std::to_string(run.hyper.batch)},
      {"--period", std::to_string(run.hyper.period)},
      {"--servers", std::to_string(run.hyper.servers)},
      {"--staleness-bound", std::to_string(run.hyper.staleness_bound)},
      {"--bucket-bytes", std::to_string(run.hyper.bucket_bytes)},
      {"--allreduce", std::string(to_string(run.hyper.allreduce))},
      {"--lr-scaling", std::string(nn::lr_scaling_name(run.hyper.lr_scaling))},
      {"--reference-batch", std::to_string(run.hyper.reference_batch)},
      {"--warmup-iterations", std::to_string(run.hyper.warmup_iterations)},
      {"--lars-trust", real(run.hyper.lars_trust)},
      {"--compression", std::string(to_string(run.hyper.compression))},
      {"--topk-ratio", significant(run.hyper.topk_ratio, 17)},
      {"--loss-rate", significant(run.hyper.datagrams.loss_rate, 17)},
      {"--receive-buffer", std::to_string(run.hyper.datagrams.receive_buffer_bytes)},
      {"--send-rate", significant(run.hyper.datagrams.send_rate_Bps, 17)},
      {"--chunk-floats", std::to_string(run.hyper.chunk_floats)},
      {"--device-memory", std::to_string(run.hyper.device_memory_bytes)},
      {"--seed", std::to_string(run.hyper.seed)},
      {"--target-accuracy", real(run.budget.target_accuracy)},
      {"--eval-every", std::to_string(run.budget.eval_every)},
      {"--threads", std::to_string(run.threads_per_rank)},
      {"--backend", run.backend},
      {"--test-images", std::to_string(cli.test_images)},
  };
  std::vector<std::string> arguments;
  for (const auto& [option, value] : options) {
    arguments.emplace_back(option);
    arguments.push_back(value);
  }
  // The algorithm's own options as given; the ranks complete them with the same defaults.
  for (const auto& [name, value] : run.hyper.own)
    arguments.insert(arguments.end(), {"--" + name, significant(value, 17)});
  if (!run.checkpoint.path.empty()) {
    // The ranks may start elsewhere than here: an absolute path.
    arguments.insert(arguments.end(), {"--checkpoint", std::filesystem::absolute(run.checkpoint.path).string(),
                                       "--checkpoint-every", std::to_string(run.checkpoint.every)});
  }
  // Budgets not set (0) are left out: the options take positive values only.
  if (run.budget.iterations > 0) {
    arguments.insert(arguments.end(), {"--iterations", std::to_string(run.budget.iterations)});
  }
  if (run.budget.seconds > 0) arguments.insert(arguments.end(), {"--seconds", real(run.budget.seconds)});
  if (run.checkpoint.resume) arguments.emplace_back("--resume");
  if (run.hyper.per_layer) arguments.emplace_back("--per-layer");
  if (run.hyper.lars) arguments.emplace_back("--lars");
  return arguments;
}

}  // namespace dsgd::app
