// A new algorithm in one file: gossip SGD (D-PSGD, Lian et al. 2017), registered under a name, trained on the
// threads executor and simulated in SimGrid through the same entry points `dsgd run` and `dsgd simulate` use.
//
// Each worker takes a local momentum step on its own batch, then averages its weights with its two neighbours on a
// ring: w_i = (w_{i-1} + w_i + w_{i+1}) / 3. No master and no allreduce: an exchange is two messages each way
// whatever the number of workers P, where a ring allreduce takes 2 (P - 1) steps; the price is that the replicas
// agree only on average. Every rank adds in the same order on every executor, so the same seed gives the same
// weights, bit for bit (AlgorithmInfo::synchronous). examples/README.md says how to run it and read its output.

#include <algorithm>
#include <cmath>
#include <iostream>

#include "algorithms/trainer.hpp"
#include "app/executors.hpp"
#include "platforms/catalog.hpp"
#include "simulate/weak_scaling.hpp"

// The algorithm, written as the catalog's are (algorithms/sync_sgd.cpp): only the Comm and the Trainer.
namespace dsgd::algorithms {
namespace {

constexpr Tag kToRight = 1;  // algorithms use tags below kFirstCollectiveTag
constexpr Tag kToLeft = 2;

class GossipSgd final : public Algorithm {
 public:
  explicit GossipSgd(Trainer& trainer)
      : sgd_(trainer.make_sgd(trainer.hyper().momentum)),
        from_left_(trainer.model_vector()),  // empty in a size-only simulation: messages carry sizes only
        from_right_(trainer.model_vector()) {}

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();  // this worker's batch: forward and backward
      trainer.sgd_step(*sgd_);     // a local step; nobody waits
      if (trainer.iterations() % trainer.hyper().period == 0) gossip(trainer);
    }
  }

  // What a checkpoint keeps besides the weights: the optimiser (the two buffers are rewritten every exchange).
  void visit_state(Trainer&, StateVisitor& state) override { state.optimiser("sgd", *sgd_); }

 private:
  void gossip(Trainer& trainer) {
    Comm& comm = trainer.comm();
    const int p = comm.size();  // no master: every rank is a worker
    if (p == 1) return;
    const int left = (comm.rank() + p - 1) % p;
    const int right = (comm.rank() + 1) % p;
    const std::size_t n = trainer.parameter_count();
    const std::size_t bytes = n * sizeof(float);
    float* own = trainer.parameters();
    // Both receives, then both sends, then wait for all four: no rank blocks before its neighbours have posted.
    RequestPtr requests[] = {comm.irecv(left, kToRight, from_left_.data(), bytes, Category::kGpuGpuPara),
                             comm.irecv(right, kToLeft, from_right_.data(), bytes, Category::kGpuGpuPara),
                             comm.isend(right, kToRight, own, bytes, Category::kGpuGpuPara),
                             comm.isend(left, kToLeft, own, bytes, Category::kGpuGpuPara)};
    for (auto& request : requests) request->wait();
    // The average: a compute step of 3 FLOPs per weight (natively it runs; a simulation charges its FLOPs).
    const float* l = from_left_.data();
    const float* r = from_right_.data();
    trainer.elementwise(3.0 * static_cast<double>(n), Category::kGpuUpdate, [=] {
      for (std::size_t k = 0; k < n; ++k) own[k] = (l[k] + own[k] + r[k]) / 3.0F;
    });
  }

  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> from_left_;
  std::vector<float> from_right_;
};

// Its catalog entry: the name, what it is, and how each rank builds its part.
AlgorithmEntry gossip_sgd_entry() {
  return {{"gossip-sgd", "D-PSGD: a local step, then the weights averaged with the two ring neighbours",
           /*has_master=*/false, /*synchronous=*/true},
          [](Trainer& trainer) { return std::make_unique<GossipSgd>(trainer); }};
}

}  // namespace
}  // namespace dsgd::algorithms

// The program: register, train, simulate, check.
namespace dsgd {
namespace {

// As `dsgd run --algo gossip-sgd --workers 4 --batch 32 --iterations 30 --eval-every 10 --test-images 1000`.
app::TrainingJob training_job() {
  app::TrainingJob job;
  job.cli.run.algorithm = "gossip-sgd";
  job.cli.run.workers = 4;
  job.cli.run.model = "lenet";
  job.cli.run.hyper.batch = 32;
  job.cli.run.budget.iterations = 30;
  job.cli.run.budget.eval_every = 10;
  job.cli.dataset = "fashion-mnist";
  job.cli.test_images = 1000;
  job.command = "gossip_sgd";
  return job;
}

int run() {
  algorithms::add_algorithm(algorithms::gossip_sgd_entry());  // from here on, all of dsgd knows "gossip-sgd"
  app::Context context{std::cout, std::cerr, "gossip_sgd"};
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    std::cout << (ok ? "ok:     " : "FAILED: ") << what << '\n';
    failures += ok ? 0 : 1;
  };

  // 1. LeNet on Fashion-MNIST, 4 workers on threads, twice with the same seed.
  app::TrainingJob job = training_job();
  const algorithms::RunData data = app::load_run_data(job.cli);
  job.data = &data;
  const app::Executor& threads = app::find_executor("threads", app::training_executor_names());
  const reports::Entry first = threads.train(job, context);
  const reports::Entry second = threads.train(job, context);
  // The curve of each round's mean training loss, against iterations per worker (docs/results-schema.md).
  const auto curve = std::find_if(first.curves.begin(), first.curves.end(),
                                  [](const reports::Curve& c) { return c.name == "train_loss"; });
  if (curve == first.curves.end() || curve->points.empty()) throw InternalError("no train_loss curve");
  const auto& [start_iterations, start_loss] = curve->points.front();
  const auto& [end_iterations, end_loss] = curve->points.back();
  std::cout << "threads: train loss " << start_loss << " after " << start_iterations << " iterations, " << end_loss
            << " after " << end_iterations << "; test accuracy " << first.counters.at("test_accuracy") << '\n';
  check(end_loss < start_loss, "the training loss fell");
  const std::string hash = first.labels.at("parameters_fnv1a");
  check(hash == second.labels.at("parameters_fnv1a"), "same seed, same weights (FNV-1a " + hash + ")");

  // 2. ResNet-50 on the catalog's DGX A100 cluster in SimGrid, as `dsgd simulate` runs it, beside Sync SGD.
  const platforms::Platform platform = platforms::load_platform("dgx-a100-ib");
  for (const char* algorithm : {"gossip-sgd", "sync-sgd"}) {
    simulate::ScalingOptions options;
    options.algorithm = algorithm;
    options.model = "resnet50";
    options.workers = {8, 64};
    for (const auto& point : simulate::simulate_weak_scaling(platform, options)) {
      const double seconds = point.seconds_per_iteration;
      std::cout << "simgrid: " << algorithm << " on " << point.workers << " A100s: " << seconds
                << " s per iteration, of which communication " << point.exposed_comm_s_per_iteration << " s\n";
      check(seconds > 0 && std::isfinite(seconds), "simulated time positive and finite");
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace dsgd

int main() {
  try {
    return dsgd::run();
  } catch (const dsgd::UnavailableError& error) {  // no Fashion-MNIST here: CTest reports the case as skipped
    std::cerr << "gossip_sgd: " << error.what() << '\n';
    return 77;
  } catch (const std::exception& error) {
    std::cerr << "gossip_sgd: " << error.what() << '\n';
    return 1;
  }
}
