#include <cinttypes>
#include <cstdio>

#include "measure/training.hpp"

namespace dsgd::measure {

reports::Entry to_entry(const TrainOptions& options, const TrainResult& result) {
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
                             {"scaled_learning_rate", scaled_learning_rate(options)},
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
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, result.parameters_hash);
  entry.labels = {
      {"backend", result.backend_description}, {"stop_reason", result.stop_reason}, {"parameters_fnv1a", hash}};
  const auto& last = result.curve.back();
  entry.counters = {{"test_accuracy", last.test_accuracy},
                    {"test_loss", last.test_loss},
                    {"train_loss", last.train_loss},
                    {"images_per_second", result.images_per_second},
                    {"test_images", static_cast<double>(result.test_images)}};
  if (result.time_to_target_s >= 0) entry.counters["time_to_target_s"] = result.time_to_target_s;
  reports::set_breakdown(entry, result.breakdown);
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

}  // namespace dsgd::measure
