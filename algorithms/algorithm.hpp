#pragma once
// An SGD algorithm of seed 000, written once against the communication interface (core/comm.hpp) and a Trainer
// (algorithms/trainer.hpp: this rank's model replica, data and timed steps), so it runs unchanged on threads, on
// OpenMPI and in SimGrid. One file per algorithm in this folder, each registering itself in the catalog of
// algorithms/registry.cpp -- nothing outside algorithms/ names an algorithm.
//
// Roles, as in seed 000: workers play the GPUs, a master (if the algorithm has one) the host CPU. With a master,
// rank 0 is the master and ranks 1..P the workers; without one, ranks 0..P-1 are the workers. Either way rank 0
// holds the model that is evaluated (the master's centre or server weights, worker 0's replica, the shared vector).
// A parameter server sharded over S servers (Hyperparameters::servers) has ranks 0..S-1 as its servers and ranks
// S..S+P-1 as the workers; rank 0 gathers the other shards for the evaluation.
//
// Training runs in rounds (algorithms/runner.hpp): in a round every worker does `iterations` SGD iterations,
// exchanging with the others as its algorithm does, and a master serves exactly the exchanges of that round. Between
// rounds the runner evaluates rank 0's model and decides whether to stop, so the budget (iterations, seconds, target
// accuracy) is one decision for every algorithm. A round's iteration count is a multiple of the communication
// period.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/collectives.hpp"
#include "core/compression.hpp"
#include "core/error.hpp"
#include "core/nn/sgd.hpp"

namespace dsgd::algorithms {

class Trainer;

// A worker's loss became NaN or infinite (core/error.hpp).
using dsgd::DivergedError;

// What every algorithm of the family is tuned by (seed 000's eta, rho, mu, batch, period, seed).
struct Hyperparameters {
  float learning_rate = 0.01F;  // eta
  float momentum = 0.9F;        // mu: momentum SGD (Sync SGD, Async MSGD's server, Async MEASGD's workers)
  float weight_decay = 5e-4F;   // lambda, L2
  // rho: the elastic force is alpha = eta * rho. 0 picks alpha = 0.9 / P (EASGD's beta = P alpha = 0.9).
  float elastic_rho = 0.0F;
  int batch = 64;  // per worker
  int period = 1;  // tau: iterations between exchanges
  std::uint64_t seed = 1;
  bool per_layer = false;  // exchange weights one message per layer instead of one packed message (Fig 10)
  // Gradient buckets of wait-free backpropagation (wfbp-sgd): layers are fused, from the last, into a bucket until
  // it holds this many bytes (PyTorch DDP's bucket_cap_mb, 25 MiB by default); 0: one bucket per layer.
  std::size_t bucket_bytes = 25 * 1024 * 1024;
  // The allreduce Sync SGD sums with (core/collectives.hpp); the hierarchical ones follow the ranks' nodes.
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kRing;
  // Large-batch rules (seed 004: Goyal et al. 2017, You et al. 2017; docs/nn.md "Optimizer options"), applied to
  // every optimiser of the run (workers' and master's) through Trainer::make_sgd:
  //   linear   eta' = eta * global batch / reference_batch, global batch = batch * workers: the images all workers
  //            take per iteration, for every algorithm (where workers step on their own batch, as the EASGD family
  //            and the asynchronous ones do, a local step still sees `batch` images; see the doc)
  //   warm-up  eta_t ramps linearly from eta to eta' over an optimiser's first warmup_iterations steps
  //   LARS     each layer steps at eta_t * lars_trust ||w|| / (||g|| + lambda ||w||)
  // EASGD's elastic force keeps the base rate: alpha = eta * rho.
  nn::LrScaling lr_scaling = nn::LrScaling::kNone;
  int reference_batch = 64;
  std::int64_t warmup_iterations = 0;
  bool lars = false;
  float lars_trust = 0.001F;
  // Parameter-server algorithms (AlgorithmInfo::shardable): the server sharded over this many ranks, ranks
  // 0..servers-1, each owning a contiguous range of the packed parameters (core/collectives.hpp shard_of).
  int servers = 1;
  // SSP's bound s (ssp-sgd): a worker that has pushed c times starts its next iteration only once every worker has
  // pushed at least c - s times. 0 is BSP; a bound above any run's pushes is fully asynchronous.
  std::int64_t staleness_bound = 3;
  // Compressed gradient exchange (core/compressed_collectives.hpp), for algorithms whose AlgorithmInfo::compresses:
  // none, fp16, onebit or topk keeping ceil(topk_ratio x parameters) entries per worker.
  Compression compression = Compression::kNone;
  double topk_ratio = 0.01;
  // Dogwild (dogwild): its datagram channel (core/comm.hpp: the injected loss rate, UDP's receive buffer and send
  // pace; the loss seed is `seed`) and the floats per chunk a master streams, at most kMaxChunkFloats.
  DatagramOptions datagrams;
  std::size_t chunk_floats = kMaxChunkFloats;
  // GeePS (geeps): the device memory a worker's buffers may take; when they need more, its memory plan swaps them
  // (algorithms/geeps/memory_plan.hpp). 0: no limit natively; in simulation the platform's device memory.
  std::uint64_t device_memory_bytes = 0;
  // The values of options an algorithm declares in its own file (AlgorithmInfo::options), by name, as given on the
  // command line; resolve_options() completes them with the defaults and refuses the ones it does not declare.
  std::map<std::string, double> own;
};

// An option one algorithm declares in its own file, so that adding one touches that file only: `dsgd run` and
// `dsgd simulate` take it as --NAME, dsgd-mpi receives it, results record it among the algorithm's options, and
// the algorithm reads it with Trainer::option (algorithms/README.md, "Options of one algorithm").
struct AlgorithmOption {
  std::string name;  // lower case with '-': "first-bucket-bytes" is --first-bucket-bytes
  std::string help;  // one line, the unit and what 0 means where it matters
  double default_value = 0;
  double min = 0;  // the accepted range, inclusive
  double max = 0;
  bool integer = false;
  bool bytes = false;  // a size: the command line takes units (16MiB, 1.5GB)
};

// The rate after warm-up for `workers` workers: eta, or eta scaled by the linear rule.
float scaled_learning_rate(const Hyperparameters& hyper, int workers);

struct AlgorithmInfo {
  std::string name;          // as on the command line, e.g. "sync-easgd2"
  std::string description;   // one line
  bool has_master = false;   // rank 0 is a master (the CPU); workers are ranks 1..P
  bool synchronous = false;  // same seed, same weights, bit for bit (on any executor)
  bool shardable = false;    // takes --servers S: its parameter server sharded over ranks 0..S-1
  bool compresses = false;   // honours Hyperparameters::compression (the others refuse a compression)
  bool whole_layers = true;  // every optimiser sees whole layers, so it takes LARS (hybrid-sgd's split layers do not)
  std::vector<AlgorithmOption> options{};  // its own options, declared in its file
};

// `given` completed with the defaults of `info`'s options. Throws InputError for a value outside an option's range
// or not whole where it must be, and for an option `info` does not declare, naming the algorithms that do.
std::map<std::string, double> resolve_options(const AlgorithmInfo& info, const std::map<std::string, double>& given);

// The pieces of one rank's algorithm state, named for a checkpoint (algorithms/run_checkpoint.hpp), which saves
// them and restores them in place.
class StateVisitor {
 public:
  virtual ~StateVisitor() = default;
  // `data` (host memory) as it is between rounds.
  virtual void floats(std::string_view name, std::span<float> data) = 0;
  // An optimiser's step count and velocity (host memory: the CPU back end).
  virtual void optimiser(std::string_view name, nn::Sgd& sgd) = 0;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // One round: `iterations` SGD iterations on every worker, with the algorithm's exchanges; a master serves them.
  virtual void run_round(Trainer& trainer, std::int64_t iterations) = 0;
  // On rank 0, after a round: the parameters to evaluate (parameter_count floats, host memory). By default rank
  // 0's replica: the master's centre or server weights, or worker 0's weights.
  virtual void model_of_record(Trainer& trainer, std::span<float> parameters);
  // Names every piece of this rank's state that a later round reads besides the Trainer's (its weights, its
  // iterations): optimisers, centre variables, error-feedback residuals -- not scratch buffers that every exchange
  // rewrites before reading. Checkpoints cover the synchronous algorithms (AlgorithmInfo::synchronous), which
  // implement it; the default throws InternalError.
  virtual void visit_state(Trainer& trainer, StateVisitor& state);
  // Counts this rank kept (dogwild's datagrams sent, lost, refused), by name; the runner sums them over the ranks
  // (RunResult::counters). Every rank names the same ones. By default none.
  virtual std::map<std::string, double> counters(Trainer& trainer) const;
};

// Builds this rank's part of an algorithm; called on every rank, it may communicate (collectively).
using AlgorithmFactory = std::function<std::unique_ptr<Algorithm>(Trainer& trainer)>;

struct AlgorithmEntry {
  AlgorithmInfo info;
  AlgorithmFactory make;
};

// Every algorithm, in seed 000's order.
const std::vector<AlgorithmEntry>& algorithm_catalog();
// Throws UnknownNameError listing the names.
const AlgorithmEntry& find_algorithm(const std::string& name);
std::vector<std::string> algorithm_names();
// Appends `entry` to the catalog, after the built-in algorithms, so that a program can bring an algorithm of its own
// (examples/gossip_sgd.cpp): runs, simulations and listings then find it by its name like any other. Call it before
// any run starts: it is not safe against concurrent lookups, and references into the catalog taken before it may
// not survive it. Returns the stored entry. Throws InputError for an empty name, a missing factory or a name the
// catalog already has.
const AlgorithmEntry& add_algorithm(AlgorithmEntry entry);

}  // namespace dsgd::algorithms
