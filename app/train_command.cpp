// `dsgd train`: one worker, one back end, real data (issue 4). With no arguments: LeNet on Debian's
// Fashion-MNIST, momentum SGD, on the CPU, until 89% test accuracy (or 10 minutes).
#include <cinttypes>
#include <cstdio>

#include "algorithms/memory_estimate.hpp"
#include "algorithms/run_entry.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/atomic_file.hpp"
#include "core/data/catalog.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "measure/training.hpp"

namespace dsgd::app {

namespace {

reports::Entry train_entry(const measure::TrainOptions& options, const measure::TrainResult& result) {
  reports::Entry entry;
  entry.name = "train/" + options.model + "/" + options.dataset + "/" + options.backend;
  entry.executor = "threads";
  entry.fidelity = "measured";
  entry.algorithm = options.sgd.momentum > 0 ? "momentum_sgd" : "sgd";
  entry.algorithm_options = {{"learning_rate", options.sgd.learning_rate},
                             {"momentum", options.sgd.momentum},
                             {"weight_decay", options.sgd.weight_decay},
                             {"batch", options.batch},
                             {"global_batch", options.batch},
                             {"lr_scaling", std::string(nn::lr_scaling_name(options.lr_scaling))},
                             {"reference_batch", options.reference_batch},
                             {"scaled_learning_rate", measure::scaled_learning_rate(options)},
                             {"warmup_iterations", options.sgd.warmup_iterations},
                             {"lars", options.sgd.lars},
                             {"lars_trust", options.sgd.lars_trust}};
  entry.model = options.model;
  entry.dataset = options.dataset;
  entry.ranks = 1;
  entry.seed = options.seed;
  entry.iterations = result.iterations;
  entry.real_time = result.train_seconds;
  entry.cpu_time = result.train_seconds;
  entry.labels["backend"] = result.backend_description;
  entry.labels["stop_reason"] = result.stop_reason;
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, result.parameters_hash);
  entry.labels["parameters_fnv1a"] = hash;
  const auto& last = result.curve.back();
  entry.counters["test_accuracy"] = last.test_accuracy;
  entry.counters["test_loss"] = last.test_loss;
  entry.counters["train_loss"] = last.train_loss;
  entry.counters["images_per_second"] = result.images_per_second;
  entry.counters["test_images"] = static_cast<double>(result.test_images);
  if (result.time_to_target_s >= 0) entry.counters["time_to_target_s"] = result.time_to_target_s;
  algorithms::set_breakdown(entry, result.breakdown);
  reports::Curve by_time{"test_accuracy", "time_s", "accuracy", {}};
  reports::Curve by_iteration{"test_accuracy_by_iteration", "iteration", "accuracy", {}};
  reports::Curve loss{"train_loss", "iteration", "loss", {}};
  for (const auto& point : result.curve) {
    by_time.points.emplace_back(point.train_seconds, point.test_accuracy);
    by_iteration.points.emplace_back(static_cast<double>(point.iteration), point.test_accuracy);
    if (point.iteration > 0) loss.points.emplace_back(static_cast<double>(point.iteration), point.train_loss);
  }
  entry.curves = {by_time, by_iteration, loss};
  return entry;
}

}  // namespace

void register_train_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<measure::TrainOptions>();
  options->target_accuracy = 0.89;
  auto results_path = std::make_shared<std::string>();
  auto memory_limit_bytes = std::make_shared<double>(0);
  auto* train = app.add_subcommand("train", "Train one model on one worker (native kernels, real data)");
  train->add_option("--model", options->model, "Model of the zoo (sequential ones train: lenet, cifar10_alexnet, ...)")
      ->capture_default_str();
  train->add_option("--data", options->dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")->capture_default_str();
  train->add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
  train->add_option("--threads", options->threads, "CPU threads (0: all)")->capture_default_str();
  train->add_option("--batch", options->batch, "Images per iteration")->capture_default_str();
  train->add_option("--lr", options->sgd.learning_rate, "Learning rate eta")->capture_default_str();
  train->add_option("--momentum", options->sgd.momentum, "Momentum mu (0: plain SGD)")->capture_default_str();
  train->add_option("--weight-decay", options->sgd.weight_decay, "L2 weight decay")->capture_default_str();
  add_large_batch_options(*train, options->lr_scaling, options->reference_batch, options->sgd.warmup_iterations,
                          options->sgd.lars, options->sgd.lars_trust);
  train->add_option("--seed", options->seed, "Seed of initialisation, sampling and dropout")->capture_default_str();
  train->add_option("--iterations", options->iterations, "Stop after this many iterations")->check(positive_check());
  train->add_option("--seconds", options->seconds, "Stop after this much training time")->check(positive_check());
  train->add_option("--target-accuracy", options->target_accuracy, "Stop at this test accuracy (0: none)")
      ->capture_default_str();
  train->add_option("--eval-every", options->eval_every, "Iterations between test evaluations")->capture_default_str();
  train->add_option("--results", *results_path, "Write the results (JSON) here")->check(output_file_check());
  add_checkpoint_options(*train, options->checkpoint);
  add_memory_limit_option(*train, *memory_limit_bytes);
  train->callback([&context, options, results_path, memory_limit_bytes] {
    check_distinct_outputs({{"--checkpoint", options->checkpoint.path}, {"--results", *results_path}});
    // One worker's estimate (algorithms/memory_estimate.hpp), before a batch too big for this machine is allocated.
    algorithms::RunOptions one;
    one.workers = 1;
    one.model = options->model;
    one.hyper.batch = options->batch;
    if (options->batch >= 1) {
      algorithms::check_memory(algorithms::estimate_run_memory(one, 10000), *memory_limit_bytes,
                               "train: " + options->model + " with batch " + std::to_string(options->batch),
                               "a smaller batch");
    }
    note_resume("train", options->checkpoint, measure::check_resume(*options), context.err);
    context.err << "train: " << options->model << " on " << options->dataset << ", " << options->backend
                << " back end, batch " << options->batch << std::endl;
    const auto result = measure::train(*options, [&](const measure::EvalPoint& point) {
      char line[160];
      std::snprintf(line, sizeof line,
                    "  iteration %6lld  %7.1f s  train loss %.4f  test loss %.4f  test accuracy %.4f\n",
                    static_cast<long long>(point.iteration), point.train_seconds, point.train_loss, point.test_loss,
                    point.test_accuracy);
      context.err << line << std::flush;
    });
    auto results = new_results(context);
    results.benchmarks.push_back(train_entry(*options, result));
    if (!results_path->empty()) reports::write_results(*results_path, results);
    const auto& last = result.curve.back();
    // Names, paths and the libraries' own descriptions have no bound on their length: built, not formatted into a
    // buffer (one cut "OpenMP bu").
    context.out << options->model << " on " << options->dataset << ": test accuracy " << fixed(last.test_accuracy, 4)
                << " (" << result.test_images << " test images), " << result.iterations << " iterations in "
                << fixed(result.train_seconds, 1) << " s of training, " << fixed(result.images_per_second, 0)
                << " images/s; stopped by " << result.stop_reason << "\nback end: " << result.backend_description
                << '\n';
  });
}

}  // namespace dsgd::app
