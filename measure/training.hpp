#pragma once
// Single-worker training on one back end: the native baseline every distributed algorithm is compared with, and
// the run that shows the kernels are real (issue 4: LeNet on Fashion-MNIST to >= 89% test accuracy).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/comm.hpp"
#include "core/nn/sgd.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

struct TrainOptions {
  std::string model = "lenet";
  std::string dataset = "fashion-mnist";
  std::string backend = "cpu";
  int threads = 0;  // CPU threads; 0: all
  int batch = 64;
  nn::SgdOptions sgd{.learning_rate = 0.01F,
                     .momentum = 0.9F,
                     .weight_decay = 5e-4F};  // its warm-up and LARS fields as given; train() fills the layout
  // Linear scaling (docs/nn.md "Optimizer options"): the rate after warm-up becomes sgd.learning_rate * batch /
  // reference_batch (one worker, so the global batch is the batch).
  nn::LrScaling lr_scaling = nn::LrScaling::kNone;
  int reference_batch = 64;
  std::uint64_t seed = 1;
  // Budget: training stops at the first one reached (0 = not set; at least one must be set).
  std::int64_t iterations = 0;
  double seconds = 0;             // training time, evaluation excluded
  double target_accuracy = 0;     // test accuracy in (0, 1]; alone, it runs under a 600 s cap
  std::int64_t eval_every = 500;  // iterations between test-set evaluations (and at the end)
  // Checkpoints after evaluations, and resuming bit for bit from one (docs/checkpoint.md).
  CheckpointOptions checkpoint;
};

// One evaluation on the test set.
struct EvalPoint {
  std::int64_t iteration = 0;
  double train_seconds = 0;  // training time so far, evaluations excluded
  double test_accuracy = 0;
  double test_loss = 0;
  double train_loss = 0;  // mean over the batches since the previous point
};

struct TrainResult {
  std::vector<EvalPoint> curve;
  std::int64_t iterations = 0;
  double train_seconds = 0;
  double images_per_second = 0;
  double time_to_target_s = -1;  // training seconds when the target accuracy was first reached, or -1
  std::int64_t test_images = 0;
  Breakdown breakdown;  // cpu-gpu data (batch copies), for/backward, gpu update
  std::string backend_description;
  std::string stop_reason;  // "iterations", "seconds", "target accuracy"
  // FNV-1a of the final weights' bytes (core/hash.hpp): equal hashes, bit-identical weights.
  std::uint64_t parameters_hash = 0;
};

// The rate after warm-up: sgd.learning_rate linearly scaled, or sgd's scaled rate (0: the base rate).
float scaled_learning_rate(const TrainOptions& options);

// Before training, with --resume: nullopt where the checkpoint file does not exist (a fresh start), else the
// iteration it resumes from, after checking the file's integrity, the options that shape the weights and that
// --iterations is not spent (InputError naming the file). The data are checked when training starts.
std::optional<std::int64_t> check_resume(const TrainOptions& options);

// Trains per `options`, calling `progress` after every evaluation. Throws InputError for bad options (no budget,
// batch < 1, unknown model/dataset/back end names list the valid ones), UnavailableError when the data or back end
// is missing here.
TrainResult train(const TrainOptions& options, const std::function<void(const EvalPoint&)>& progress = {});

// The run's results entry (docs/results-schema.md): its options, the last evaluation, the parameters' hash, the
// breakdown and the curves of test accuracy (by time and iteration) and training loss (measure/training_entry.cpp).
reports::Entry to_entry(const TrainOptions& options, const TrainResult& result);

}  // namespace dsgd::measure
