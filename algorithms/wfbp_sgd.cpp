// WFBP SGD: Sync SGD's maths with wait-free backpropagation (Poseidon, Zhang et al. 2017) and fusion buckets
// (Horovod's tensor fusion, PyTorch DDP's buckets). The backward pass goes layer by layer, from the last; as soon as
// a bucket's layers are done its gradients are summed by a ring allreduce on a stream (Comm::start_stream: a
// communication thread natively, a second actor in SimGrid) while the earlier layers' backward pass goes on. After
// the backward pass the worker waits for the buckets still under way -- its exposed communication -- averages and
// applies the same momentum update everywhere, so the replicas stay bit-identical.
//
// Sums: each bucket is its own ring, whose chunks (and so each element's order of summation) follow the bucket's
// size, so the weights equal sync-sgd's to rounding, and bit for bit when one bucket holds the whole model
// (--bucket-bytes at least the model's size). Across executors they are always bit-identical.

#include "algorithms/entries.hpp"
#include "algorithms/gradient_buckets.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

namespace {

// Bucket b's allreduce runs under tag kBucketTag + b: buckets in flight on different ranks never mix messages.
constexpr Tag kBucketTag = kFirstCollectiveTag + 64;

// The buckets, the first (the last layers') capped at --first-bucket-bytes where set: PyTorch DDP's first bucket is
// 1 MiB (its _DEFAULT_FIRST_BUCKET_BYTES) beside 25 MiB for the others, so the first allreduce starts as soon as the
// last layers are done rather than after 25 MiB of them.
std::vector<GradientBucket> buckets_of(const Trainer& trainer) {
  const std::span<const nn::ParameterSlice> layout = trainer.layout();
  const std::size_t cap = trainer.hyper().bucket_bytes;
  const auto first_cap = static_cast<std::size_t>(trainer.option("first-bucket-bytes"));
  if (first_cap == 0 || cap == 0) return make_buckets(layout, cap);
  const auto first = make_buckets(layout, first_cap);
  if (first.empty()) return first;
  std::vector<GradientBucket> buckets{first.front()};
  for (const auto& bucket : make_buckets(layout.first(first.front().first_layer), cap)) buckets.push_back(bucket);
  return buckets;
}

class WfbpSgd final : public Algorithm {
 public:
  explicit WfbpSgd(Trainer& trainer)
      : sgd_(trainer.make_sgd(trainer.hyper().momentum)),
        buckets_(buckets_of(trainer)),
        closes_bucket_(trainer.layout().size(), false) {
    if (trainer.hyper().period != 1) {
      throw InputError("wfbp-sgd overlaps every iteration's gradient allreduce with its backward pass: --period " +
                       std::to_string(trainer.hyper().period) + " must be 1");
    }
    for (const GradientBucket& bucket : buckets_) closes_bucket_[bucket.first_layer] = true;
  }

  void visit_state(Trainer&, StateVisitor& state) override { state.optimiser("sgd", *sgd_); }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const float scale = 1.0F / static_cast<float>(trainer.workers());
    for (std::int64_t i = 0; i < iterations; ++i) {
      float* gradients = trainer.gradients();  // null in a size-only world
      // The stream reduces the buckets in the order the backward pass readies them, one at a time (one ring at a
      // time, as NCCL's stream does), each as soon as the caller posts it.
      const StreamPtr stream = trainer.comm().start_stream([this, gradients](Comm& comm, StreamPosts& posts) {
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
          posts.take();
          const GradientBucket& bucket = buckets_[b];
          const Floats floats{gradients != nullptr ? gradients + bucket.offset : nullptr, bucket.count};
          allreduce(comm, floats, allreduce_algorithm_, {Category::kGpuGpuPara, kBucketTag + static_cast<Tag>(b)});
        }
      });
      trainer.compute_gradient([&](std::size_t layer) {
        if (closes_bucket_[layer]) stream->post();
      });
      // What the backward pass did not hide: exposed communication, charged as Sync SGD's whole allreduce is.
      trainer.add_overlapped_comm(overlapped_comm_s(stream->join(Category::kGpuGpuPara)));
      trainer.scale(gradients, scale);
      trainer.sgd_step(*sgd_);
    }
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<GradientBucket> buckets_;
  std::vector<bool> closes_bucket_;  // by layer: the backward pass of this layer readies a bucket
  AllreduceAlgorithm allreduce_algorithm_ = AllreduceAlgorithm::kRing;  // per bucket; an option later
};

}  // namespace

AlgorithmEntry wfbp_sgd_entry() {
  AlgorithmEntry entry{
      {"wfbp-sgd", "sync-sgd whose bucketed gradient allreduces overlap the backward pass (wait-free backpropagation)",
       /*has_master=*/false, /*synchronous=*/true},
      [](Trainer& trainer) { return std::make_unique<WfbpSgd>(trainer); }};
  entry.info.options = {{"first-bucket-bytes",
                         "bytes of the first gradient bucket, the last layers' (PyTorch DDP: 1 MiB); 0: as large as "
                         "--bucket-bytes",
                         0, 0, 1e12, true, true}};
  return entry;
}

}  // namespace dsgd::algorithms
