#include "measure/training.hpp"

#include <chrono>
#include <cmath>

#include "core/data/catalog.hpp"
#include "core/data/sampler.hpp"
#include "core/error.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/evaluation.hpp"
#include "core/nn/network.hpp"

namespace dsgd::measure {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void check(const TrainOptions& options) {
  if (options.batch < 1) throw InputError("train: --batch must be at least 1, got " + std::to_string(options.batch));
  if (options.iterations <= 0 && options.seconds <= 0 && options.target_accuracy <= 0) {
    throw InputError("train: no budget: give --iterations, --seconds or --target-accuracy");
  }
  if (options.target_accuracy > 1) {
    throw InputError("train: --target-accuracy is a fraction in (0, 1], got " +
                     std::to_string(options.target_accuracy));
  }
  if (options.eval_every < 1) throw InputError("train: --eval-every must be at least 1");
  if (options.reference_batch < 1) {
    throw InputError("train: --reference-batch must be at least 1, got " + std::to_string(options.reference_batch));
  }
  if (options.sgd.warmup_iterations > 0 && options.lr_scaling == nn::LrScaling::kNone) {
    throw InputError("train: --warmup-iterations ramps --lr up to the scaled rate; it needs --lr-scaling linear");
  }
}

// The optimiser's options: the large-batch rules applied for this batch, LARS's layers from the network.
nn::SgdOptions sgd_options(const TrainOptions& options, const nn::Network& network) {
  nn::SgdOptions sgd = options.sgd;
  sgd.scaled_learning_rate = scaled_learning_rate(options);
  sgd.layout = network.layout();
  return sgd;
}

// Backend memory freed on every path out of train().
struct DeviceBuffer {
  nn::Backend& backend;
  float* data;
  DeviceBuffer(nn::Backend& b, std::size_t count) : backend(b), data(b.allocate(count)) {}
  ~DeviceBuffer() { backend.release(data); }
};

}  // namespace

float scaled_learning_rate(const TrainOptions& options) {
  if (options.lr_scaling == nn::LrScaling::kLinear) {
    return nn::linearly_scaled_rate(options.sgd.learning_rate, options.batch, options.reference_batch);
  }
  return options.sgd.scaled_learning_rate > 0 ? options.sgd.scaled_learning_rate : options.sgd.learning_rate;
}

TrainResult train(const TrainOptions& options, const std::function<void(const EvalPoint&)>& progress) {
  check(options);
  const ModelSpec model = build_model(options.model);
  data::TrainTestData data = data::load_normalized(options.dataset);
  const Shape input{data.train.channels, data.train.height, data.train.width};
  if (!(input == model.input) || data.train.classes > model.classes) {
    throw InputError("train: model '" + options.model + "' takes " + std::to_string(model.input.channels) + "x" +
                     std::to_string(model.input.height) + "x" + std::to_string(model.input.width) + " images of " +
                     std::to_string(model.classes) + " classes, dataset '" + options.dataset + "' has " +
                     std::to_string(input.channels) + "x" + std::to_string(input.height) + "x" +
                     std::to_string(input.width) + " images of " + std::to_string(data.train.classes) + " classes");
  }

  nn::BackendOptions backend_options;
  backend_options.threads = options.threads;
  backend_options.seed = options.seed;
  const auto backend = nn::make_backend(options.backend, backend_options);
  nn::Network network(model, *backend, options.batch);
  network.initialize(options.seed);
  nn::Network evaluator(model, *backend, nn::evaluation_batch(data.test.size()));
  nn::Sgd sgd(*backend, network.parameter_count(), sgd_options(options, network));

  const auto image_floats = data.train.image_size();
  const auto train_batch = static_cast<std::size_t>(options.batch);
  DeviceBuffer images(*backend, train_batch * image_floats);
  DeviceBuffer labels(*backend, train_batch);
  std::vector<float> host_images(train_batch * image_floats);
  std::vector<float> host_labels(train_batch);

  // A target accuracy alone might never be reached: it runs under a 10-minute training-time cap.
  const double seconds_budget = options.seconds > 0 ? options.seconds : options.iterations > 0 ? 0.0 : 600.0;
  data::BatchSampler sampler(data.train.size(), train_batch, options.seed);
  TrainResult result;
  result.backend_description = backend->description();
  result.test_images = static_cast<std::int64_t>(data.test.size());
  double loss_since_eval = 0;
  std::int64_t batches_since_eval = 0;

  auto evaluate_now = [&] {
    backend->copy(evaluator.parameters(), network.parameters(), network.parameter_count());
    const auto [accuracy, loss] = nn::evaluate(evaluator, data.test);
    EvalPoint point{result.iterations, result.train_seconds, accuracy, loss,
                    batches_since_eval ? loss_since_eval / static_cast<double>(batches_since_eval) : 0.0};
    result.curve.push_back(point);
    loss_since_eval = 0;
    batches_since_eval = 0;
    if (progress) progress(point);
    if (options.target_accuracy > 0 && accuracy >= options.target_accuracy && result.time_to_target_s < 0) {
      result.time_to_target_s = result.train_seconds;
    }
    return accuracy;
  };

  while (true) {
    // Copying a batch to the worker device: seed 000's "cpu-gpu data".
    auto start = Clock::now();
    data::fill_batch(data.train, sampler.next(), host_images, host_labels);
    backend->copy_to_device(images.data, host_images.data(), host_images.size());
    backend->copy_to_device(labels.data, host_labels.data(), host_labels.size());
    backend->synchronize();
    double step_s = since(start);
    result.breakdown.add(Category::kCpuGpuData, step_s);
    result.train_seconds += step_s;

    start = Clock::now();
    const double loss = network.train_step(images.data, labels.data);
    backend->synchronize();
    step_s = since(start);
    result.breakdown.add(Category::kForwardBackward, step_s);
    result.train_seconds += step_s;
    if (!std::isfinite(loss)) {
      throw Error("train: the loss became " + std::to_string(loss) + " at iteration " +
                  std::to_string(result.iterations + 1) + " (diverged; lower --lr)");
    }

    start = Clock::now();
    sgd.step(network.parameters(), network.gradients());
    backend->synchronize();
    step_s = since(start);
    result.breakdown.add(Category::kGpuUpdate, step_s);
    result.train_seconds += step_s;

    ++result.iterations;
    loss_since_eval += loss;
    ++batches_since_eval;

    const bool out_of_iterations = options.iterations > 0 && result.iterations >= options.iterations;
    const bool out_of_time = seconds_budget > 0 && result.train_seconds >= seconds_budget;
    if (result.iterations % options.eval_every == 0 || out_of_iterations || out_of_time) {
      const double accuracy = evaluate_now();
      if (options.target_accuracy > 0 && accuracy >= options.target_accuracy) {
        result.stop_reason = "target accuracy";
        break;
      }
    }
    if (out_of_iterations) {
      result.stop_reason = "iterations";
      break;
    }
    if (out_of_time) {
      result.stop_reason = "seconds";
      break;
    }
  }
  result.images_per_second =
      static_cast<double>(result.iterations) * options.batch / std::max(result.train_seconds, 1e-12);
  return result;
}

}  // namespace dsgd::measure
