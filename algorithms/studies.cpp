#include "algorithms/studies.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

namespace dsgd::algorithms {

namespace {

RunOptions base(const StudySettings& settings, const std::string& algorithm) {
  RunOptions options;
  options.algorithm = algorithm;
  options.workers = settings.workers;
  options.budget.eval_every = 50;
  return options;
}

std::vector<StudyRun> methods(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const auto& entry : algorithm_catalog()) {
    RunOptions options = base(settings, entry.info.name);
    options.budget.seconds = settings.seconds;
    runs.push_back({entry.info.name, options});
  }
  return runs;
}

std::vector<StudyRun> easgd_variants(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const char* name : {"original-easgd-serial", "original-easgd", "sync-easgd1", "sync-easgd2", "sync-easgd3"}) {
    RunOptions options = base(settings, name);
    // EASGD's workers take plain SGD steps: at the family's eta 0.01 (momentum SGD's) the centre needs some 2,300
    // iterations to 85%, and Original EASGD* runs one worker at a time. One larger eta for all five keeps the
    // comparison fair and the study within minutes.
    options.hyper.learning_rate = 0.05F;
    options.budget.target_accuracy = settings.target_accuracy;
    options.budget.iterations = 5000;  // a cap: the label says when a run stopped by it instead
    runs.push_back({name, options});
  }
  return runs;
}

std::vector<StudyRun> packing(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const bool per_layer : {false, true}) {
    RunOptions options = base(settings, "sync-sgd");
    options.budget.iterations = settings.iterations;
    options.hyper.per_layer = per_layer;
    runs.push_back({per_layer ? "one message per layer" : "one packed message", options});
  }
  return runs;
}

std::vector<StudyRun> partition(const StudySettings& settings) {
  const int cores =
      settings.cores > 0 ? settings.cores : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  std::vector<StudyRun> runs;
  // The global batch stays 64: g groups of 64 / g images, each on cores / g threads.
  for (int groups = 1; groups <= cores && groups <= 64; groups *= 2) {
    if (cores % groups != 0) continue;
    RunOptions options = base(settings, "sync-sgd");
    options.workers = groups;
    options.threads_per_rank = cores / groups;
    options.hyper.batch = 64 / groups;
    options.budget.iterations = settings.iterations;
    runs.push_back({std::to_string(groups) + (groups == 1 ? " group" : " groups"), options});
  }
  return runs;
}

// Seed 000 §7.2 with seed 004's large-batch rules: Sync SGD (the workers' gradients averaged, so the global batch is
// the batch of every step) at global batches of 64 to 4096 images (workers x batch), each point seeing the same
// images (settings.epochs passes over the training set), under three rule sets. eta 0.01 (momentum 0.9, weight
// decay 5e-4) is the family's rate for a batch of 64, the reference batch.
std::vector<StudyRun> batch_size(const StudySettings& settings) {
  if (settings.train_images < 1) throw InputError("study batch-size: the size of the training set is not known");
  if (!(settings.epochs > 0)) {
    throw InputError("study batch-size: --epochs must be > 0, got " + std::to_string(settings.epochs));
  }
  struct Rules {
    const char* name;
    bool linear_scaling;  // with warm-up
    bool lars;
    float learning_rate;  // at the reference batch
  };
  // LARS's local rates carry the trust factor 0.001, so its global rate is tens of times plain SGD's: 0.5 at batch
  // 64, scaled like the others. Tried for half an epoch at 4096 images, a base of 1.0 (64 after scaling) ended at
  // 16% accuracy, 0.5 at 54-65% (algorithms/README.md, "The batch-size study").
  const Rules rule_sets[] = {{"no rule", false, false, 0.01F},
                             {"linear scaling + warm-up", true, false, 0.01F},
                             {"LARS + linear scaling + warm-up", true, true, 0.5F}};
  std::vector<StudyRun> runs;
  for (const int global : {64, 256, 1024, 4096}) {
    const int batch = std::max(1, global / settings.workers);
    const double images = static_cast<double>(batch) * settings.workers;
    const auto iterations =
        std::max<std::int64_t>(1, std::llround(settings.epochs * static_cast<double>(settings.train_images) / images));
    for (const Rules& rules : rule_sets) {
      RunOptions options = base(settings, "sync-sgd");
      options.hyper.batch = batch;
      options.hyper.learning_rate = rules.learning_rate;
      options.budget.iterations = iterations;
      options.budget.eval_every = iterations;  // one evaluation, at the end: the study compares final accuracies
      if (rules.linear_scaling) {
        options.hyper.lr_scaling = nn::LrScaling::kLinear;
        options.hyper.reference_batch = 64;
        // Goyal et al. warm up over 5 of 90 epochs; a budget this short needs a larger share to tame the first
        // steps at 64x the rate: a quarter of the iterations.
        options.hyper.warmup_iterations = iterations / 4;
      }
      options.hyper.lars = rules.lars;
      runs.push_back({std::to_string(global) + " images, " + rules.name, options, {{"rules", rules.name}}});
    }
  }
  return runs;
}

// Seed 002 Fig 1: Dogwild's test accuracy against time, one run per --workers (1, 2, 4 solvers natively; 1..64 on
// the simulated K20 clusters), each for the same time (natively) or iterations (--budget-iterations in simulation).
std::vector<StudyRun> dogwild_solvers(const StudySettings& settings) {
  RunOptions options = base(settings, "dogwild");
  options.budget.seconds = settings.seconds;
  return {{std::to_string(settings.workers) + (settings.workers == 1 ? " solver" : " solvers"), options}};
}

// Seed 002 sec. 6 ("up to 10% packet loss ... no measurable effect"): the same training time with 0 to 30% of the
// datagrams lost at the senders; the measured loss is in each run's counters.
std::vector<StudyRun> dogwild_loss(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const double rate : {0.0, 0.01, 0.05, 0.10, 0.30}) {
    RunOptions options = base(settings, "dogwild");
    options.budget.seconds = settings.seconds;
    options.hyper.datagrams.loss_rate = rate;
    const std::string percent = std::to_string(static_cast<int>(std::lround(rate * 100)));
    runs.push_back({percent + "% loss", options, {{"injected_loss_percent", percent}}});
  }
  return runs;
}

// Seed 002 sec. 6 (reliable transports "only lowered the convergence rate"): the same streaming over datagrams
// (dogwild) and over reliable messages every receiver waits for (dogwild-reliable), with sync-sgd's allreduce
// beside, each to the target accuracy (5,000 iterations at most).
std::vector<StudyRun> dogwild_transports(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const char* name : {"dogwild", "dogwild-reliable", "sync-sgd"}) {
    RunOptions options = base(settings, name);
    options.budget.target_accuracy = settings.target_accuracy;
    options.budget.iterations = 5000;
    runs.push_back({name, options});
  }
  return runs;
}

// Seed 002's multicast: the same streaming with each master chunk sent once per slave (dogwild) or once for all
// (dogwild-multicast), for the same time, at each --workers: the slaves' sync rate (weight passes per second) and
// the accuracy it buys.
std::vector<StudyRun> dogwild_multicast(const StudySettings& settings) {
  std::vector<StudyRun> runs;
  for (const char* name : {"dogwild", "dogwild-multicast"}) {
    RunOptions options = base(settings, name);
    options.budget.seconds = settings.seconds;
    runs.push_back({std::string(name) + ", " + std::to_string(settings.workers) + " solvers", options});
  }
  return runs;
}

}  // namespace

const std::vector<Study>& study_catalog() {
  static const std::vector<Study> catalog = {
      {"methods", "Fig 8: every algorithm, same workers and hyper-parameters, test error against time", methods},
      {"easgd-variants", "Table 3: Original EASGD*, Original EASGD, Sync EASGD1/2/3 to one accuracy, time breakdown",
       easgd_variants},
      {"packing", "Fig 10: weights exchanged as one packed message or one message per layer", packing},
      {"partition", "Fig 12: the cores split into groups with their own weights and data, gradients summed", partition},
      {"batch-size",
       "§7.2: accuracy against global batch at a fixed number of epochs, with and without large-batch rules",
       batch_size},
      {"dogwild", "seed 002 Fig 1: Dogwild's test accuracy against time for each --workers", dogwild_solvers},
      {"dogwild-loss", "seed 002: Dogwild's accuracy after the same time with 0, 1, 5, 10 and 30% datagram loss",
       dogwild_loss},
      {"dogwild-transports", "seed 002: time to accuracy over datagrams, over reliable messages, and sync-sgd",
       dogwild_transports},
      {"dogwild-multicast", "seed 002: Dogwild's sync rate and accuracy with multicast and unicast, by --workers",
       dogwild_multicast},
  };
  return catalog;
}

namespace {

ScalingStudy new_study(std::string name, std::string source, std::string description, std::string platform,
                       StudyMeasure measure) {
  ScalingStudy study;
  study.name = std::move(name);
  study.source = std::move(source);
  study.description = std::move(description);
  study.platform = std::move(platform);
  study.measure = measure;
  return study;
}

// Seed 000 Table 4: 68 to 4352 KNL cores of Cori, 4 ranks per chip (sec. 6.2 splits a KNL into 4 parts, one weight
// copy each), so 17 cores per worker.
ScalingStudy table4() {
  ScalingStudy study =
      new_study("table4", "seed 000 Table 4",
                "Table 4: weak-scaling efficiency of GoogLeNet and VGG on 68 to 4352 KNL cores (Cori, Aries)",
                "cori-knl", StudyMeasure::kEfficiency);
  for (int cores = 68; cores <= 4352; cores *= 2) {
    study.points.push_back({std::to_string(cores) + " cores", cores / 17, 4});
  }
  // Algorithm 4 (EASGD on the KNL cluster) keeps the centre on KNL 1, which is also a worker: no separate master,
  // a tree reduction of the weights and a broadcast of the centre each iteration. sync-easgd3 is exactly that
  // (centre on worker 0, no master, algorithms/README.md maps it to Algorithm 4); its overlapped batch copy is
  // the data loading the KNL version also hides.
  // The seed gives no batch for Table 4: 32 per rank (128 per chip) is assumed. Only the product of batch and
  // kernel efficiency matters to the fitted compute time, so the fit absorbs that choice.
  study.cases = {
      {"GoogLeNet",
       "sync-easgd3",
       "googlenet",
       32,
       300,
       {1533, 1590, 1608, 1641, 1630, 1662, 1674},
       {1.000, 0.964, 0.953, 0.934, 0.940, 0.923, 0.916}},
      {"VGG",
       "sync-easgd3",
       "vgg16",
       32,
       80,
       {1318, 1440, 1482, 1524, 1634, 1679, 1642},
       {1.000, 0.915, 0.890, 0.865, 0.807, 0.785, 0.802}},
  };
  study.compute_fit = ComputeFit::kEachCase;
  study.noise_fit_case = 0;
  study.notes = {
      "seed 000 does not name its VGG; the zoo's vgg16 (138 M parameters) stands for it.",
      "seed 000 gives no batch size for Table 4: 32 images per rank (128 per KNL) is assumed; the fitted kernel "
      "efficiency absorbs it (only their product sets the compute time)."};
  return study;
}

// Seed 000 Table 3: the EASGD variants on 4 M40 GPUs of one node, MNIST with LeNet, to 98.8% accuracy.
ScalingStudy table3() {
  ScalingStudy study =
      new_study("table3", "seed 000 Table 3",
                "Table 3: comm ratio of Original EASGD*, Original EASGD, Sync EASGD1/2/3 on 4 M40 GPUs (LeNet)",
                "m40-cluster", StudyMeasure::kCommRatio);
  study.points = {{"4 GPUs", 4, 0}};
  // Batch 64: the seed's sec. 5.2 example batch (it gives none for Table 3), as the native easgd-variants study.
  // Iterations are per worker. Original EASGD*'s 5,000 are turns of one worker each ("only one GPU (worker) is
  // working at each iteration", its 30 s of for/backward against the Sync methods' 6 s for 1,000): 1,250 per worker.
  study.cases = {
      {"Original EASGD*", "original-easgd-serial", "lenet", 64, 5000 / 4, {69}, {0.52}},
      {"Original EASGD", "original-easgd", "lenet", 64, 5000, {41}, {0.87}},
      {"Sync EASGD1", "sync-easgd1", "lenet", 64, 1000, {11}, {0.25}},
      {"Sync EASGD2", "sync-easgd2", "lenet", 64, 1000, {8.2}, {0.20}},
      {"Sync EASGD3", "sync-easgd3", "lenet", 64, 1000, {7.7}, {0.14}},
  };
  // No source gives the M40's efficiency on LeNet's small kernels: fitted once, on Sync EASGD3's time.
  study.compute_fit = ComputeFit::kOneCase;
  study.compute_fit_case = 4;
  study.notes = {
      "seed 000 gives no batch size for Table 3: 64 per GPU is assumed (its sec. 5.2 example).",
      "seed 000's iterations are those to 98.8% accuracy (Original EASGD* and EASGD need 5x more); Original EASGD*'s "
      "5,000 are one worker's turns each, so 1,250 per worker.",
      "comm ratio: a worker's busy time (no wait) plus the master's cpu update, the communication categories' share, "
      "as the native easgd-variants table computes it (core/breakdown.hpp)."};
  return study;
}

// Seed 000 Fig 12 (sec. 6.2): one KNL split into 1, 4, 8 and 16 groups, AlexNet on CIFAR, to 62.5% accuracy.
ScalingStudy fig12() {
  ScalingStudy study =
      new_study("fig12", "seed 000 Fig 12",
                "Fig 12: one KNL split into 1, 4, 8 and 16 groups with their own weights and data (AlexNet)",
                "cori-knl", StudyMeasure::kSpeedup);
  study.split_global_batch = true;
  for (const int groups : {1, 4, 8, 16}) {
    study.points.push_back({std::to_string(groups) + (groups == 1 ? " group" : " groups"), groups, groups});
  }
  // Sec. 6.2 sums the groups' gradients (a tree reduction) and every group updates its own weights with the sum:
  // synchronous SGD on gradients, which sync-sgd is (with a ring allreduce, the native partition study's choice).
  // The 249 MB AlexNet of sec. 6.2 is the zoo's ImageNet-shaped alexnet (244 MB), not its CIFAR network (149 MB).
  study.cases = {{"AlexNet", "sync-sgd", "alexnet", 64, 0, {1605, 1025, 823, 490}, {}}};
  study.notes = {
      "the published times are to 62.5% accuracy: their speed-ups include statistical effects (more weight copies, "
      "faster propagation of gradients) and the fast-memory locality sec. 6.2 credits, which the simulation does "
      "not model; it predicts the time per iteration of a global batch of 64 split among the groups.",
      "kernels run at the platform's efficiency (cori-knl lists none: peak), as nothing of Fig 12 can be fitted."};
  return study;
}

// Seed 001 (dMath) on its own platform: 1 to 64 K80s (GK210s), 16 per server, EDR InfiniBand between servers.
std::vector<ScalingStudyPoint> k80_points() {
  std::vector<ScalingStudyPoint> points;
  for (int gpus = 1; gpus <= 64; gpus *= 2)
    points.push_back({std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"), gpus, 0});
  return points;
}

// Expresso's hybrid parallelism is hybrid-sgd; NVIDIA's Caffe 0.14 is data parallelism with the gradients summed
// after every batch, which sync-sgd is (with a ring allreduce; Caffe 0.14 reduces over a tree of P2P pairs).
constexpr const char* kExpresso = "hybrid-sgd";
constexpr const char* kNvCaffe = "sync-sgd";

std::vector<std::string> seed001_notes() {
  return {
      "the published FPS are Expresso v0.5 (dMath's hybrid parallelism; here hybrid-sgd: convolutions "
      "data-parallel, the fully-connected head split over the GPUs) and NVIDIA Caffe 0.14 (data parallelism; here "
      "sync-sgd with a ring allreduce); every kernel is priced by the K80's kernel model, whose one efficiency is "
      "FITTED by `dsgd simulate --study k80` on Expresso's AlexNet at 1 GPU and batch 256 (Table IV), for both "
      "frameworks and models: every other FPS is predicted.",
      "the head's GEMMs are priced by the same kernel model, by their shapes, as are Table V's block products.",
      "nv-caffe 0.14 runs inside one server only (the paper gives no FPS beyond 16 GPUs); sync-sgd's 32 and 64 GPU "
      "rows are what it would do across servers."};
}

// Seed 001 Table III: AlexNet and GoogLeNet FPS on 1 to 64 K80s, a global batch of 1,024 split among the GPUs --
// the paper's "weak scaling" keeps the batch, not the batch per GPU -- except where its text says otherwise:
// AlexNet 512 on one GPU, GoogLeNet 128 below 8 GPUs.
ScalingStudy dmath_table3() {
  ScalingStudy study = new_study("dmath-table3", "seed 001 Table III",
                                 "Table III: AlexNet and GoogLeNet FPS on 1-64 K80s, Expresso (hybrid) and nv-caffe",
                                 "k80-dmath", StudyMeasure::kImagesPerSecond);
  study.split_global_batch = true;
  study.points = k80_points();
  const std::vector<int> alexnet_batches = {512, 1024, 1024, 1024, 1024, 1024, 1024};
  const std::vector<int> googlenet_batches = {128, 128, 128, 1024, 1024, 1024, 1024};
  study.cases = {
      {"AlexNet, Expresso",
       kExpresso,
       "alexnet",
       1024,
       0,
       {},
       {479, 940, 1996, 3103, 4198, 5187, 5786},
       alexnet_batches},
      {"AlexNet, nv-caffe", kNvCaffe, "alexnet", 1024, 0, {}, {413, 682, 1165, 2204, 2615}, alexnet_batches},
      {"GoogLeNet, Expresso",
       kExpresso,
       "googlenet",
       1024,
       0,
       {},
       {115, 215, 370, 873, 1498, 2330, 3025},
       googlenet_batches},
      {"GoogLeNet, nv-caffe", kNvCaffe, "googlenet", 1024, 0, {}, {102, 205, 341, 510, 1515}, googlenet_batches},
  };
  study.compute_fit = ComputeFit::kNone;
  study.notes = seed001_notes();
  study.notes.push_back(
      "batches as seed 001 sec. VII-A1 gives them: 1,024 split among the GPUs, AlexNet 512 on one GPU, GoogLeNet 128 "
      "below 8 GPUs; the published asterisks (Expresso's memory-bound convolution choice at 2 GPUs, nv-caffe's "
      "allocation thrashing) are not modelled.");
  return study;
}

// Seed 001 Table IV: AlexNet strong scaling, a global batch of 256 split among 1 to 64 K80s.
ScalingStudy dmath_table4() {
  ScalingStudy study = new_study("dmath-table4", "seed 001 Table IV",
                                 "Table IV: AlexNet FPS at a global batch of 256 on 1-64 K80s, Expresso and nv-caffe",
                                 "k80-dmath", StudyMeasure::kImagesPerSecond);
  study.split_global_batch = true;
  study.points = k80_points();
  study.cases = {
      {"AlexNet, Expresso", kExpresso, "alexnet", 256, 0, {}, {533, 915, 1440, 1702, 2008, 2104, 2271}},
      {"AlexNet, nv-caffe", kNvCaffe, "alexnet", 256, 0, {}, {350, 711, 898, 970, 875}},
  };
  study.compute_fit = ComputeFit::kNone;
  study.platform_fit_case = 0;
  study.notes = seed001_notes();
  study.notes.push_back(
      "CNTK's columns (580/487/428 FPS plain, 568/485/416 1-bit, 1-4 GPUs) are not predicted: CNTK's own pipeline "
      "is not modelled.");
  return study;
}

}  // namespace

const std::vector<ScalingStudy>& scaling_study_catalog() {
  static const std::vector<ScalingStudy> catalog = {table4(), table3(), fig12(), dmath_table3(), dmath_table4()};
  return catalog;
}

namespace {

template <typename Named>
const Named& find_named(const std::vector<Named>& catalog, std::string_view kind, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& item : catalog) {
    if (item.name == name) return item;
    names.push_back(item.name);
  }
  throw UnknownNameError(kind, name, names);
}

// TensorFlow's single-P100 rates, the compute calibration of both scheme studies.
const std::vector<SchemeModel>& p100_models() {
  static const std::vector<SchemeModel> models = [] {
    const std::string tf_benchmarks =
        "TensorFlow performance benchmarks, DGX-1 (8 Tesla P100), training on synthetic data, 1 GPU, batch 64, "
        "May 2017 (tensorflow/docs_src/performance/benchmarks.md)";
    return std::vector<SchemeModel>{{"resnet50", 64, 219, "Tesla P100 SXM2", tf_benchmarks},
                                    {"vgg16", 64, 154, "Tesla P100 SXM2", tf_benchmarks}};
  }();
  return models;
}

// Schemes both studies run: sync-sgd's ring after the backward pass, and wfbp-sgd's 25 MiB buckets beside it.
Scheme ring_scheme(std::string label) {
  return {std::move(label), "sync-sgd", "ring allreduce of the whole gradient over all GPUs after the backward pass",
          [](Hyperparameters&, int) {}};
}

Scheme wfbp_scheme(std::string label) {
  return {std::move(label), "wfbp-sgd",
          "each 25 MiB bucket of gradients ring-allreduced as soon as its layers' backward pass is done",
          [](Hyperparameters& hyper, int) { hyper.bucket_bytes = std::size_t{25} << 20; }};
}

SchemeStudy schemes_study() {
  SchemeStudy s;
  s.name = "schemes";
  s.description =
      "seed 004's communication schemes: weak scaling of ResNet-50 and VGG-16 from 1 to 512 GPUs on an Ethernet and "
      "an InfiniBand GPU cluster";
  s.platforms = {"p100-roce-25g", "dgx1-ib"};
  s.calibration_platform = "dgx1-ib";
  s.models = p100_models();
  s.workers = {1, 8, 16, 32, 64, 128, 256, 512};
  s.schemes = {
      ring_scheme("flat ring"),
      {"hierarchical", "sync-sgd",
       "binomial reduce to one GPU per node, ring allreduce among the nodes, binomial broadcast back",
       [](Hyperparameters& hyper, int) { hyper.allreduce = AllreduceAlgorithm::kHierarchical; }},
      {"hierarchical 2-D", "sync-sgd",
       "ring reduce-scatter inside each node, a ring per local GPU across the nodes, ring allgather inside",
       [](Hyperparameters& hyper, int) { hyper.allreduce = AllreduceAlgorithm::kHierarchical2d; }},
      {"fp16 ring", "sync-sgd", "the flat ring with gradients sent in half precision, accumulated in fp32",
       [](Hyperparameters& hyper, int) { hyper.compression = Compression::kFp16; }},
      wfbp_scheme("WFBP + fusion"),
      {"sharded PS", "async-sgd",
       "a parameter server sharded over one server per node (on its CPU); workers push and pull every shard",
       [](Hyperparameters& hyper, int nodes) { hyper.servers = nodes; }},
  };
  s.notes = {
      "each model's compute time is set at one GPU of the calibration platform from the published single-GPU "
      "throughput (the kernel efficiency that makes it so is applied to every cluster's GPUs: same silicon, a "
      "fraction of each one's peak); nothing is fitted to a scaling result.",
      "efficiency = time per iteration at 1 GPU / time at P GPUs, each GPU keeping its batch (weak scaling)."};
  return s;
}

// Seed 003's GeePS (docs/geeps.md): its scaling to 16 GPUs against allreduce and a plain parameter server, and with
// its buffers larger than the device's memory.
SchemeStudy geeps_study() {
  SchemeStudy s;
  s.name = "geeps";
  s.description =
      "seed 003's GeePS: weak scaling at 1-16 GPUs against allreduce data parallelism and a plain sharded parameter "
      "server, and with its buffers swapped through a 4 GiB device";
  s.platforms = {"k80-cluster", "dgx1-ib"};
  s.calibration_platform = "dgx1-ib";
  s.models = p100_models();
  s.workers = {1, 2, 4, 8, 16};
  // A device that holds every buffer: what the allreduce and plain PS schemes assume too (none of them counts its
  // memory).
  constexpr std::uint64_t kHoldsAll = std::uint64_t{1} << 40;
  s.schemes = {
      ring_scheme("allreduce"),
      wfbp_scheme("allreduce + WFBP"),
      {"plain PS", "async-sgd",
       "a parameter server sharded over one server per node (on its CPU); workers push and pull every shard after "
       "their backward pass, served as they come",
       [](Hyperparameters& hyper, int nodes) { hyper.servers = nodes; }},
      {"GeePS", "geeps",
       "the same servers; layer-wise pushes beside the backward pass, BSP clocks, the buffers resident on the device",
       [](Hyperparameters& hyper, int nodes) {
         hyper.servers = nodes;
         hyper.device_memory_bytes = kHoldsAll;
       }},
      {"GeePS, 4 GiB device", "geeps",
       "GeePS with 4 GiB of device memory: its buffers swapped to the host and back around each layer's step",
       [](Hyperparameters& hyper, int nodes) {
         hyper.servers = nodes;
         hyper.device_memory_bytes = std::uint64_t{4} << 30;
       }},
  };
  s.notes = {
      "each model's compute time is set at one GPU of dgx1-ib from TensorFlow's published single-P100 throughput and "
      "applied as a kernel efficiency to every cluster's GPUs; nothing is fitted to a scaling result.",
      "efficiency = time per iteration of allreduce at 1 GPU (its compute alone) / time at P GPUs; speed-up = P x "
      "efficiency.",
      "the buffers GeePS counts (every layer's output and its gradient, fp32, batch 64) are 19.4 GB for ResNet-50 "
      "and 15.3 GB for VGG-16; 'GeePS' keeps them all on the device, as the other schemes implicitly do."};
  s.published = {{"GeePS", 16, 13,
                  "seed 003 (slides on Cui et al., EuroSys '16): 'GeePS achieved 13x speedup on 16 GPUs'; their "
                  "cluster and models, not these"}};
  return s;
}

}  // namespace

const std::vector<SchemeStudy>& scheme_study_catalog() {
  static const std::vector<SchemeStudy> catalog = {schemes_study(), geeps_study()};
  return catalog;
}

const SchemeStudy& find_scheme_study(const std::string& name) {
  return find_named(scheme_study_catalog(), "scheme study", name);
}

const ScalingStudy& find_scaling_study(const std::string& name) {
  return find_named(scaling_study_catalog(), "scaling study", name);
}

// TensorFlow's published single-GPU rates on a DGX-1's P100 (synthetic data, the same software for every model).
DeviceStudy p100_study() {
  DeviceStudy study;
  study.name = "p100";
  study.description = "single-GPU training rates on a DGX-1's Tesla P100 (TensorFlow, May 2017), at batch 64 and 32";
  study.platform = "dgx1-ib";
  study.source =
      "tensorflow/docs site/en/r1/guide/performance/benchmarks.md, 'Details for NVIDIA DGX-1 (NVIDIA Tesla P100)', "
      "training synthetic data, 1 GPU (batch 64: 'Results'; batch 32: 'Other Results'), CUDA 8 / cuDNN 5.1";
  study.throughputs = {{"resnet50", 64, 219}, {"inception_v3", 64, 142}, {"resnet152", 64, 91.8}, {"vgg16", 64, 154},
                       {"resnet50", 32, 195}, {"inception_v3", 32, 128}, {"resnet152", 32, 82.7}, {"vgg16", 32, 144}};
  study.fitted = 0;
  study.notes = {
      "the zoo's networks are torchvision's: ResNets with the stride in the 3x3 (v1.5: 4.09 GMAC for ResNet-50 "
      "where He et al. count 3.8 with the stride in the first 1x1, as TensorFlow's benchmark models of May 2017 "
      "had it), Inception V3 without its auxiliary head.",
      "TensorFlow's AlexNet (64/192/384/256/256 filters) is not the zoo's (96/256/384/384/256), so its 2,987 images/s "
      "is not predicted."};
  return study;
}

// Seed 001's single-GPU rates on one GK210 of a K80 at 758 MHz: Expresso v0.5, the one framework the paper times on
// both models and two batches (Tables III and IV, 1 GPU).
DeviceStudy k80_study() {
  DeviceStudy study;
  study.name = "k80";
  study.description = "single-GPU training rates on one GK210 of a Tesla K80 (Expresso v0.5, seed 001)";
  study.platform = "k80-dmath";
  study.source =
      "seed 001 (dMath) Table III (AlexNet at batch 512, GoogLeNet at batch 128) and Table IV (AlexNet at "
      "batch 256), 1 GPU, Expresso v0.5";
  study.throughputs = {{"alexnet", 256, 533}, {"googlenet", 128, 115}, {"alexnet", 512, 479}};
  study.fitted = 0;
  study.notes = {
      "seed 001 marks Expresso's 2-GPU AlexNet (512 images per GPU, as on one GPU) with a slower convolution "
      "algorithm chosen for lack of memory, which the model does not know: its AlexNet at 512 is expected above "
      "the published rate.",
      "NVIDIA Caffe 0.14 (413, 102 and 350 images/s) and CNTK (580) run the same GPU 0.66-1.09x as fast as Expresso: "
      "software the device model does not describe, so they are not predicted here."};
  return study;
}

const std::vector<DeviceStudy>& device_study_catalog() {
  static const std::vector<DeviceStudy> catalog = {p100_study(), k80_study()};
  return catalog;
}

const DeviceStudy& find_device_study(const std::string& name) {
  return find_named(device_study_catalog(), "device study", name);
}

namespace {

// Megatron-LM SC'21 (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM") Table 1: weak scaling on Selene, sequence 2048, vocabulary 51,200. Micro-batch sizes, interleaving
// and the data-parallel implementation are those of the paper's artifact, the run_table_1.sh of NVIDIA/Megatron-LM's
// SC'21 scripts (MBS, --num-layers-per-virtual-pipeline-stage, DDP=torch|local).
TransformerStudy megatron_study() {
  TransformerStudy study;
  study.name = "megatron";
  study.description = "Megatron-LM SC'21 Table 1: GPT 1.7B-1008B on 32-3,072 A100s (Selene), TFLOP/s per GPU";
  study.platform = "selene";
  study.source =
      "Narayanan et al. 2021 (SC'21), Table 1; configurations from the run_table_1.sh of NVIDIA/Megatron-LM's SC'21 "
      "artifact";
  // model, tp, pp, GPUs, micro-batch, batch, chunks per stage, PyTorch DDP (overlapped), published TFLOP/s
  study.rows = {
      {"gpt-1.7b", 1, 1, 32, 16, 512, 1, true, 137},       {"gpt-3.6b", 2, 1, 64, 16, 512, 1, true, 138},
      {"gpt-7.5b", 4, 1, 128, 16, 512, 1, true, 142},      {"gpt-18.4b", 8, 1, 256, 8, 1024, 1, true, 135},
      {"gpt-39.1b", 8, 2, 512, 4, 1536, 1, false, 138},    {"gpt-76.1b", 8, 4, 1024, 2, 1792, 3, false, 140},
      {"gpt-145.6b", 8, 8, 1536, 2, 2304, 2, false, 148},  {"gpt-310.1b", 8, 16, 1920, 1, 2160, 2, false, 155},
      {"gpt-529.6b", 8, 35, 2520, 1, 2520, 3, false, 163}, {"gpt-1008b", 8, 64, 3072, 1, 3072, 1, false, 163},
  };
  study.fitted = 0;  // 1.7B: no tensor or pipeline parallelism, so its time is the kernels' and the gradients' sum
  study.notes = {
      "every row: full activation recomputation (--recompute-method uniform), fp16 gradients reduced in fp16, "
      "Adam with fp32 master weights, no ZeRO, no sequence parallelism (the artifact's settings)",
      "chunks per stage from --num-layers-per-virtual-pipeline-stage: 76.1B 60/4/5 = 3, 145.6B 80/8/5 = 2, "
      "310.1B 96/16/3 = 2, 529.6B 105/35/1 = 3; 1008B none",
      "PyTorch DDP (the first four rows) reduces 25 MiB buckets during the backward pass; Megatron-LM's local DDP "
      "(the others) reduces after the pipeline's flush",
  };
  return study;
}

}  // namespace

const std::vector<TransformerStudy>& transformer_study_catalog() {
  static const std::vector<TransformerStudy> catalog = {megatron_study()};
  return catalog;
}

const Study& find_study(const std::string& name) { return find_named(study_catalog(), "study", name); }

SimulatedStudyInputs simulated_study_inputs(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& study : scaling_study_catalog()) {
    if (study.name == name) return {{study.platform}, {"study-iterations"}};
    names.push_back(study.name);
  }
  for (const auto& study : scheme_study_catalog()) {
    if (study.name == name) return {study.platforms, {"study-iterations", "workers"}};  // --workers: the sizes
    names.push_back(study.name);
  }
  for (const auto& study : device_study_catalog()) {
    if (study.name == name) return {{study.platform}, {}};
    names.push_back(study.name);
  }
  for (const auto& study : transformer_study_catalog()) {
    if (study.name == name) return {{study.platform}, {}};
    names.push_back(study.name);
  }
  throw UnknownNameError("study", name, names);
}

}  // namespace dsgd::algorithms
