#include "algorithms/parameter_server.hpp"

#include <algorithm>

namespace dsgd::algorithms {

std::size_t pushes_per_round(const Trainer& trainer, std::int64_t iterations) {
  return static_cast<std::size_t>(trainer.workers()) * static_cast<std::size_t>(iterations / trainer.hyper().period);
}

UpdateClock::UpdateClock(const Trainer& trainer) : seen_(static_cast<std::size_t>(trainer.workers() + 1), 0) {}

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

void pull_centre(Trainer& trainer, float* centre, const float* worker) {
  const std::size_t n = trainer.parameter_count();
  const float alpha = trainer.elastic_alpha();
  trainer.elementwise(2.0 * static_cast<double>(n), Category::kCpuUpdate, [=] {
    for (std::size_t i = 0; i < n; ++i) centre[i] += alpha * (worker[i] - centre[i]);
  });
}

namespace {

// The protocol both servers speak: pushes and replies of the whole model, cpu-gpu para traffic.
constexpr CollectiveOptions kServerTraffic{Category::kCpuGpuPara, kFirstCollectiveTag};

// The master's side of a round: serves every worker's pushes of the round, first come first served.
void serve_round(Trainer& trainer, std::int64_t iterations, const PushHandler& handler) {
  serve_parameter_server(trainer.comm(), trainer.parameter_count(), pushes_per_round(trainer, iterations), handler,
                         kServerTraffic);
}

// A worker's side of one exchange: pushes `push`, receives the master's reply into `pull`.
void push_pull(Trainer& trainer, float* push, float* pull) {
  const std::size_t n = trainer.parameter_count();
  parameter_server_exchange(trainer.comm(), trainer.master(), {push, n}, {pull, n}, kServerTraffic);
}

}  // namespace

// --- GradientServer ------------------------------------------------------------------------------------------

GradientServer::GradientServer(Trainer& trainer, float server_momentum) : clock_(trainer) {
  if (trainer.is_master()) {
    sgd_ = trainer.make_sgd(server_momentum);
  } else {
    accumulated_ = trainer.model_vector();
  }
}

void GradientServer::run_round(Trainer& trainer, std::int64_t iterations) {
  const std::size_t n = trainer.parameter_count();
  if (trainer.is_master()) {
    // The reply is the master's weights after the step, sent from where they live.
    serve_round(trainer, iterations,
                {[&](int worker, std::span<const float> pushed) {
                   clock_.on_push(trainer, worker);
                   trainer.elementwise(static_cast<double>(n), Category::kCpuUpdate,
                                       [&] { std::copy(pushed.begin(), pushed.end(), trainer.gradients()); });
                   trainer.sgd_step(*sgd_, Category::kCpuUpdate);
                   return trainer.parameter_floats();
                 },
                 {}});
    return;
  }
  const int period = trainer.hyper().period;
  for (std::int64_t i = 0; i < iterations; ++i) {
    trainer.compute_gradient();
    float* sum = accumulated_.data();
    const float* gradient = trainer.gradients();
    const bool push = trainer.iterations() % period == 0;
    const float scale = push ? 1.0F / static_cast<float>(period) : 1.0F;
    trainer.elementwise(static_cast<double>(n), Category::kGpuUpdate, [=] {
      for (std::size_t k = 0; k < n; ++k) sum[k] = push ? (sum[k] + gradient[k]) * scale : sum[k] + gradient[k];
    });
    if (!push) continue;
    push_pull(trainer, sum, trainer.parameters());
    trainer.on_data([&] { std::fill(accumulated_.begin(), accumulated_.end(), 0.0F); });
  }
}

// --- ElasticServer -------------------------------------------------------------------------------------------

ElasticServer::ElasticServer(Trainer& trainer, float worker_momentum)
    : centre_(trainer.model_vector()), clock_(trainer) {
  if (!trainer.is_master()) sgd_ = trainer.make_sgd(worker_momentum);
}

void ElasticServer::run_round(Trainer& trainer, std::int64_t iterations) {
  if (trainer.is_master()) {
    // The master's parameters are the centre W~. The reply is the centre before this push's move, so it is sent
    // first and moved after: the worker does not wait for the move.
    serve_round(
        trainer, iterations,
        {[&](int worker, std::span<const float>) {
           clock_.on_push(trainer, worker);
           return trainer.parameter_floats();
         },
         [&](int, std::span<const float> pushed) { pull_centre(trainer, trainer.parameters(), pushed.data()); }});
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
