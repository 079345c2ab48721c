// `dsgd train`: one worker, one back end, real data (issue 4). With no arguments: LeNet on Debian's
// Fashion-MNIST, momentum SGD, on the CPU, until 89% test accuracy (or 10 minutes).
#include <cstdio>

#include "algorithms/memory_estimate.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/atomic_file.hpp"
#include "core/data/catalog.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "measure/training.hpp"

namespace dsgd::app {

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
    results.benchmarks.push_back(measure::to_entry(*options, result));
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
