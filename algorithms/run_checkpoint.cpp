#include "algorithms/run_checkpoint.hpp"

#include <filesystem>

#include "core/collectives.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"

namespace dsgd::algorithms {

namespace {

// The checkpoint's messages between rounds, apart from the runner's (kFirstCollectiveTag + 1 .. 3) and the
// algorithms'.
constexpr Tag kCheckpointTag = kFirstCollectiveTag + 4;

std::string rank_section(int rank) { return "rank " + std::to_string(rank); }

// A float's value in 9 significant digits comes back unchanged.
std::string real(double value) { return significant(value, 9); }

// Appends every piece an algorithm names.
class StateSaver final : public StateVisitor {
 public:
  explicit StateSaver(ByteWriter& out) : out_(out) {}
  void floats(std::string_view name, std::span<float> data) override {
    out_.text(name);
    out_.floats(data);
  }
  void optimiser(std::string_view name, nn::Sgd& sgd) override {
    out_.text(name);
    out_.i64(sgd.steps());
    const float* velocity = sgd.velocity();
    out_.floats({velocity, velocity != nullptr ? sgd.count() : 0});
  }

 private:
  ByteWriter& out_;
};

// Restores the pieces in the order the saver wrote them, refusing another name.
class StateLoader final : public StateVisitor {
 public:
  explicit StateLoader(ByteReader& in) : in_(in) {}
  void floats(std::string_view name, std::span<float> data) override {
    expect(name);
    in_.floats(data);
  }
  void optimiser(std::string_view name, nn::Sgd& sgd) override {
    expect(name);
    sgd.set_steps(in_.i64());
    float* velocity = sgd.velocity();
    in_.floats({velocity, velocity != nullptr ? sgd.count() : 0});
  }

 private:
  void expect(std::string_view name) {
    const std::string found = in_.text();
    if (found != name) {
      throw InputError("checkpoint " + in_.what() + ": holds '" + found + "' where '" + std::string(name) +
                       "' was expected");
    }
  }
  ByteReader& in_;
};

void write_history(ByteWriter& out, const RunResult& result) {
  out.i64(result.iterations);
  out.f64(result.train_seconds);
  out.f64(result.time_to_target_s);
  out.u64(result.curve.size());
  for (const RunPoint& point : result.curve) {
    const double fields[] = {static_cast<double>(point.iterations),
                             point.images,
                             point.seconds,
                             point.test_accuracy,
                             point.test_loss,
                             point.train_loss};
    out.doubles(fields);
  }
}

void read_history(ByteReader& in, RunResult& result) {
  result.iterations = in.i64();
  result.train_seconds = in.f64();
  result.time_to_target_s = in.f64();
  result.curve.resize(in.u64());
  for (RunPoint& point : result.curve) {
    double fields[6] = {};
    in.doubles(fields);
    point = {static_cast<std::int64_t>(fields[0]), fields[1], fields[2], fields[3], fields[4], fields[5]};
  }
}

}  // namespace

Identity run_identity(const RunOptions& options) {
  const Hyperparameters& hyper = options.hyper;
  Identity identity = {
      {"command", "run"},
      {"algorithm", options.algorithm},
      {"workers", std::to_string(options.workers)},
      {"ranks", std::to_string(world_size(options))},
      {"model", options.model},
      {"batch", std::to_string(hyper.batch)},
      {"lr", real(hyper.learning_rate)},
      {"momentum", real(hyper.momentum)},
      {"weight_decay", real(hyper.weight_decay)},
      {"rho", real(hyper.elastic_rho)},
      {"period", std::to_string(hyper.period)},
      {"per_layer", hyper.per_layer ? "yes" : "no"},
      {"servers", std::to_string(hyper.servers)},
      {"staleness_bound", std::to_string(hyper.staleness_bound)},
      {"bucket_bytes", std::to_string(hyper.bucket_bytes)},
      {"device_memory_bytes", std::to_string(hyper.device_memory_bytes)},
      {"allreduce", std::string(to_string(hyper.allreduce))},
      {"lr_scaling", std::string(nn::lr_scaling_name(hyper.lr_scaling))},
      {"reference_batch", std::to_string(hyper.reference_batch)},
      {"warmup_iterations", std::to_string(hyper.warmup_iterations)},
      {"lars", hyper.lars ? "yes" : "no"},
      {"lars_trust", real(hyper.lars_trust)},
      {"compression", std::string(to_string(hyper.compression))},
      {"topk_ratio", significant(hyper.topk_ratio, 17)},
      {"seed", std::to_string(hyper.seed)},
      {"threads", std::to_string(options.threads_per_rank)},
  };
  // The algorithm's own options, completed with their defaults: a resume with another value is refused.
  for (const auto& [name, value] : resolve_options(find_algorithm(options.algorithm).info, hyper.own)) {
    identity.emplace_back(name, significant(value, 17));
  }
  return identity;
}

void check_checkpoint_options(const RunOptions& options) {
  if (!check_checkpoint_interval("run", options.checkpoint, options.budget.eval_every)) return;
  const AlgorithmInfo& info = find_algorithm(options.algorithm).info;
  if (!info.synchronous) {
    throw InputError("run: --checkpoint resumes the deterministic algorithms only; " + options.algorithm +
                     " is asynchronous");
  }
  check_checkpointable(build_model(options.model));
}

std::optional<std::int64_t> check_resume(const RunOptions& options) {
  const std::string& path = options.checkpoint.path;
  if (!options.checkpoint.resume || !std::filesystem::exists(path)) return std::nullopt;
  const Checkpoint checkpoint = read_checkpoint(path);
  check_identity(path, checkpoint.identity, run_identity(options));
  check_not_spent(path, checkpoint.iteration, options.budget.iterations);
  return checkpoint.iteration;
}

Identity RunCheckpoint::identity() const {
  Identity identity = run_identity(options_);
  if (data_.train) identity.emplace_back("train_data", data_identity(*data_.train));
  if (data_.test) identity.emplace_back("test_data", data_identity(*data_.test));
  const AllreduceAlgorithm allreduce = options_.hyper.allreduce;
  if (allreduce == AllreduceAlgorithm::kHierarchical || allreduce == AllreduceAlgorithm::kHierarchical2d) {
    // The hierarchical allreduces sum in an order that follows the nodes.
    std::string nodes;
    for (int rank = 0; rank < comm_.size(); ++rank) nodes += (rank ? "," : "") + std::to_string(comm_.node_of(rank));
    identity.emplace_back("nodes", nodes);
  }
  return identity;
}

bool RunCheckpoint::due(std::int64_t done, bool stop) const {
  if (!enabled()) return false;
  const std::int64_t every = options_.checkpoint.every > 0 ? options_.checkpoint.every : options_.budget.eval_every;
  return stop || done % every == 0;
}

std::int64_t RunCheckpoint::restore(Trainer& trainer, Algorithm& algorithm, RunnerTotals& totals, RunResult* result) {
  if (!enabled() || !options_.checkpoint.resume) return 0;
  const int rank = comm_.rank();
  std::string mine;
  if (rank == 0) {
    // Rank 0 reads the file and deals out the ranks' states; an empty state means a fresh start.
    Checkpoint checkpoint;
    const std::string& path = options_.checkpoint.path;
    const bool exists = std::filesystem::exists(path);
    if (exists) {
      checkpoint = read_checkpoint(path);
      check_identity(path, checkpoint.identity, identity());
      check_not_spent(path, checkpoint.iteration, options_.budget.iterations);
      for (int r = 0; r < comm_.size(); ++r) {
        if (!checkpoint.sections.contains(rank_section(r))) {
          throw InputError("checkpoint " + path + ": has no state for rank " + std::to_string(r));
        }
      }
      ByteReader history(checkpoint.sections["history"], path + " history");
      read_history(history, *result);
    }
    for (int r = 1; r < comm_.size(); ++r) {
      const std::string& state = exists ? checkpoint.sections[rank_section(r)] : std::string();
      const std::uint64_t bytes = state.size();
      comm_.send(r, kCheckpointTag, &bytes, sizeof bytes, Category::kWait);
      if (bytes > 0) comm_.send(r, kCheckpointTag, state.data(), state.size(), Category::kWait);
    }
    if (exists) mine = std::move(checkpoint.sections[rank_section(0)]);
  } else {
    std::uint64_t bytes = 0;
    comm_.recv(0, kCheckpointTag, &bytes, sizeof bytes, Category::kWait);
    mine.resize(bytes);
    if (bytes > 0) comm_.recv(0, kCheckpointTag, mine.data(), mine.size(), Category::kWait);
  }
  if (mine.empty()) return 0;
  ByteReader in(mine, options_.checkpoint.path + " " + rank_section(rank));
  if (trainer.has_data()) in.floats(trainer.parameter_floats().span());
  const std::int64_t iterations = in.i64();
  trainer.restore_progress(iterations, in.f64());
  in.doubles(totals.training.seconds);
  in.doubles(totals.first_round.seconds);
  totals.training_bytes = in.u64();
  const std::int64_t done = in.i64();
  StateLoader loader(in);
  algorithm.visit_state(trainer, loader);
  if (!in.done())
    throw InputError("checkpoint " + in.what() + ": holds more state than " + options_.algorithm + " has");
  return done;
}

void RunCheckpoint::save(Trainer& trainer, Algorithm& algorithm, const RunnerTotals& totals, const RunResult* result,
                         std::int64_t done) {
  ByteWriter out;
  if (trainer.has_data()) out.floats(trainer.parameter_floats().span());
  out.i64(trainer.iterations());
  out.f64(trainer.overlapped_comm_s());
  out.doubles(totals.training.seconds);
  out.doubles(totals.first_round.seconds);
  out.u64(totals.training_bytes);
  out.i64(done);
  StateSaver saver(out);
  algorithm.visit_state(trainer, saver);
  std::string mine = out.take();
  if (comm_.rank() != 0) {
    const std::uint64_t bytes = mine.size();
    comm_.send(0, kCheckpointTag, &bytes, sizeof bytes, Category::kWait);
    comm_.send(0, kCheckpointTag, mine.data(), mine.size(), Category::kWait);
    return;
  }
  Checkpoint checkpoint;
  checkpoint.identity = identity();
  checkpoint.iteration = done;
  checkpoint.sections[rank_section(0)] = std::move(mine);
  for (int r = 1; r < comm_.size(); ++r) {
    std::uint64_t bytes = 0;
    comm_.recv(r, kCheckpointTag, &bytes, sizeof bytes, Category::kWait);
    std::string state(bytes, '\0');
    comm_.recv(r, kCheckpointTag, state.data(), state.size(), Category::kWait);
    checkpoint.sections[rank_section(r)] = std::move(state);
  }
  ByteWriter history;
  write_history(history, *result);
  checkpoint.sections["history"] = history.take();
  write_checkpoint(options_.checkpoint.path, checkpoint);
}

}  // namespace dsgd::algorithms
