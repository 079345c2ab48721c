#include "algorithms/memory_estimate.hpp"

#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/evaluation.hpp"

namespace dsgd::algorithms {

namespace {

constexpr double kFloat = sizeof(float);

}  // namespace

MemoryEstimate estimate_run_memory(const RunOptions& run, std::size_t test_images, int evaluators) {
  const ModelSpec model = build_model(run.model);
  const double parameters = static_cast<double>(model.parameters());
  const double per_image = static_cast<double>(model.activation_bytes()) +
                           kFloat * static_cast<double>(model.input.elements());  // outputs and the input
  const double vectors = kModelVectors * kFloat * parameters;
  MemoryEstimate estimate;
  // Forward outputs and their gradients: twice the activations of the batch.
  estimate.per_worker_bytes = vectors + 2.0 * run.hyper.batch * per_image + kRankOverheadBytes;
  const bool master = find_algorithm(run.algorithm).info.has_master;
  estimate.per_master_bytes = master ? vectors + kRankOverheadBytes : 0;
  estimate.evaluator_bytes =
      kFloat * parameters + 2.0 * nn::evaluation_batch(std::max<std::size_t>(test_images, 1)) * per_image;
  // A sharded parameter server's every server holds a whole replica (it updates only its shard).
  const int masters = master ? run.hyper.servers : 0;
  estimate.total_bytes = run.workers * estimate.per_worker_bytes + masters * estimate.per_master_bytes +
                         evaluators * estimate.evaluator_bytes;
  char text[400];
  std::snprintf(
      text, sizeof text,
      "%d workers x (%d model vectors of %.0f parameters + 2 x batch %d x %.0f bytes of activations + %s) "
      "%s+ %d x evaluator %s",
      run.workers, kModelVectors, parameters, run.hyper.batch, per_image, bytes_text(kRankOverheadBytes).c_str(),
      master ? ("+ " + std::to_string(masters) + " x master " + bytes_text(estimate.per_master_bytes) + " ").c_str()
             : "",
      evaluators, bytes_text(estimate.evaluator_bytes).c_str());
  estimate.formula = text;
  return estimate;
}

double memory_limit(double limit_bytes) {
  return limit_bytes > 0 ? limit_bytes : static_cast<double>(available_memory_bytes());
}

void check_memory(const MemoryEstimate& estimate, double limit_bytes, const std::string& what,
                  const std::string& advice) {
  const double limit = memory_limit(limit_bytes);
  if (estimate.total_bytes <= limit) return;
  throw InputError(what + ": an estimated " + bytes_text(estimate.total_bytes) + " (" + estimate.formula +
                   "), more than the " + bytes_text(limit) +
                   (limit_bytes > 0 ? " allowed (--memory-limit)" : " this machine has available (--memory-limit)") +
                   ": " + advice);
}

}  // namespace dsgd::algorithms
