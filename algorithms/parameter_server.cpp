#include "algorithms/parameter_server.hpp"

#include <algorithm>

namespace dsgd::algorithms {

std::size_t pushes_per_round(const Trainer& trainer, std::int64_t iterations) {
  return static_cast<std::size_t>(trainer.workers()) * static_cast<std::size_t>(iterations / trainer.hyper().period);
}

UpdateClock::UpdateClock(const Trainer& trainer)
    : seen_(static_cast<std::size_t>(trainer.servers() + trainer.workers()), 0) {}

void UpdateClock::on_push(Trainer& trainer, int worker_rank) {
  auto& seen = seen_.at(static_cast<std::size_t>(worker_rank));
  trainer.staleness().add(updates_ - seen);
  ++updates_;
  seen = updates_;
}

void elastic_move(Trainer& trainer, float* weights, const float* centre, Category category) {
  const std::size_t n = trainer.parameter_count();
  const float alpha = trainer.elastic_alpha();
  trainer.elementwise(2.0 * static_cast<double>(n), category, [=] {
    for (std::size_t i = 0; i < n; ++i) weights[i] -= alpha * (weights[i] - centre[i]);
  });
}

void pull_centre(Trainer& trainer, float* centre, const float* worker, std::size_t count) {
  const float alpha = trainer.elastic_alpha();
  trainer.elementwise(2.0 * static_cast<double>(count), Category::kCpuUpdate, [=] {
    for (std::size_t i = 0; i < count; ++i) centre[i] += alpha * (worker[i] - centre[i]);
  });
}

void pull_centre(Trainer& trainer, float* centre, const float* worker) {
  pull_centre(trainer, centre, worker, trainer.parameter_count());
}

namespace {

// The protocol every server speaks: pushes and replies of the model (or a shard of it), cpu-gpu para traffic.
constexpr CollectiveOptions kServerTraffic{Category::kCpuGpuPara, kFirstCollectiveTag};
// Servers 1..S-1's shards on their way to rank 0's model of record (the runner's tags are above the server's).
constexpr Tag kShardTag = kFirstCollectiveTag - 1;

// A server's side of a round: serves every worker's pushes of the round, first come first served.
void serve_round(Trainer& trainer, std::size_t shard_count, std::int64_t iterations, const PushHandler& handler) {
  serve_parameter_server(trainer.comm(), shard_count, pushes_per_round(trainer, iterations), handler, kServerTraffic);
}

// A worker's side of one exchange: pushes `push`, receives the servers' replies into `pull`.
void push_pull(Trainer& trainer, float* push, float* pull) {
  const std::size_t n = trainer.parameter_count();
  sharded_parameter_server_exchange(trainer.comm(), trainer.servers(), {push, n}, {pull, n}, kServerTraffic);
}

// `shard` of a model-sized buffer (null in a size-only world).
Floats shard_floats(float* data, Shard shard) { return {data ? data + shard.offset : nullptr, shard.count}; }

}  // namespace

// --- ShardedServer -------------------------------------------------------------------------------------------

ShardedServer::ShardedServer(Trainer& trainer) {
  if (trainer.is_master()) shard_ = trainer.shard(trainer.comm().rank());
}

void ShardedServer::begin_serving() {
  if (!shard_sent_) return;
  shard_sent_->wait();
  shard_sent_.reset();
}

void ShardedServer::end_serving(Trainer& trainer) {
  // Rank 0 evaluates only where there is data; a size-only world gathers nothing.
  if (trainer.comm().rank() == 0 || !trainer.has_data()) return;
  const Floats shard = shard_floats(trainer.parameters(), shard_);
  shard_sent_ = trainer.comm().isend(0, kShardTag, shard.data, shard.bytes(), kServerTraffic.category);
}

void ShardedServer::model_of_record(Trainer& trainer, std::span<float> parameters) {
  Algorithm::model_of_record(trainer, parameters);  // shard 0, or the whole model with one server
  for (int server = 1; server < trainer.servers(); ++server) {
    const Floats shard = shard_floats(parameters.data(), trainer.shard(server));
    trainer.comm().recv(server, kShardTag, shard.data, shard.bytes(), kServerTraffic.category);
  }
}

// --- GradientServer ------------------------------------------------------------------------------------------

GradientServer::GradientServer(Trainer& trainer, float server_momentum, std::int64_t staleness_bound)
    : ShardedServer(trainer), clock_(trainer), staleness_bound_(staleness_bound) {
  if (trainer.is_master()) {
    sgd_ = trainer.make_sgd(server_momentum, shard_);
    clocks_.assign(static_cast<std::size_t>(trainer.workers()), 0);
  } else {
    accumulated_ = trainer.model_vector();
  }
}

void GradientServer::run_round(Trainer& trainer, std::int64_t iterations) {
  const std::size_t n = trainer.parameter_count();
  if (trainer.is_master()) {
    begin_serving();
    // The reply is the server's weights (its shard) after the step, sent from where they live.
    const Shard shard = shard_;
    const PushHandler handler{[&, shard](int worker, std::span<const float> pushed) {
                                clock_.on_push(trainer, worker);
                                const auto count = static_cast<double>(shard.count);
                                trainer.elementwise(count, 8.0 * count, Category::kCpuUpdate, [&] {
                                  std::copy(pushed.begin(), pushed.end(), trainer.gradients() + shard.offset);
                                });
                                trainer.sgd_step(*sgd_, Category::kCpuUpdate, shard);
                                return shard_floats(trainer.parameters(), shard);
                              },
                              {}};
    if (staleness_bound_ < 0) {
      serve_round(trainer, shard.count, iterations, handler);
    } else {
      serve_bounded(trainer, iterations, handler);
    }
    end_serving(trainer);
    return;
  }
  const int period = trainer.hyper().period;
  for (std::int64_t i = 0; i < iterations; ++i) {
    trainer.compute_gradient();
    float* sum = accumulated_.data();
    const float* gradient = trainer.gradients();
    const bool push = trainer.iterations() % period == 0;
    const float scale = push ? 1.0F / static_cast<float>(period) : 1.0F;
    trainer.elementwise(static_cast<double>(n), 12.0 * static_cast<double>(n), Category::kGpuUpdate, [=] {
      for (std::size_t k = 0; k < n; ++k) sum[k] = push ? (sum[k] + gradient[k]) * scale : sum[k] + gradient[k];
    });
    if (!push) continue;
    push_pull(trainer, sum, trainer.parameters());
    trainer.on_data([&] { std::fill(accumulated_.begin(), accumulated_.end(), 0.0F); });
  }
}

void GradientServer::serve_bounded(Trainer& trainer, std::int64_t iterations, const PushHandler& handler) {
  Comm& comm = trainer.comm();
  const std::int64_t pushes = iterations / trainer.hyper().period;  // per worker, this round
  const int workers = trainer.workers();
  std::vector<float> storage(trainer.has_data() ? shard_.count : 0);
  const Floats pushed{trainer.has_data() ? storage.data() : nullptr, shard_.count};
  Floats reply;
  // Receives a push from `source` (a rank, or any), records by how many clocks its worker trails the most advanced
  // one, and applies it. Returns the worker's index.
  const auto serve = [&](int source) {
    const Status status = comm.recv(source, kServerTraffic.tag, pushed.data, pushed.bytes(), kServerTraffic.category);
    const auto worker = static_cast<std::size_t>(status.source - trainer.servers());
    const std::int64_t clock = ++clocks_.at(worker);
    leading_clock_ = std::max(leading_clock_, clock);
    trainer.clock_staleness().add(leading_clock_ - clock);
    reply = handler.reply(status.source, pushed.span());
    return static_cast<int>(worker);
  };
  // The weights as they are now, to worker `worker`.
  const auto answer = [&](int worker) {
    comm.send(trainer.worker_rank(worker), kServerTraffic.tag, reply.data, reply.bytes(), kServerTraffic.category);
  };
  if (staleness_bound_ == 0) {
    // BSP: a clock's pushes in worker order (the others wait in the executor's queue), then every worker's reply.
    for (std::int64_t clock = 0; clock < pushes; ++clock) {
      for (int worker = 0; worker < workers; ++worker) serve(trainer.worker_rank(worker));
      for (int worker = 0; worker < workers; ++worker) answer(worker);
    }
    return;
  }
  std::vector<int> held;  // workers whose reply waits for the slowest, in the order they pushed
  for (std::int64_t served = 0; served < pushes * workers; ++served) {
    held.push_back(serve(kAnySource));
    const std::int64_t slowest = *std::min_element(clocks_.begin(), clocks_.end());
    std::vector<int> still_held;
    for (const int worker : held) {
      if (clocks_[static_cast<std::size_t>(worker)] - staleness_bound_ <= slowest) {
        answer(worker);
      } else {
        still_held.push_back(worker);
      }
    }
    held = std::move(still_held);
  }
}

// --- ElasticServer -------------------------------------------------------------------------------------------

ElasticServer::ElasticServer(Trainer& trainer, float worker_momentum)
    : ShardedServer(trainer), centre_(trainer.model_vector()), clock_(trainer) {
  if (!trainer.is_master()) sgd_ = trainer.make_sgd(worker_momentum);
}

void ElasticServer::run_round(Trainer& trainer, std::int64_t iterations) {
  if (trainer.is_master()) {
    begin_serving();
    // The server's parameters are the centre W~ (its shard of it). The reply is the centre before this push's move,
    // so it is sent first and moved after: the worker does not wait for the move.
    const Shard shard = shard_;
    serve_round(trainer, shard.count, iterations,
                {[&, shard](int worker, std::span<const float>) {
                   clock_.on_push(trainer, worker);
                   return shard_floats(trainer.parameters(), shard);
                 },
                 [&, shard](int, std::span<const float> pushed) {
                   pull_centre(trainer, shard_floats(trainer.parameters(), shard).data, pushed.data(), shard.count);
                 }});
    end_serving(trainer);
    return;
  }
  for (std::int64_t i = 0; i < iterations; ++i) {
    trainer.compute_gradient();
    trainer.sgd_step(*sgd_);
    if (trainer.iterations() % trainer.hyper().period != 0) continue;
    push_pull(trainer, trainer.parameters(), centre_.data());
    elastic_move(trainer, trainer.parameters(), centre_.data(), Category::kGpuUpdate);
  }
}

}  // namespace dsgd::algorithms
