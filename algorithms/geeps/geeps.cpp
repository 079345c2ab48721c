// GeePS (seed 003; Cui et al., EuroSys '16; docs/geeps.md): a parameter server for GPU workers. The parameters are
// sharded over S servers on the machines' CPUs (ranks 0..S-1; GeePS runs one per machine), every GPU worker keeps
// the whole model in a cache in its device memory and trains in BSP clocks (GeePS's best setting, slack 0):
//  * as the backward pass finishes each layer, a background stream sends that layer's gradients to the servers
//    owning its rows, so the pushes overlap the earlier layers' backward passes;
//  * a server sums the clock's gradients of every worker (in worker order: the run repeats bit for bit), applies
//    one optimiser step to its shard and sends the new shard to every worker, which refreshes its cache from them
//    before the next clock -- synchronous SGD's maths, sync-sgd's weights to rounding;
//  * the worker's buffers (parameters, activations, their gradients) live in device memory when they fit
//    (Hyperparameters::device_memory_bytes); when they do not, the memory plan of one virtual iteration
//    (algorithms/geeps/memory_plan.hpp) says what moves between host and device around each step, and a second
//    stream moves it while the step computes ("copy" steps: PCIe in simulation, a copy engine's stream natively):
//    what the step needs and lacks is copied before it runs (a stall), the next step's prefetch and the evictions
//    beside it.

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/geeps/memory_plan.hpp"
#include "algorithms/parameter_server.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

namespace {

// Pushes and pulls, each on its own tag: one (worker, server) pair's pushes of a clock arrive in order.
constexpr Tag kPushTag = kFirstCollectiveTag + 32;
constexpr Tag kPullTag = kFirstCollectiveTag + 33;
constexpr Category kServerCategory = Category::kCpuGpuPara;  // as the other parameter servers' traffic
// Buffers swapped between host and device memory: the batch's intermediate data as much as parameters.
constexpr Category kSwapCategory = Category::kCpuGpuData;
// The swap area a background copy goes through natively, in pieces of at most this many bytes.
constexpr std::size_t kSwapAreaBytes = std::size_t{64} << 20;

// A layer's parameters within one server's shard.
struct Piece {
  int server = 0;
  std::size_t offset = 0;  // in the packed parameters
  std::size_t count = 0;
};

// Per layer the backward pass readies (Trainer::network_layers(); a size-only layout also lists the final softmax's
// empty slice), its pieces, in server order.
std::vector<std::vector<Piece>> pieces_by_layer(const Trainer& trainer) {
  const std::size_t readied = trainer.network_layers();
  std::vector<std::vector<Piece>> pieces;
  for (const auto& slice : trainer.layout()) {
    if (pieces.size() == readied) {
      DSGD_ENFORCE(slice.count == 0, "geeps: parameters in a layer the backward pass does not ready");
      break;
    }
    std::vector<Piece> layer;
    for (int server = 0; server < trainer.servers(); ++server) {
      const Shard shard = trainer.shard(server);
      const std::size_t begin = std::max(slice.offset, shard.offset);
      const std::size_t end = std::min(slice.offset + slice.count, shard.offset + shard.count);
      if (begin < end) layer.push_back({server, begin, end - begin});
    }
    pieces.push_back(std::move(layer));
  }
  return pieces;
}

// The plan where every buffer stays on the device.
geeps::MemoryPlan fits_everything() {
  geeps::MemoryPlan plan;
  plan.fits = true;
  return plan;
}

std::uint64_t total_bytes(const std::vector<geeps::Transfer>& transfers) {
  std::uint64_t bytes = 0;
  for (const auto& transfer : transfers) bytes += transfer.bytes;
  return bytes;
}

class Geeps final : public ShardedServer {
 public:
  explicit Geeps(Trainer& trainer) : ShardedServer(trainer), pieces_(pieces_by_layer(trainer)) {
    if (trainer.hyper().period != 1) {
      throw InputError("geeps exchanges every clock (iteration): --period " + std::to_string(trainer.hyper().period) +
                       " must be 1");
    }
    if (trainer.is_master()) {
      sgd_ = trainer.make_sgd(trainer.hyper().momentum, shard_);
      if (trainer.has_data()) pushed_.assign(static_cast<std::size_t>(trainer.workers()) * shard_.count, 0.0F);
      return;
    }
    const std::uint64_t device_bytes = trainer.hyper().device_memory_bytes;
    if (device_bytes == 0) return;  // no limit: every buffer stays on the device
    const geeps::AccessPattern pattern = geeps::virtual_iteration(trainer.model(), trainer.hyper().batch);
    plan_ = geeps::plan_memory(pattern, device_bytes);
    if (!plan_.fits && trainer.has_data()) {
      swap_area_ = trainer.backend().make_swap_area(
          static_cast<std::size_t>(std::min<std::uint64_t>(kSwapAreaBytes, plan_.peak_bytes)));
    }
  }

  void visit_state(Trainer&, StateVisitor& state) override {
    if (sgd_) state.optimiser("sgd", *sgd_);
  }

  std::map<std::string, double> counters(Trainer&) const override {
    return {{"geeps_swapped_bytes", static_cast<double>(swapped_bytes_)},
            {"geeps_stalled_bytes", static_cast<double>(stalled_bytes_)}};
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    if (trainer.is_master()) {
      begin_serving();
      for (std::int64_t clock = 0; clock < iterations; ++clock) serve_clock(trainer);
      end_serving(trainer);
      return;
    }
    for (std::int64_t i = 0; i < iterations; ++i) train_clock(trainer);
  }

 private:
  // A server's clock: every worker's pushes of its shard, one step, the new shard to every worker.
  void serve_clock(Trainer& trainer) {
    Comm& comm = trainer.comm();
    const int workers = trainer.workers();
    const auto stride = shard_.count;
    float* pushed = pushed_.empty() ? nullptr : pushed_.data();
    // Every push of the clock received as it comes (the workers send their pieces from the last layer down).
    std::vector<RequestPtr> receives;
    for (std::size_t layer = pieces_.size(); layer-- > 0;) {
      for (const Piece& piece : pieces_[layer]) {
        if (piece.server != comm.rank()) continue;
        for (int worker = 0; worker < workers; ++worker) {
          float* into =
              pushed ? pushed + static_cast<std::size_t>(worker) * stride + (piece.offset - shard_.offset) : nullptr;
          receives.push_back(
              comm.irecv(trainer.worker_rank(worker), kPushTag, into, piece.count * sizeof(float), kServerCategory));
        }
      }
    }
    for (auto& receive : receives) receive->wait();
    // The mean gradient, summed in worker order.
    float* gradient = trainer.gradients() ? trainer.gradients() + shard_.offset : nullptr;
    const float scale = 1.0F / static_cast<float>(workers);
    trainer.elementwise(static_cast<double>(workers) * static_cast<double>(stride), Category::kCpuUpdate, [&] {
      std::copy(pushed, pushed + stride, gradient);
      for (int worker = 1; worker < workers; ++worker) {
        const float* from = pushed + static_cast<std::size_t>(worker) * stride;
        for (std::size_t k = 0; k < stride; ++k) gradient[k] += from[k];
      }
      for (std::size_t k = 0; k < stride; ++k) gradient[k] *= scale;
    });
    trainer.sgd_step(*sgd_, Category::kCpuUpdate, shard_);
    const float* weights = trainer.parameters() ? trainer.parameters() + shard_.offset : nullptr;
    std::vector<RequestPtr> replies;
    for (int worker = 0; worker < workers; ++worker) {
      replies.push_back(
          comm.isend(trainer.worker_rank(worker), kPullTag, weights, stride * sizeof(float), kServerCategory));
    }
    for (auto& reply : replies) reply->wait();
  }

  // A worker's clock: forward and backward through its device cache (with the plan's copies around each step when
  // the buffers do not fit), each layer's gradients pushed as the backward pass readies them, then the cache
  // refreshed from every server.
  void train_clock(Trainer& trainer) {
    Comm& comm = trainer.comm();
    const float* gradients = trainer.gradients();
    const StreamPtr pushes = comm.start_stream([this, gradients](Comm& stream, StreamPosts& posts) {
      std::vector<RequestPtr> sends;
      for (std::size_t layer = pieces_.size(); layer-- > 0;) {
        posts.take();
        for (const Piece& piece : pieces_[layer]) {
          sends.push_back(stream.isend(piece.server, kPushTag, gradients ? gradients + piece.offset : nullptr,
                                       piece.count * sizeof(float), kServerCategory));
        }
      }
      for (auto& send : sends) send->wait();
    });
    const auto post = [&pushes](std::size_t) { pushes->post(); };
    if (plan_.fits) {
      trainer.compute_gradient(post);
    } else {
      trainer.compute_gradient(
          [&](std::size_t step, const std::function<void()>& run) { swapping(trainer, step, run); }, post);
    }
    trainer.add_overlapped_comm(overlapped_comm_s(pushes->join(kServerCategory)));
    std::vector<RequestPtr> pulls;
    float* weights = trainer.parameters();
    for (int server = 0; server < trainer.servers(); ++server) {
      const Shard shard = trainer.shard(server);
      pulls.push_back(comm.irecv(server, kPullTag, weights ? weights + shard.offset : nullptr,
                                 shard.count * sizeof(float), kServerCategory));
    }
    for (auto& pull : pulls) pull->wait();
  }

  // Step `step` of the plan around `run`: what it lacks is copied first (the worker waits), the next step's
  // prefetch and this step's evictions go on a stream beside it, and the step ends when both have.
  void swapping(Trainer& trainer, std::size_t step, const std::function<void()>& run) {
    DSGD_ENFORCE(step < plan_.steps.size(), "geeps: the network has more steps than its virtual iteration");
    const geeps::StepPlan& plan = plan_.steps[step];
    const std::uint64_t in = total_bytes(plan.to_device);
    const std::uint64_t out = total_bytes(plan.to_host);
    if (plan.stalled_bytes > 0) copy(trainer.comm(), plan.stalled_bytes, /*to_device=*/true);
    const std::uint64_t prefetch = in - std::min(in, plan.stalled_bytes);
    if (prefetch == 0 && out == 0) {
      run();  // nothing to move beside it: no stream to start (natively a thread, about 20 us)
    } else {
      const StreamPtr copies = trainer.comm().start_stream([this, prefetch, out](Comm& stream, StreamPosts&) {
        copy(stream, out, /*to_device=*/false);
        copy(stream, prefetch, /*to_device=*/true);
      });
      run();
      copies->join(kSwapCategory);
    }
    swapped_bytes_ += in + out;
    stalled_bytes_ += plan.stalled_bytes;
  }

  // `bytes` between host and device as one copy step on `comm` (natively through the swap area).
  void copy(Comm& comm, std::uint64_t bytes, bool to_device) {
    if (bytes == 0) return;
    ComputeStep step;
    step.kernel_class = "copy";
    step.category = kSwapCategory;
    step.bytes = static_cast<double>(bytes);
    if (swap_area_) {
      step.kernel = [this, bytes, to_device] {
        for (std::uint64_t done = 0; done < bytes;) {
          const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(swap_area_->bytes(), bytes - done));
          if (to_device) {
            swap_area_->to_device(piece);
          } else {
            swap_area_->to_host(piece);
          }
          done += piece;
        }
      };
    }
    comm.compute(step);
  }

  std::vector<std::vector<Piece>> pieces_;
  // A server's:
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> pushed_;  // workers x shard floats: the clock's gradients, worker by worker
  // A worker's:
  geeps::MemoryPlan plan_ = fits_everything();
  std::unique_ptr<nn::SwapArea> swap_area_;  // natively, where the plan moves buffers
  std::uint64_t swapped_bytes_ = 0;          // so far
  std::uint64_t stalled_bytes_ = 0;
};

}  // namespace

AlgorithmEntry geeps_entry() {
  return {{"geeps",
           "GeePS: GPU workers with a device-side parameter cache, layer-wise pushes beside the backward pass to a "
           "parameter server sharded over the CPUs, BSP clocks, buffers swapped when the device is too small",
           /*has_master=*/true, /*synchronous=*/true, /*shardable=*/true},
          [](Trainer& trainer) { return std::make_unique<Geeps>(trainer); }};
}

}  // namespace dsgd::algorithms
