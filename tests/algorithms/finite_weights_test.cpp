// algorithms/runner.cpp: a run whose model of record holds a NaN or an infinity stops at the next evaluation with
// a DivergedError that says so, even where the loss stays finite (ReLU and max pooling can turn NaN activations
// back into finite ones: issue 42's probe trained on at 9.7% accuracy and exited 0). Its own executable: the
// algorithm it adds to the catalog must not reach the catalog-wide tests.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "algorithms/trainer.hpp"
#include "core/error.hpp"
#include "measure/threads/executor.hpp"
#include "tests/algorithms/small_run.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::algorithms {
namespace {

// Local SGD whose worker 0 writes `poison` into one weight after its 20th iteration, as a bad kernel or a bit flip
// could.
class Poisoned final : public Algorithm {
 public:
  Poisoned(Trainer& trainer, float poison) : sgd_(trainer.make_sgd(trainer.hyper().momentum)), poison_(poison) {}
  void run_round(Trainer& trainer, std::int64_t iterations) override {
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if (trainer.comm().rank() == 0 && trainer.iterations() == 20) trainer.parameters()[7] = poison_;
    }
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
  float poison_;
};

class FiniteWeights : public dsgd::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    data_ = testing::small_run_data(dir_);
  }
  RunData data_;
};

TEST_F(FiniteWeights, ANonFiniteWeightStopsTheRunAtTheNextEvaluation) {
  const float poisons[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  for (const float poison : poisons) {
    const std::string name = std::isnan(poison) ? "poisoned-nan" : "poisoned-inf";
    add_algorithm({{name, "local SGD that writes a non-finite weight"},
                   [poison](Trainer& trainer) { return std::make_unique<Poisoned>(trainer, poison); }});
    RunOptions options = testing::small_run_options();
    options.algorithm = name;
    options.workers = 1;
    RunResult result;
    WorldOptions world;
    world.size = 1;
    try {
      measure::threads::run(world, training_worker(options, data_, &result));
      ADD_FAILURE() << name << ": the run went on";
    } catch (const DivergedError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("1 of "), std::string::npos) << message;
      EXPECT_NE(message.find("weights of the model of record are not finite at iteration 20 (the first at 7"),
                std::string::npos)
          << message;
    }
  }
}

}  // namespace
}  // namespace dsgd::algorithms
