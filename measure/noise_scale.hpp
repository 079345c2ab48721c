#pragma once
// The gradient noise scale B_simple = tr(Sigma) / |G|^2 measured on a real network (McCandlish et al. 2018, "An
// Empirical Model of Large-Batch Training", Appendix A; docs/statistical-efficiency.md): the batch beyond which a
// larger batch stops saving updates, the B_noise that simulate/statistical_efficiency.hpp can take as measured.
//
// A gradient over a batch of B has E|G_B|^2 = |G|^2 + tr(Sigma) / B. Gradients at two batch sizes give the two
// unknowns; here the small batch is the network's b and the big one P b, the mean of P small-batch gradients at
// the same weights, so one set of forward/backward passes yields both.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"

namespace dsgd::measure {

// One measurement step's squared gradient norms at the same weights.
struct GradientNormSample {
  double small_norm_sq = 0;  // |G_small|^2: mean over the P small-batch gradients of ||g_i||^2
  double big_norm_sq = 0;    // |G_big|^2: ||mean_i g_i||^2, the gradient of the union of the P batches
};

struct NoiseScaleEstimate {
  double small_batch = 0;  // b, examples
  double big_batch = 0;    // P b, examples
  double gradient_sq = 0;  // |G|^2, the true gradient's squared norm
  double trace_sigma = 0;  // tr(Sigma), the per-example gradient covariance's trace
  double b_simple = 0;     // trace_sigma / gradient_sq, examples (McCandlish's B_simple ~ B_noise)
  std::size_t steps = 0;   // measurement steps averaged
  // Spread of the per-step estimates of |G|^2 and tr(Sigma) (sample standard deviations; 0 for one step). The
  // ratio is taken of the means, not per step, since one step's |G|^2 estimate can be near 0 or negative.
  double gradient_sq_stddev = 0;
  double trace_sigma_stddev = 0;
  std::vector<GradientNormSample> samples;  // per step, in order
};

// McCandlish's unbiased estimators from squared norms at batches b_small < b_big, averaged over the samples before
// dividing (their Appendix A):
//   |G|^2     ~ (b_big |G_big|^2 - b_small |G_small|^2) / (b_big - b_small)
//   tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1 / b_small - 1 / b_big)
// Throws InputError for no samples, a non-finite norm, or batches that are not 0 < b_small < b_big. |G|^2 <= 0
// (the noise swamps the gradient) gives b_simple = +infinity.
NoiseScaleEstimate estimate_noise_scale(std::span<const GradientNormSample> samples, double small_batch,
                                        double big_batch);

// The squared norms of one step from P gradient vectors of `dimension` floats each, stored one after the other in
// `gradients` (P x dimension). Throws InputError for P < 2 or a size that is not a multiple of `dimension`.
GradientNormSample gradient_norms(std::span<const float> gradients, std::size_t dimension);

struct NoiseScaleOptions {
  int groups = 16;  // P: small batches per measurement step; the big batch is P x the network's batch
  int steps = 20;   // K: measurement steps averaged
  std::uint64_t seed = 1;
  // Plain SGD steps on batches of the network's size, to move the weights: sgd_steps_before once before the first
  // measurement, sgd_steps_between after each measurement but the last (McCandlish measure along training).
  int sgd_steps_before = 0;
  int sgd_steps_between = 0;
  nn::SgdOptions sgd{0.01F, 0.0F, 0.0F};
};

// Measures B_simple for `network` (its batch is b; the caller builds and initialises it) on `train`, which must
// fit the network's input. Each step draws P batches of b from a sampler seeded with `seed` (consecutive batches:
// disjoint while P b <= the dataset's size) and computes each gradient at the current weights with train_step,
// which updates nothing. The SGD steps draw from their own sampler, so the measurement batches do not depend on
// them. Changes the network's weights only through the SGD steps. Throws InputError for P < 2, K < 1, negative
// SGD step counts or bad SGD options, a dataset smaller than one batch, and Error when a loss is not finite.
NoiseScaleEstimate measure_noise_scale(nn::Network& network, const data::Dataset& train,
                                       const NoiseScaleOptions& options);

}  // namespace dsgd::measure
