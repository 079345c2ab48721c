#include "measure/noise_scale.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/data/sampler.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::measure {

namespace {

double sample_stddev(const std::vector<double>& values, double mean) {
  if (values.size() < 2) return 0;
  double squares = 0;
  for (const double v : values) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

// Backend memory freed on every path out of measure_noise_scale().
struct DeviceBuffer {
  nn::Backend& backend;
  float* data;
  DeviceBuffer(nn::Backend& b, std::size_t count) : backend(b), data(b.allocate(count)) {}
  ~DeviceBuffer() { backend.release(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// The SGD sampler's seed: apart from the measurement's (SplitMix64's constant), so the measured batches are the
// same whatever number of SGD steps runs between them.
std::uint64_t sgd_seed(std::uint64_t seed) { return seed + 0x9E3779B97F4A7C15ULL; }

}  // namespace

NoiseScaleEstimate estimate_noise_scale(std::span<const GradientNormSample> samples, double small_batch,
                                        double big_batch) {
  if (samples.empty()) throw InputError("noise scale: no gradient-norm samples given");
  if (!(small_batch > 0 && big_batch > small_batch && std::isfinite(big_batch))) {
    throw InputError("noise scale: the batches must satisfy 0 < small < big, got small " + significant(small_batch, 6) +
                     ", big " + significant(big_batch, 6));
  }
  NoiseScaleEstimate estimate;
  estimate.small_batch = small_batch;
  estimate.big_batch = big_batch;
  estimate.steps = samples.size();
  estimate.samples.assign(samples.begin(), samples.end());

  // Per step, both unbiased estimators; their means are the estimates (means of the numerators over constant
  // denominators), the ratio is taken once at the end.
  std::vector<double> gradient_sq(samples.size());
  std::vector<double> trace_sigma(samples.size());
  double gradient_sq_sum = 0;
  double trace_sigma_sum = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (!std::isfinite(s.small_norm_sq) || !std::isfinite(s.big_norm_sq)) {
      throw InputError("noise scale: sample " + std::to_string(i) + " has a non-finite squared norm (small " +
                       significant(s.small_norm_sq, 6) + ", big " + significant(s.big_norm_sq, 6) + ")");
    }
    gradient_sq[i] = (big_batch * s.big_norm_sq - small_batch * s.small_norm_sq) / (big_batch - small_batch);
    trace_sigma[i] = (s.small_norm_sq - s.big_norm_sq) / (1 / small_batch - 1 / big_batch);
    gradient_sq_sum += gradient_sq[i];
    trace_sigma_sum += trace_sigma[i];
  }
  const auto n = static_cast<double>(samples.size());
  estimate.gradient_sq = gradient_sq_sum / n;
  estimate.trace_sigma = trace_sigma_sum / n;
  estimate.gradient_sq_stddev = sample_stddev(gradient_sq, estimate.gradient_sq);
  estimate.trace_sigma_stddev = sample_stddev(trace_sigma, estimate.trace_sigma);
  estimate.b_simple =
      estimate.gradient_sq > 0 ? estimate.trace_sigma / estimate.gradient_sq : std::numeric_limits<double>::infinity();
  return estimate;
}

GradientNormSample gradient_norms(std::span<const float> gradients, std::size_t dimension) {
  if (dimension == 0 || gradients.size() % dimension != 0 || gradients.size() / dimension < 2) {
    throw InputError("noise scale: need 2 or more gradient vectors of " + std::to_string(dimension) + " floats, got " +
                     std::to_string(gradients.size()) + " floats");
  }
  const std::size_t groups = gradients.size() / dimension;
  // Sums in double: a LeNet gradient has 431k elements, float sums of squares would lose digits.
  std::vector<double> sum(dimension, 0.0);
  double small_sq_sum = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const float* vector = gradients.data() + g * dimension;
    for (std::size_t j = 0; j < dimension; ++j) {
      const double v = vector[j];
      small_sq_sum += v * v;
      sum[j] += v;
    }
  }
  GradientNormSample sample;
  sample.small_norm_sq = small_sq_sum / static_cast<double>(groups);
  const double inverse = 1.0 / static_cast<double>(groups);
  for (const double s : sum) sample.big_norm_sq += (s * inverse) * (s * inverse);
  return sample;
}

NoiseScaleEstimate measure_noise_scale(nn::Network& network, const data::Dataset& train,
                                       const NoiseScaleOptions& options) {
  if (options.groups < 2) {
    throw InputError("noise scale: groups (P) must be at least 2, got " + std::to_string(options.groups));
  }
  if (options.steps < 1)
    throw InputError("noise scale: steps (K) must be at least 1, got " + std::to_string(options.steps));
  if (options.sgd_steps_before < 0 || options.sgd_steps_between < 0) {
    throw InputError("noise scale: SGD step counts must be >= 0, got before " +
                     std::to_string(options.sgd_steps_before) + ", between " +
                     std::to_string(options.sgd_steps_between));
  }
  const auto batch = static_cast<std::size_t>(network.batch());
  if (train.size() < batch) {
    throw InputError("noise scale: dataset '" + train.name + "' has " + std::to_string(train.size()) +
                     " samples, fewer than one batch of " + std::to_string(batch));
  }
  if (static_cast<std::int64_t>(train.image_size()) != network.model().input.elements() ||
      train.classes > network.model().classes) {
    throw InputError("noise scale: dataset '" + train.name + "' (" + std::to_string(train.image_size()) +
                     " floats per image, " + std::to_string(train.classes) + " classes) does not fit model '" +
                     network.model().name + "' (" + std::to_string(network.model().input.elements()) + ", " +
                     std::to_string(network.model().classes) + ")");
  }
  nn::Backend& backend = network.backend();
  nn::Sgd sgd(backend, network.parameter_count(), options.sgd);

  const std::size_t dimension = network.parameter_count();
  const auto groups = static_cast<std::size_t>(options.groups);
  DeviceBuffer images(backend, batch * train.image_size());
  DeviceBuffer labels(backend, batch);
  std::vector<float> host_images(batch * train.image_size());
  std::vector<float> host_labels(batch);
  std::vector<float> host_gradients(groups * dimension);

  // Forward and backward on the sampler's next batch: leaves that batch's gradient in network.gradients().
  const auto gradient_of_next_batch = [&](data::BatchSampler& sampler) {
    data::fill_batch(train, sampler.next(), host_images, host_labels);
    backend.copy_to_device(images.data, host_images.data(), host_images.size());
    backend.copy_to_device(labels.data, host_labels.data(), host_labels.size());
    const double loss = network.train_step(images.data, labels.data);
    if (!std::isfinite(loss)) {
      throw Error("noise scale: the loss became " + significant(loss, 6) + " (diverged; lower the SGD rate)");
    }
  };
  data::BatchSampler measure_sampler(train.size(), batch, options.seed);
  data::BatchSampler sgd_sampler(train.size(), batch, sgd_seed(options.seed));
  const auto sgd_steps = [&](int count) {
    for (int i = 0; i < count; ++i) {
      gradient_of_next_batch(sgd_sampler);
      sgd.step(network.parameters(), network.gradients());
    }
  };

  sgd_steps(options.sgd_steps_before);
  std::vector<GradientNormSample> samples;
  for (int step = 0; step < options.steps; ++step) {
    // P gradients at the same weights: train_step writes gradients and touches no weight.
    for (std::size_t g = 0; g < groups; ++g) {
      gradient_of_next_batch(measure_sampler);
      backend.copy_to_host(host_gradients.data() + g * dimension, network.gradients(), dimension);
    }
    samples.push_back(gradient_norms(host_gradients, dimension));
    if (step + 1 < options.steps) sgd_steps(options.sgd_steps_between);
  }
  backend.synchronize();
  return estimate_noise_scale(samples, static_cast<double>(batch), static_cast<double>(batch * groups));
}

}  // namespace dsgd::measure
