#include "core/nn/evaluation.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace dsgd::nn {

namespace {

// Batches [first, end) of `test` through `evaluator`: per batch, the images it classifies right and its loss summed
// over its images, at index batch - first of the outputs.
void evaluate_batches(Network& evaluator, const data::Dataset& test, std::size_t first, std::size_t end,
                      std::int64_t* correct, double* loss) {
  const auto batch = static_cast<std::size_t>(evaluator.batch());
  Backend& backend = evaluator.backend();
  std::vector<float> host_images(batch * test.image_size());
  std::vector<float> host_labels(batch);
  float* images = backend.allocate(host_images.size());
  float* labels = backend.allocate(host_labels.size());
  std::vector<std::size_t> indices(batch);
  try {
    for (std::size_t b = first; b < end; ++b) {
      std::iota(indices.begin(), indices.end(), b * batch);
      data::fill_batch(test, indices, host_images, host_labels);
      backend.copy_to_device(images, host_images.data(), host_images.size());
      backend.copy_to_device(labels, host_labels.data(), host_labels.size());
      loss[b - first] = 0;
      correct[b - first] = evaluator.evaluate(images, labels, &loss[b - first]);
    }
  } catch (...) {
    backend.release(images);
    backend.release(labels);
    throw;
  }
  backend.release(images);
  backend.release(labels);
}

}  // namespace

int evaluation_batch(std::size_t n, int limit) {
  for (int b = limit; b > 1; --b) {
    if (n % static_cast<std::size_t>(b) == 0) return b;
  }
  return 1;
}

int evaluation_parts(std::size_t n, int available) {
  const std::size_t images = std::max<std::size_t>(n, 1);
  const auto batches = static_cast<int>(images / static_cast<std::size_t>(evaluation_batch(images)));
  return std::max(1, std::min(available, batches));
}

Evaluation evaluate(Network& evaluator, const data::Dataset& test) {
  Network* const one[] = {&evaluator};
  return evaluate(one, test, [](std::span<const std::function<void()>> parts) {
    for (const auto& part : parts) part();
  });
}

Evaluation evaluate(std::span<Network* const> evaluators, const data::Dataset& test, const SideBySide& run) {
  DSGD_ENFORCE(!evaluators.empty(), "evaluation without an evaluator");
  const auto batch = static_cast<std::size_t>(evaluators.front()->batch());
  if (test.size() == 0 || test.size() % batch != 0) {
    throw InputError("evaluation: the batch of " + std::to_string(batch) + " does not divide the " +
                     std::to_string(test.size()) + " test images of " + test.name);
  }
  const std::size_t batches = test.size() / batch;
  const std::size_t parts = std::min(evaluators.size(), batches);
  std::vector<std::int64_t> correct(batches);
  std::vector<double> loss(batches);
  std::vector<std::function<void()>> work;
  for (std::size_t p = 0; p < parts; ++p) {
    Network& evaluator = *evaluators[p];
    DSGD_ENFORCE(static_cast<std::size_t>(evaluator.batch()) == batch, "evaluators of different batches");
    const std::size_t first = batches * p / parts;
    const std::size_t end = batches * (p + 1) / parts;
    work.emplace_back([&evaluator, &test, first, end, &correct, &loss] {
      evaluate_batches(evaluator, test, first, end, correct.data() + first, loss.data() + first);
    });
  }
  run(work);
  // In batch order, as one evaluator going through the batches one after another adds them.
  std::int64_t correct_sum = 0;
  double loss_sum = 0;
  for (std::size_t b = 0; b < batches; ++b) {
    correct_sum += correct[b];
    loss_sum += loss[b];
  }
  const auto n = static_cast<double>(test.size());
  return {static_cast<double>(correct_sum) / n, loss_sum / n};
}

}  // namespace dsgd::nn
