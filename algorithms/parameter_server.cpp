#include "algorithms/parameter_server.hpp"

#include <algorithm>
#include <cstring>

namespace dsgd::algorithms {

std::size_t pushes_per_round(const Trainer& trainer, std::int64_t iterations) {
  return static_cast<std::size_t>(trainer.workers()) * static_cast<std::size_t>(iterations / trainer.hyper().period);
}

void elastic_move(Trainer& trainer, float* weights, const float* centre, Category category) {
  const std::size_t n = trainer.parameter_count();
  const float alpha = trainer.elastic_alpha();
  trainer.elementwise(2.0 * static_cast<double>(n), category, [=] {
    for (std::size_t i = 0; i < n; ++i) weights[i] -= alpha * (weights[i] - centre[i]);
  });
}

// --- GradientServer ------------------------------------------------------------------------------------------

GradientServer::GradientServer(Trainer& trainer, float server_momentum) {
  if (trainer.is_master()) {
    sgd_ = trainer.make_sgd(server_momentum);
  } else {
    accumulated_.assign(trainer.parameter_count(), 0.0F);
  }
}

void GradientServer::run_round(Trainer& trainer, std::int64_t iterations) {
  Comm& comm = trainer.comm();
  const std::size_t n = trainer.parameter_count();
  if (trainer.is_master()) {
    serve_parameter_server(
        comm, n, n, pushes_per_round(trainer, iterations),
        [&](int, std::span<const float> pushed, std::span<float> reply) {
          trainer.elementwise(static_cast<double>(n), Category::kCpuUpdate, [&] {
            std::copy(pushed.begin(), pushed.end(), trainer.gradients());
          });
          trainer.sgd_step(*sgd_, Category::kCpuUpdate);
          if (!reply.empty()) std::copy_n(trainer.parameters(), n, reply.begin());
        },
        {Category::kCpuGpuPara, kFirstCollectiveTag});
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
    parameter_server_exchange(comm, trainer.master(), {sum, n}, trainer.parameter_floats(),
                              {Category::kCpuGpuPara, kFirstCollectiveTag});
    std::fill(accumulated_.begin(), accumulated_.end(), 0.0F);
  }
}

void GradientServer::model_of_record(Trainer& trainer, std::span<float> parameters) {
  std::copy_n(trainer.parameters(), parameters.size(), parameters.begin());  // the master's weights
}

// --- ElasticServer -------------------------------------------------------------------------------------------

ElasticServer::ElasticServer(Trainer& trainer, float worker_momentum) : centre_(trainer.parameter_count()) {
  if (!trainer.is_master()) sgd_ = trainer.make_sgd(worker_momentum);
}

void ElasticServer::run_round(Trainer& trainer, std::int64_t iterations) {
  Comm& comm = trainer.comm();
  const std::size_t n = trainer.parameter_count();
  if (trainer.is_master()) {
    // The master's parameters are the centre W~.
    serve_parameter_server(
        comm, n, n, pushes_per_round(trainer, iterations),
        [&](int, std::span<const float> pushed, std::span<float> reply) {
          float* centre = trainer.parameters();
          if (!reply.empty()) std::copy_n(centre, n, reply.begin());  // the centre before this update
          const float alpha = trainer.elastic_alpha();
          const float* worker = pushed.data();
          trainer.elementwise(2.0 * static_cast<double>(n), Category::kCpuUpdate, [=] {
            for (std::size_t i = 0; i < n; ++i) centre[i] += alpha * (worker[i] - centre[i]);
          });
        },
        {Category::kCpuGpuPara, kFirstCollectiveTag});
    return;
  }
  for (std::int64_t i = 0; i < iterations; ++i) {
    trainer.compute_gradient();
    trainer.sgd_step(*sgd_);
    if (trainer.iterations() % trainer.hyper().period != 0) continue;
    parameter_server_exchange(comm, trainer.master(), trainer.parameter_floats(), {centre_.data(), n},
                              {Category::kCpuGpuPara, kFirstCollectiveTag});
    elastic_move(trainer, trainer.parameters(), centre_.data(), Category::kGpuUpdate);
  }
}

void ElasticServer::model_of_record(Trainer& trainer, std::span<float> parameters) {
  std::copy_n(trainer.parameters(), parameters.size(), parameters.begin());  // the master's centre
}

}  // namespace dsgd::algorithms
