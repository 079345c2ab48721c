#pragma once
// A communication-scheme study (algorithms::scheme_study_catalog(), docs/communication-schemes.md): every scheme of
// seed 004 -- flat ring, hierarchical allreduce, WFBP with fusion, fp16 gradients, a sharded parameter server -- in
// size-only SimGrid on each cluster of the study, for each model, at every GPU count, each GPU keeping its batch.
//
// What determines what: each model's compute time comes from a published single-GPU throughput. At one GPU of the
// calibration platform the "conv" kernel efficiency is solved (exactly: T is linear in 1 / efficiency) so that an
// iteration takes batch / throughput; that efficiency is then set on every cluster's GPUs. The 1-GPU time is thus
// by construction on the calibration platform; every efficiency at P > 1 GPUs is predicted.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/studies.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/scheme_bound.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::simulate {

struct SchemeStudyOptions {
  // Steady-state iterations simulated per point: size-only and noise-free, an iteration repeats the one before.
  std::int64_t iterations = 3;
  std::vector<int> workers;        // overrides the study's GPU counts where not empty
  bool fold_fatpipe_flows = true;  // SimulationOptions::fold_fatpipe_flows
  std::function<void(const std::string&)> progress;
};

// A model's compute calibration.
struct SchemeCalibration {
  std::string model;
  std::string device;
  double images_per_second = 0;
  std::string source;
  double conv_efficiency = 0;  // of the device's single-precision peak, every training step at one rate
  // Where the calibration device has a kernel model: its one efficiency, fitted on the same throughput, for the
  // platforms whose devices price kernels by shape; 0 otherwise.
  double kernel_model_efficiency = 0;
};

struct SchemeRow {
  std::string platform;
  std::string model;
  std::string scheme;
  std::string algorithm;
  int workers = 0;
  int ranks = 0;
  int nodes = 0;
  std::string fidelity;
  double seconds_per_iteration = 0;
  double efficiency = 0;       // T(1 GPU) / T(P)
  double compute_s = 0;        // per iteration, the mean worker's for/backward
  double communication_s = 0;  // per iteration, the mean worker's time exchanging or waiting (exposed)
  double overlapped_s = 0;     // per iteration, rank 0's communication hidden behind its backward pass (streams)
  double wall_s = 0;
  Determined efficiency_by = Determined::kPredicted;
  // The closed-form lower bound (simulate/scheme_bound.hpp) from the 1-GPU compute and the busiest link, and, where
  // the simulated time is more than twice it, what the simulation spends the rest on.
  SchemeBound bound;
  std::string beyond_bound;
};

struct SchemeOutcome {
  std::string study;
  std::vector<SchemeCalibration> calibrations;
  std::vector<SchemeRow> rows;  // platform, model, scheme, GPUs
  std::int64_t iterations = 0;
  double wall_s = 0;
  std::vector<std::string> notes;
  std::vector<algorithms::SchemeStudy::Published> published;
};

// The weak-scaling options the study simulates `scheme` with for `model` at `workers` GPUs of `platform` (before
// its iterations and its calibrated compute): the model's batch and the scheme's configuration on the nodes the GPUs
// fill.
ScalingOptions scheme_scaling_options(const platforms::Platform& platform, const algorithms::SchemeModel& model,
                                      const algorithms::Scheme& scheme, int workers);

// Throws InputError for a bad option, UnknownNameError for a missing platform, and what the simulation throws.
SchemeOutcome run_scheme_study(const algorithms::SchemeStudy& study, const SchemeStudyOptions& options);

// One table per (platform, model): schemes as rows, GPU counts as columns, efficiency in % and the simulated time
// over its lower bound; the points more than twice their bound with why; the calibrations with their sources; the
// notes.
std::string format_scheme_study(const SchemeOutcome& outcome);

}  // namespace dsgd::simulate
