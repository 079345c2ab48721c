#include "core/nn/evaluation.hpp"

#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace dsgd::nn {

int evaluation_batch(std::size_t n, int limit) {
  for (int b = limit; b > 1; --b) {
    if (n % static_cast<std::size_t>(b) == 0) return b;
  }
  return 1;
}

Evaluation evaluate(Network& evaluator, const data::Dataset& test) {
  const auto batch = static_cast<std::size_t>(evaluator.batch());
  if (test.size() == 0 || test.size() % batch != 0) {
    throw InputError("evaluation: the batch of " + std::to_string(batch) + " does not divide the " +
                     std::to_string(test.size()) + " test images of " + test.name);
  }
  Backend& backend = evaluator.backend();
  std::vector<float> host_images(batch * test.image_size());
  std::vector<float> host_labels(batch);
  float* images = backend.allocate(host_images.size());
  float* labels = backend.allocate(host_labels.size());
  std::vector<std::size_t> indices(batch);
  std::int64_t correct = 0;
  double loss_sum = 0;
  try {
    for (std::size_t start = 0; start < test.size(); start += batch) {
      std::iota(indices.begin(), indices.end(), start);
      data::fill_batch(test, indices, host_images, host_labels);
      backend.copy_to_device(images, host_images.data(), host_images.size());
      backend.copy_to_device(labels, host_labels.data(), host_labels.size());
      correct += evaluator.evaluate(images, labels, &loss_sum);
    }
  } catch (...) {
    backend.release(images);
    backend.release(labels);
    throw;
  }
  backend.release(images);
  backend.release(labels);
  const auto n = static_cast<double>(test.size());
  return {static_cast<double>(correct) / n, loss_sum / n};
}

}  // namespace dsgd::nn
