#include "algorithms/runner.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "algorithms/run_checkpoint.hpp"
#include "algorithms/trainer.hpp"
#include "core/collectives.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/evaluation.hpp"

namespace dsgd::algorithms {

namespace {

// The runner's own messages, apart from the algorithms' (which use kFirstCollectiveTag and below).
constexpr Tag kRoundTag = kFirstCollectiveTag + 1;
constexpr Tag kStopTag = kFirstCollectiveTag + 2;
constexpr Tag kBreakdownTag = kFirstCollectiveTag + 3;
// A target accuracy alone might never be reached.
constexpr double kTargetOnlyCapSeconds = 600;

Breakdown minus(const Breakdown& later, const Breakdown& earlier) {
  Breakdown difference;
  for (std::size_t i = 0; i < later.seconds.size(); ++i) difference.seconds[i] = later.seconds[i] - earlier.seconds[i];
  return difference;
}

void add(Breakdown& total, const Breakdown& part) {
  for (std::size_t i = 0; i < total.seconds.size(); ++i) total.seconds[i] += part.seconds[i];
}

// Rank 0's side of the run: evaluations, the curve and the stop decision.
class Recorder {
 public:
  Recorder(const RunOptions& options, const RunData& data, Trainer& trainer, RunResult& result)
      : options_(options), data_(data), result_(result) {
    if (trainer.has_data()) {
      const int batch = nn::evaluation_batch(data.test->size());
      evaluator_ = std::make_unique<nn::Network>(trainer.network().model(), trainer.backend(), batch);
      record_.resize(evaluator_->parameter_count());
      evaluators_.push_back(evaluator_.get());
      // Where the executor runs kernels side by side (a numeric simulation's pool), the test set is split over
      // evaluators of their own back ends (a oneDNN stream serves one thread); CPU only, as on a GPU one evaluator
      // already has the device. Counted in the run's memory estimate (algorithms/memory_estimate.hpp).
      if (trainer.backend().name() == "cpu") {
        for (int k = 1; k < nn::evaluation_parts(data.test->size(), trainer.comm().side_by_side()); ++k) {
          auto& part = parts_.emplace_back();
          part.backend = nn::make_backend("cpu", trainer.cpu_options());
          part.network = std::make_unique<nn::Network>(trainer.network().model(), *part.backend, batch);
          evaluators_.push_back(part.network.get());
        }
      }
    }
  }

  // After a round of `iterations` taking `seconds` with `train_loss`: evaluates `algorithm`'s model, records the
  // point and returns whether to stop.
  bool after_round(Algorithm& algorithm, Trainer& trainer, std::int64_t iterations, double seconds, double train_loss) {
    result_.iterations += iterations;
    result_.train_seconds += seconds;
    if (!evaluator_) return result_.iterations >= options_.budget.iterations;  // size-only: nothing to evaluate
    // The model of record in host memory, then where the evaluator computes (the GPU on the cuda back end).
    algorithm.model_of_record(trainer, record_);
    check_finite(trainer);
    trainer.backend().copy_to_device(evaluator_->parameters(), record_.data(), record_.size());
    trainer.backend().synchronize();
    for (auto& part : parts_) part.backend->copy_to_device(part.network->parameters(), record_.data(), record_.size());
    Comm& comm = trainer.comm();
    const auto evaluation =
        nn::evaluate(evaluators_, *data_.test,
                     [&comm](std::span<const std::function<void()>> work) { comm.run_side_by_side(work); });
    RunPoint point;
    point.iterations = result_.iterations;
    point.images = static_cast<double>(result_.iterations) * options_.hyper.batch * options_.workers;
    point.seconds = result_.train_seconds;
    point.test_accuracy = evaluation.accuracy;
    point.test_loss = evaluation.loss;
    point.train_loss = train_loss;
    result_.curve.push_back(point);
    const Budget& budget = options_.budget;
    if (budget.target_accuracy > 0 && evaluation.accuracy >= budget.target_accuracy && result_.time_to_target_s < 0) {
      result_.time_to_target_s = result_.train_seconds;
      result_.stop_reason = "target accuracy";
      return true;
    }
    if (budget.iterations > 0 && result_.iterations >= budget.iterations) {
      result_.stop_reason = "iterations";
      return true;
    }
    if (options_.interrupt != nullptr && options_.interrupt->requested()) {
      result_.stop_reason = "interrupted";
      return true;
    }
    const double seconds_budget = budget.seconds > 0      ? budget.seconds
                                  : budget.iterations > 0 ? 0.0
                                                          : kTargetOnlyCapSeconds;
    if (seconds_budget > 0 && result_.train_seconds >= seconds_budget) {
      result_.stop_reason = "seconds";
      return true;
    }
    return false;
  }

  // A weight that is NaN or infinite ends the run: the loss alone does not show it, as ReLU and max pooling can
  // turn NaN activations back into finite ones, and the run would go on at chance accuracy.
  void check_finite(const Trainer& trainer) const {
    const auto bad = std::find_if(record_.begin(), record_.end(), [](float w) { return !std::isfinite(w); });
    if (bad == record_.end()) return;
    const auto count = std::count_if(bad, record_.end(), [](float w) { return !std::isfinite(w); });
    throw DivergedError(trainer.info().name + ": " + std::to_string(count) + " of " + std::to_string(record_.size()) +
                        " weights of the model of record are not finite at iteration " +
                        std::to_string(result_.iterations) + " (the first at " + std::to_string(bad - record_.begin()) +
                        "; diverged: lower the learning rate)");
  }

  void finish(Trainer& trainer) {
    result_.staleness = trainer.staleness();
    result_.clock_staleness = trainer.clock_staleness();
    result_.overlapped_comm_s = trainer.overlapped_comm_s();
    const double images = static_cast<double>(result_.iterations) * options_.hyper.batch * options_.workers;
    result_.images_per_second = images / std::max(result_.train_seconds, 1e-12);
    if (!evaluator_) return;
    // The model of record of the last round.
    result_.parameters_hash = fnv1a(record_.data(), record_.size() * sizeof(float));
  }

 private:
  const RunOptions& options_;
  const RunData& data_;
  RunResult& result_;
  std::unique_ptr<nn::Network> evaluator_;  // null in a size-only world
  // More evaluators, each on its back end, where the executor runs kernels side by side.
  struct Part {
    std::unique_ptr<nn::Backend> backend;
    std::unique_ptr<nn::Network> network;
  };
  std::vector<Part> parts_;
  std::vector<nn::Network*> evaluators_;  // evaluator_, then the parts'
  std::vector<float> record_;             // the model of record, host memory
};

}  // namespace

void check_run_options(const RunOptions& options) {
  (void)resolve_options(find_algorithm(options.algorithm).info, options.hyper.own);  // lists the valid names
  build_model(options.model);
  if (options.workers < 1)
    throw InputError("run: --workers must be at least 1, got " + std::to_string(options.workers));
  const auto& hyper = options.hyper;
  if (hyper.batch < 1) throw InputError("run: --batch must be at least 1, got " + std::to_string(hyper.batch));
  if (hyper.period < 1) throw InputError("run: --period must be at least 1, got " + std::to_string(hyper.period));
  if (hyper.servers < 1) throw InputError("run: --servers must be at least 1, got " + std::to_string(hyper.servers));
  if (hyper.servers > 1 && !find_algorithm(options.algorithm).info.shardable) {
    std::string takers;
    for (const auto& entry : algorithm_catalog()) {
      if (entry.info.shardable) takers += (takers.empty() ? "" : ", ") + entry.info.name;
    }
    throw InputError("run: --servers " + std::to_string(hyper.servers) + " needs a parameter-server algorithm (" +
                     takers + "), not " + options.algorithm);
  }
  if (hyper.staleness_bound < 0) {
    throw InputError("run: --staleness-bound must be >= 0, got " + std::to_string(hyper.staleness_bound));
  }
  if (!(hyper.learning_rate > 0)) throw InputError("run: --lr must be > 0");
  if (hyper.elastic_rho < 0) throw InputError("run: --rho must be >= 0 (0: alpha = 0.9 / workers)");
  if (options.threads_per_rank < 1) throw InputError("run: --threads must be at least 1");
  nn::backend_device_count(options.backend);  // UnknownNameError lists the back ends
  if (hyper.reference_batch < 1) {
    throw InputError("run: --reference-batch must be at least 1, got " + std::to_string(hyper.reference_batch));
  }
  if (hyper.warmup_iterations < 0) {
    throw InputError("run: --warmup-iterations must be >= 0, got " + std::to_string(hyper.warmup_iterations));
  }
  if (hyper.warmup_iterations > 0 && hyper.lr_scaling == nn::LrScaling::kNone) {
    throw InputError("run: --warmup-iterations ramps --lr up to the scaled rate; it needs --lr-scaling linear");
  }
  if (!(hyper.lars_trust > 0) || !std::isfinite(hyper.lars_trust)) {
    throw InputError("run: --lars-trust must be > 0, got " + significant(hyper.lars_trust));
  }
  if (hyper.compression != Compression::kNone && !find_algorithm(options.algorithm).info.compresses) {
    std::string compressing;
    for (const auto& entry : algorithm_catalog()) {
      if (entry.info.compresses) compressing += (compressing.empty() ? "" : ", ") + entry.info.name;
    }
    throw InputError("run: " + options.algorithm + " does not compress its exchange; --compression " +
                     std::string(to_string(hyper.compression)) + " needs one of: " + compressing);
  }
  if (!(hyper.datagrams.loss_rate >= 0 && hyper.datagrams.loss_rate < 1)) {
    throw InputError("run: --loss-rate is a fraction in [0, 1), got " + significant(hyper.datagrams.loss_rate));
  }
  if (hyper.datagrams.receive_buffer_bytes < 1) throw InputError("run: --receive-buffer must be at least 1 byte");
  if (!(hyper.datagrams.send_rate_Bps >= 0) || !std::isfinite(hyper.datagrams.send_rate_Bps)) {
    throw InputError("run: --send-rate must be >= 0 bytes per second (0: unpaced)");
  }
  if (hyper.chunk_floats < 1 || hyper.chunk_floats > kMaxChunkFloats) {
    throw InputError("run: --chunk-floats must be in [1, " + std::to_string(kMaxChunkFloats) +
                     "] (a UDP datagram), got " + std::to_string(hyper.chunk_floats));
  }
  if (!(hyper.topk_ratio > 0 && hyper.topk_ratio <= 1)) {
    throw InputError("run: --topk-ratio is a fraction in (0, 1], got " + significant(hyper.topk_ratio));
  }
  const Budget& budget = options.budget;
  // 0 means "no limit" inside dsgd; a user's 0 or negative value is a mistake, not a request for no limit.
  if (budget.iterations < 0) {
    throw InputError("run: --iterations must be positive, got " + std::to_string(budget.iterations));
  }
  if (budget.seconds < 0 || !std::isfinite(budget.seconds)) {
    throw InputError("run: --seconds must be positive, got " + significant(budget.seconds));
  }
  if (budget.target_accuracy < 0) throw InputError("run: --target-accuracy is a fraction in (0, 1]");
  if (budget.iterations <= 0 && budget.seconds <= 0 && budget.target_accuracy <= 0) {
    throw InputError("run: no budget: give --iterations, --seconds or --target-accuracy");
  }
  if (budget.target_accuracy > 1) throw InputError("run: --target-accuracy is a fraction in (0, 1]");
  if (budget.eval_every < 1 || budget.eval_every % hyper.period != 0) {
    throw InputError("run: --eval-every (" + std::to_string(budget.eval_every) +
                     ") must be a positive multiple of --period (" + std::to_string(hyper.period) + ")");
  }
  if (budget.iterations % hyper.period != 0) {
    throw InputError("run: --iterations (" + std::to_string(budget.iterations) + ") must be a multiple of --period (" +
                     std::to_string(hyper.period) + ")");
  }
  check_checkpoint_options(options);
}

std::optional<double> bytes_sent_per_iteration(const RunResult& result, bool master) {
  if (result.iterations <= 0) return std::nullopt;
  const auto& bytes = result.bytes_sent_per_rank;
  const auto iterations = static_cast<double>(result.iterations);
  if (master) {
    if (!result.info.has_master || bytes.empty() || !bytes[0]) return std::nullopt;
    return static_cast<double>(*bytes[0]) / iterations;
  }
  double sum = 0;
  int reported = 0;
  for (std::size_t rank = result.info.has_master ? 1 : 0; rank < bytes.size(); ++rank) {
    if (!bytes[rank]) continue;
    sum += static_cast<double>(*bytes[rank]);
    ++reported;
  }
  if (reported == 0) return std::nullopt;
  return sum / reported / iterations;
}

int world_size(const RunOptions& options) {
  return options.workers + (find_algorithm(options.algorithm).info.has_master ? options.hyper.servers : 0);
}

WorkerFunction training_worker(const RunOptions& options, const RunData& data, RunResult* result,
                               std::function<void(const RunPoint&)> progress) {
  check_run_options(options);
  if (data.train && static_cast<std::size_t>(options.hyper.batch) > data.train->size()) {
    throw InputError("run: --batch " + std::to_string(options.hyper.batch) + " is more than the " +
                     std::to_string(data.train->size()) + " training images of " + data.train->name);
  }
  const AlgorithmEntry& entry = find_algorithm(options.algorithm);
  // Built once for every rank: at 4,352 simulated ranks, building them per rank took a fifth of the wall time.
  auto model = std::make_shared<const ModelSpec>(build_model(options.model));
  auto kernels = options.hyper.batch >= 1
                     ? std::make_shared<const std::vector<LayerKernel>>(iteration_kernels(*model, options.hyper.batch))
                     : nullptr;
  return [options, data, result, &entry, progress, model, kernels](Comm& comm) {
    if (comm.has_payload()) {
      DSGD_ENFORCE(data.train && data.test, "training_worker needs both datasets");
    } else if (options.budget.iterations <= 0 || options.budget.seconds > 0 || options.budget.target_accuracy > 0) {
      throw InputError("run: a size-only simulation has no data and no accuracy: its budget is --iterations only");
    }
    TrainerSetup setup;
    setup.model = model;
    setup.kernels = kernels;
    setup.train = data.train;
    setup.threads_per_rank = options.threads_per_rank;
    setup.backend = options.backend;
    Trainer trainer(comm, entry.info, options.hyper, setup);
    const auto algorithm = entry.make(trainer);
    std::unique_ptr<Recorder> recorder;
    if (comm.rank() == 0) {
      DSGD_ENFORCE(result != nullptr, "rank 0 needs a result to fill");
      *result = RunResult{};
      result->info = entry.info;
      result->ranks = comm.size();
      if (comm.has_payload()) result->per_rank.assign(static_cast<std::size_t>(comm.size()), Breakdown{});
      result->bytes_sent_per_rank.assign(static_cast<std::size_t>(comm.size()), std::nullopt);
      recorder = std::make_unique<Recorder>(options, data, trainer, *result);
    }
    RunnerTotals totals;
    Breakdown& training = totals.training;
    Breakdown& first_round = totals.first_round;
    std::uint64_t& training_bytes = totals.training_bytes;
    RunCheckpoint checkpoint(options, data, comm);
    std::int64_t done = checkpoint.restore(trainer, *algorithm, totals, result);
    for (;;) {
      std::int64_t round = options.budget.eval_every;
      if (options.budget.iterations > 0) round = std::min(round, options.budget.iterations - done);
      const Breakdown before = comm.breakdown();
      const double start_s = comm.now_s();
      const std::uint64_t bytes_before = comm.bytes_sent();
      algorithm->run_round(trainer, round);
      training_bytes += comm.bytes_sent() - bytes_before;
      float losses[2] = {static_cast<float>(trainer.loss_sum()), static_cast<float>(trainer.loss_count())};
      trainer.reset_losses();
      allreduce(comm, {losses, 2}, AllreduceAlgorithm::kRecursiveDoubling, {Category::kWait, kRoundTag});
      const double seconds = comm.now_s() - start_s;
      const Breakdown this_round = minus(comm.breakdown(), before);
      if (done == 0) first_round = this_round;
      add(training, this_round);
      done += round;
      float stop = 0;
      if (recorder) {
        const double train_loss = losses[1] > 0 ? losses[0] / losses[1] : 0.0;
        stop = recorder->after_round(*algorithm, trainer, round, seconds, train_loss) ? 1.0F : 0.0F;
        if (progress && !result->curve.empty()) progress(result->curve.back());
      }
      if (!comm.has_payload()) {
        // Messages carry no values: every rank knows the iteration budget and stops by itself.
        if (done >= options.budget.iterations) break;
        continue;
      }
      broadcast(comm, {&stop, 1}, 0, {Category::kWait, kStopTag});
      if (checkpoint.due(done, stop != 0)) checkpoint.save(trainer, *algorithm, totals, result, done);
      if (stop != 0) break;
    }
    if (!comm.has_payload()) {
      // No values travel: the executor reports every rank's breakdown itself (SimulationResult::per_rank). A
      // size-only world is a simulation in one process, so each rank writes its bytes into rank 0's result, which
      // rank 0 sized before its first round (and so before any rank can end its last).
      const auto rank = static_cast<std::size_t>(comm.rank());
      if (result != nullptr && rank < result->bytes_sent_per_rank.size()) {
        result->bytes_sent_per_rank[rank] = training_bytes;
        for (const auto& [name, value] : algorithm->counters(trainer)) result->counters[name] += value;
      }
      if (recorder) recorder->finish(trainer);
      return;
    }
    // Every rank's training and first-round breakdowns to rank 0, as raw doubles in one message.
    std::array<Breakdown, 2> both{training, first_round};
    static_assert(sizeof both == 2 * sizeof training.seconds, "the breakdowns travel as raw doubles");
    // The algorithm's counters travel as their values, in name order: every rank has the same names.
    const auto counters = algorithm->counters(trainer);
    std::vector<double> values;
    for (const auto& [name, value] : counters) values.push_back(value);
    if (comm.rank() != 0) {
      comm.send(0, kBreakdownTag, both.data(), sizeof both, Category::kWait);
      comm.send(0, kBreakdownTag, &training_bytes, sizeof training_bytes, Category::kWait);
      if (!values.empty()) comm.send(0, kBreakdownTag, values.data(), values.size() * sizeof(double), Category::kWait);
      return;
    }
    result->counters = counters;
    result->per_rank[0] = training;
    result->bytes_sent_per_rank[0] = training_bytes;
    result->first_round_per_rank.assign(result->per_rank.size(), Breakdown{});
    result->first_round_per_rank[0] = first_round;
    for (int rank = 1; rank < comm.size(); ++rank) {
      std::uint64_t bytes = 0;
      comm.recv(rank, kBreakdownTag, both.data(), sizeof both, Category::kWait);
      comm.recv(rank, kBreakdownTag, &bytes, sizeof bytes, Category::kWait);
      result->per_rank[static_cast<std::size_t>(rank)] = both[0];
      result->first_round_per_rank[static_cast<std::size_t>(rank)] = both[1];
      result->bytes_sent_per_rank[static_cast<std::size_t>(rank)] = bytes;
      if (values.empty()) continue;
      comm.recv(rank, kBreakdownTag, values.data(), values.size() * sizeof(double), Category::kWait);
      auto value = values.begin();
      for (auto& [name, sum] : result->counters) sum += *value++;
    }
    recorder->finish(trainer);
  };
}

}  // namespace dsgd::algorithms
