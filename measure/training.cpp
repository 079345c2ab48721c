#include "measure/training.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/data/catalog.hpp"
#include "core/data/sampler.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
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

// Every option that shapes the weights (not the budget nor the evaluation), then the data.
Identity train_identity(const TrainOptions& options) {
  const auto real = [](double value) { return significant(value, 9); };
  const nn::SgdOptions& sgd = options.sgd;
  return {{"command", "train"},
          {"model", options.model},
          {"backend", options.backend},
          {"threads", std::to_string(options.threads)},
          {"batch", std::to_string(options.batch)},
          {"lr", real(sgd.learning_rate)},
          {"momentum", real(sgd.momentum)},
          {"weight_decay", real(sgd.weight_decay)},
          {"scaled_lr", real(scaled_learning_rate(options))},
          {"warmup_iterations", std::to_string(sgd.warmup_iterations)},
          {"schedule", sgd.schedule ? "a function" : "none"},
          {"lars", sgd.lars ? "yes" : "no"},
          {"lars_trust", real(sgd.lars_trust)},
          {"seed", std::to_string(options.seed)}};
}

void check_checkpoint(const TrainOptions& options) {
  if (!check_checkpoint_interval("train", options.checkpoint, options.eval_every)) return;
  // The state goes through the back end's copies, but only the CPU back end's resume is tested.
  if (options.backend != "cpu") {
    throw InputError("train: --checkpoint is for the cpu back end, not " + options.backend);
  }
  check_checkpointable(build_model(options.model));
}

// `count` floats of back-end memory at `data` to `out` / from `in`, through the host.
void save_floats(ByteWriter& out, nn::Backend& backend, const float* data, std::size_t count) {
  std::vector<float> host(data != nullptr ? count : 0);
  if (data != nullptr) backend.copy_to_host(host.data(), data, count);
  out.floats(host);
}

void load_floats(ByteReader& in, nn::Backend& backend, float* data, std::size_t count) {
  std::vector<float> host(data != nullptr ? count : 0);
  in.floats(host);
  if (data != nullptr) backend.copy_to_device(data, host.data(), count);
  backend.synchronize();
}

// The section "state": weights, the optimiser, and the history so far.
std::string save_state(nn::Backend& backend, nn::Network& network, nn::Sgd& sgd, const TrainResult& result) {
  ByteWriter out;
  save_floats(out, backend, network.parameters(), network.parameter_count());
  out.i64(sgd.steps());
  save_floats(out, backend, sgd.velocity(), sgd.count());
  out.i64(result.iterations);
  out.f64(result.train_seconds);
  out.f64(result.time_to_target_s);
  out.doubles(result.breakdown.seconds);
  out.u64(result.curve.size());
  for (const EvalPoint& point : result.curve) {
    const double fields[] = {static_cast<double>(point.iteration), point.train_seconds, point.test_accuracy,
                             point.test_loss, point.train_loss};
    out.doubles(fields);
  }
  return out.take();
}

void load_state(ByteReader& in, nn::Backend& backend, nn::Network& network, nn::Sgd& sgd, TrainResult& result) {
  load_floats(in, backend, network.parameters(), network.parameter_count());
  sgd.set_steps(in.i64());
  load_floats(in, backend, sgd.velocity(), sgd.count());
  result.iterations = in.i64();
  result.train_seconds = in.f64();
  result.time_to_target_s = in.f64();
  in.doubles(result.breakdown.seconds);
  result.curve.resize(in.u64());
  for (EvalPoint& point : result.curve) {
    double fields[5] = {};
    in.doubles(fields);
    point = {static_cast<std::int64_t>(fields[0]), fields[1], fields[2], fields[3], fields[4]};
  }
  if (!in.done()) throw InputError("checkpoint " + in.what() + ": holds more than a train checkpoint has");
}

// Backend memory freed on every path out of train().
struct DeviceBuffer {
  nn::Backend& backend;
  float* data;
  DeviceBuffer(nn::Backend& b, std::size_t count) : backend(b), data(b.allocate(count)) {}
  ~DeviceBuffer() { backend.release(data); }
};

}  // namespace

std::optional<std::int64_t> check_resume(const TrainOptions& options) {
  check(options);
  check_checkpoint(options);
  const std::string& path = options.checkpoint.path;
  if (!options.checkpoint.resume || !std::filesystem::exists(path)) return std::nullopt;
  const Checkpoint checkpoint = read_checkpoint(path);
  check_identity(path, checkpoint.identity, train_identity(options));
  check_not_spent(path, checkpoint.iteration, options.iterations);
  return checkpoint.iteration;
}

float scaled_learning_rate(const TrainOptions& options) {
  if (options.lr_scaling == nn::LrScaling::kLinear) {
    return nn::linearly_scaled_rate(options.sgd.learning_rate, options.batch, options.reference_batch);
  }
  return options.sgd.scaled_learning_rate > 0 ? options.sgd.scaled_learning_rate : options.sgd.learning_rate;
}

TrainResult train(const TrainOptions& options, const std::function<void(const EvalPoint&)>& progress) {
  check(options);
  check_checkpoint(options);
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

  if (static_cast<std::size_t>(options.batch) > data.train.size()) {
    throw InputError("train: --batch " + std::to_string(options.batch) + " is more than the " +
                     std::to_string(data.train.size()) + " training images of " + data.train.name);
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
  Identity identity;
  if (!options.checkpoint.path.empty()) {
    identity = train_identity(options);
    identity.emplace_back("train_data", data_identity(data.train));
    identity.emplace_back("test_data", data_identity(data.test));
  }
  if (options.checkpoint.resume && std::filesystem::exists(options.checkpoint.path)) {
    const std::string& path = options.checkpoint.path;
    Checkpoint checkpoint = read_checkpoint(path);
    check_identity(path, checkpoint.identity, identity);
    check_not_spent(path, checkpoint.iteration, options.iterations);
    ByteReader in(checkpoint.sections["state"], path + " state");
    load_state(in, *backend, network, sgd, result);
    sampler.seek(static_cast<std::uint64_t>(result.iterations));  // one batch per iteration
  }
  // Checkpoints follow evaluations, where no training loss is pending.
  const std::int64_t checkpoint_every = options.checkpoint.every > 0 ? options.checkpoint.every : options.eval_every;
  const auto save_checkpoint = [&] {
    Checkpoint checkpoint;
    checkpoint.identity = identity;
    checkpoint.iteration = result.iterations;
    checkpoint.sections["state"] = save_state(*backend, network, sgd, result);
    write_checkpoint(options.checkpoint.path, checkpoint);
  };

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
    const bool evaluate = result.iterations % options.eval_every == 0 || out_of_iterations || out_of_time;
    if (evaluate) {
      const double accuracy = evaluate_now();
      if (options.target_accuracy > 0 && accuracy >= options.target_accuracy) result.stop_reason = "target accuracy";
    }
    if (result.stop_reason.empty() && out_of_iterations) result.stop_reason = "iterations";
    if (result.stop_reason.empty() && out_of_time) result.stop_reason = "seconds";
    const bool stop = !result.stop_reason.empty();
    if (evaluate && !options.checkpoint.path.empty() && (stop || result.iterations % checkpoint_every == 0)) {
      save_checkpoint();
    }
    if (stop) break;
  }
  result.images_per_second =
      static_cast<double>(result.iterations) * options.batch / std::max(result.train_seconds, 1e-12);
  std::vector<float> weights(network.parameter_count());
  backend->copy_to_host(weights.data(), network.parameters(), weights.size());
  backend->synchronize();
  result.parameters_hash = fnv1a(weights.data(), weights.size() * sizeof(float));
  return result;
}

}  // namespace dsgd::measure
