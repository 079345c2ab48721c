#pragma once
// Seed 000's comparisons as named studies: which algorithms run, with which options, for which table or figure.
// They live here because they name algorithms (nothing outside algorithms/ does); `dsgd study NAME` runs one and
// the reproduce manifest renders it.
//   methods         Fig 8: every algorithm, same workers and hyper-parameters, test error against time
//   easgd-variants  Table 3 / Fig 11: Original EASGD*, Original EASGD, Sync EASGD1/2/3 to one target accuracy
//   packing         Fig 10: one packed message per exchange against one message per layer
//   partition       Fig 12 (seed 000 §6.2): the cores split into 1, 2, 4, ... groups, each a worker with its own
//                   weights and data, gradients summed between groups; as many groups as this machine has cores
//   batch-size      seed 000 §7.2: Sync SGD's test accuracy against the global batch (64 .. 4096) after the same
//                   number of epochs, without and with the large-batch rules of seed 004 (linear scaling and
//                   warm-up, Goyal et al. 2017; LARS, You et al. 2017)
//   dogwild         seed 002 Fig 1: dogwild's test accuracy against time, one run per worker count
//   dogwild-loss    seed 002: dogwild's accuracy after the same time against injected datagram loss 0-30%
//   dogwild-transports  seed 002: time to accuracy of dogwild over datagrams and over reliable messages
//                   (dogwild-reliable), sync-sgd beside
// A second catalog, scaling_study_catalog(), holds the published results that are predicted in simulation instead
// (seed 000 Tables 3 and 4, Fig 12 on the paper's platforms); simulate/scaling_study.hpp runs them.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/runner.hpp"

namespace dsgd::algorithms {

struct StudySettings {
  int workers = 4;
  double seconds = 20;            // per run, where a study runs on time (methods)
  double target_accuracy = 0.85;  // where a study runs to an accuracy (easgd-variants)
  std::int64_t iterations = 200;  // where a study runs on iterations (packing, partition)
  int cores = 0;                  // for partition; 0: this machine's
  double epochs = 0.25;           // where a study's budget is in epochs (batch-size): passes over the training set
  std::int64_t train_images = 0;  // the training set's size, for budgets in epochs; the study command fills it
};

struct StudyRun {
  std::string label;  // the row or series name
  RunOptions options;
  std::map<std::string, std::string> labels = {};  // more labels for the results entry (e.g. the series)
};

struct Study {
  std::string name;
  std::string description;  // one line
  std::vector<StudyRun> (*runs)(const StudySettings& settings);
};

const std::vector<Study>& study_catalog();
// Throws UnknownNameError listing the names.
const Study& find_study(const std::string& name);

// --- published results predicted in simulation ------------------------------------------------------------------

// What a scaling study compares: how the simulated runs become the published table's numbers.
//   kEfficiency  weak scaling: T(first size) / T(size), the workers keeping their batch (Table 4)
//   kSpeedup     the same ratio at a fixed global batch split among the workers (Fig 12)
//   kCommRatio   the share of time in the communication categories (Table 3)
//   kImagesPerSecond  training throughput of all workers together, global batch / time per iteration (seed 001's
//                FPS); compared in percent of the published value
enum class StudyMeasure { kEfficiency, kSpeedup, kCommRatio, kImagesPerSecond };

// What the simulation may fit to the published numbers (always reported as fitted, never as predicted):
//   kNone      nothing: the platform's kernel efficiencies as they are
//   kEachCase  the "conv" kernel efficiency of each case, so that its first size's time per iteration is the
//              published one (published seconds / paper iterations)
//   kOneCase   one "conv" efficiency for every case, fitted that way on `compute_fit_case` alone
enum class ComputeFit { kNone, kEachCase, kOneCase };

// One world size of a study: a column of the paper's table.
struct ScalingStudyPoint {
  std::string size;  // the paper's name for it: "68 cores", "4 GPUs", "16 groups"
  int workers = 0;
  int ranks_per_node = 0;  // 0: one rank per core of a mesh / device / node (PlacementOptions)
};

// One row (or series) of the published table: an algorithm and a model with the paper's numbers per point.
struct ScalingStudyCase {
  std::string label;                  // the paper's name: "GoogLeNet", "Sync EASGD1", "AlexNet"
  std::string algorithm;              // catalog name; the comment of its definition says why it stands for the paper's
  std::string model;                  // model zoo name
  int batch = 0;                      // per worker, or shared by all workers where the study splits a global batch
  std::int64_t paper_iterations = 0;  // iterations the published times are for; 0: times to an accuracy
  std::vector<double> published_seconds;  // per point (empty where the paper gives none)
  std::vector<double> published_values;   // per point, of the study's measure as a fraction (images/s for
                                          // kImagesPerSecond); empty: derived from published_seconds (efficiency
                                          // and speed-up only)
  // Per point, where the paper changes the batch with the size (seed 001 Table III): this point's batch in place of
  // `batch` (split among the workers where the study splits a global batch). Empty: `batch` everywhere.
  std::vector<int> point_batches = {};
};

struct ScalingStudy {
  std::string name;
  std::string source;       // "seed 000 Table 4"
  std::string description;  // one line
  std::string platform;     // catalog name
  StudyMeasure measure = StudyMeasure::kEfficiency;
  bool split_global_batch = false;  // each worker takes batch / workers images (Fig 12)
  std::vector<ScalingStudyPoint> points;
  std::vector<ScalingStudyCase> cases;
  ComputeFit compute_fit = ComputeFit::kNone;
  std::size_t compute_fit_case = 0;
  // With kNone on a platform whose kernel-model efficiency is FITTED (by a device study): the case whose first
  // published value it was fitted on, whose row is then labelled fitted, not predicted.
  std::optional<std::size_t> platform_fit_case;
  // The case whose published values the compute-noise spread is fitted on (lognormal, platforms::Noise); the
  // other cases are predicted with it. Absent: no noise.
  std::optional<std::size_t> noise_fit_case;
  std::vector<std::string> notes;  // caveats printed with the table
};

const std::vector<ScalingStudy>& scaling_study_catalog();

// --- communication schemes at scale (seed 004; docs/communication-schemes.md) -------------------------------------

// One way of exchanging the gradients: an algorithm of the catalog and the options that make the scheme.
struct Scheme {
  std::string label;  // "flat ring", "hierarchical", ...
  std::string algorithm;
  std::string description;  // one line: what the scheme does
  // Sets the scheme's options on the run's hyper-parameters, for a run on `nodes` nodes.
  std::function<void(Hyperparameters& hyper, int nodes)> configure;
};

// One model of the study with the single-device training rate its compute time is set from: a published
// throughput, never a scaling result.
struct SchemeModel {
  std::string model;  // model zoo name
  int batch = 0;      // per GPU, as in the throughput's source
  double images_per_second = 0;
  std::string device;  // the GPU the throughput was measured on
  std::string source;
};

// The weak-scaling study of seed 004's schemes: every scheme, model and cluster at every GPU count. The compute
// rate of each model is calibrated on `calibration_platform` (whose device is the throughput's) at one GPU and
// applied as a kernel efficiency to every cluster.
struct SchemeStudy {
  std::string name;
  std::string description;
  std::vector<std::string> platforms;  // catalog names
  std::string calibration_platform;
  std::vector<SchemeModel> models;
  std::vector<int> workers;  // GPUs, the first 1 (the single-GPU baseline of the efficiency)
  std::vector<Scheme> schemes;
  std::vector<std::string> notes;
  // Published speed-ups to set beside the predicted ones (never used to predict them).
  struct Published {
    std::string scheme;  // what reached it
    int workers = 0;     // GPUs
    double speedup = 0;  // over one GPU
    std::string source;
  };
  std::vector<Published> published;
};

// The scheme studies: `schemes` (seed 004's communication schemes, 1-512 GPUs) and `geeps` (seed 003's GeePS at
// 1-16 GPUs against allreduce and a plain parameter server, and on a device smaller than its buffers).
const std::vector<SchemeStudy>& scheme_study_catalog();
// Throws UnknownNameError listing the names.
const SchemeStudy& find_scheme_study(const std::string& name);
// Throws UnknownNameError listing the names.
const ScalingStudy& find_scaling_study(const std::string& name);

// --- single-device throughputs (the kernel model by shape; docs/simulation.md "Single devices") ----------------

// A published training rate of one model on one device.
struct DeviceThroughput {
  std::string model;  // model zoo name
  int batch = 0;
  double images_per_second = 0;
};

// Published single-device training rates of several models, all predicted by the kernel model of the platform's
// device (its first device group) with the model's one efficiency FITTED on `throughputs[fitted]`.
struct DeviceStudy {
  std::string name;
  std::string description;
  std::string platform;  // catalog name
  std::string source;    // of the throughputs
  std::vector<DeviceThroughput> throughputs;
  std::size_t fitted = 0;
  std::vector<std::string> notes;
};

const std::vector<DeviceStudy>& device_study_catalog();
// Throws UnknownNameError listing the names.
const DeviceStudy& find_device_study(const std::string& name);

// A published table of transformer training throughputs under 3-D parallelism, predicted row by row
// (simulate/transformer_study.hpp) with the device's one kernel efficiency FITTED on rows[fitted].
struct TransformerStudyRow {
  std::string model;  // core/transformer.hpp's zoo
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int gpus = 1;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  int virtual_stages = 1;  // > 1: the interleaved schedule
  bool overlap_gradient_reduction = false;
  double published_tflops_per_gpu = 0;
};

struct TransformerStudy {
  std::string name;
  std::string description;
  std::string platform;  // catalog name
  std::string source;    // of the published rows and their configurations
  std::vector<TransformerStudyRow> rows;
  std::size_t fitted = 0;
  std::vector<std::string> notes;  // what was assumed where the source is silent
};

const std::vector<TransformerStudy>& transformer_study_catalog();

// --- what `dsgd simulate --study NAME` reads ----------------------------------------------------------------

// A simulated study of any kind (scaling, scheme or device): the platforms it runs on, and the options of `dsgd
// simulate` it reads besides --study and --results (without their dashes); it is refused any other.
struct SimulatedStudyInputs {
  std::vector<std::string> platforms;
  std::vector<std::string> options;
};
// Throws UnknownNameError listing every simulated study.
SimulatedStudyInputs simulated_study_inputs(const std::string& name);

}  // namespace dsgd::algorithms
