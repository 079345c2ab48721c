#pragma once
// One body of collective checks that every executor's test runs (threads, MPI under mpirun, SimGrid), so all
// executors are held to the same results; groups of ranks (core/group_comm.hpp) run them too. The inputs are
// core/verifiable.hpp's, small integers in float whose sums are exact in any order, so every check is an exact
// comparison. Without payloads (size-only simulation) the same operations run and nothing is compared.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/group_comm.hpp"
#include "core/verifiable.hpp"

namespace dsgd::testing {

using verifiable::input_value;
using verifiable::inputs;
using verifiable::sum_value;

// Throws std::runtime_error naming rank, operation, element, value and expectation on the first difference.
inline void expect_values(const Comm& comm, const std::string& what, const std::vector<float>& actual,
                          const std::vector<float>& expected) {
  if (!comm.has_payload()) return;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (actual[i] != expected[i]) {
      throw std::runtime_error("rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) + ": " +
                               what + " (" + std::to_string(expected.size()) + " floats): element " +
                               std::to_string(i) + " is " + std::to_string(actual[i]) + ", expected " +
                               std::to_string(expected[i]));
    }
  }
}

// A buffer that is real only when the comm carries payloads.
struct TestBuffer {
  TestBuffer(const Comm& comm, std::vector<float> values) : count(values.size()) {
    if (comm.has_payload()) storage = std::move(values);
  }
  Floats floats() { return {storage.empty() ? nullptr : storage.data(), count}; }
  std::size_t count;
  std::vector<float> storage;
};

// `comm` under another node map (Comm::node_of), so every executor runs the hierarchical allreduces on maps its
// hardware does not have: interleaved, uneven. Everything else goes to `comm`.
class RemappedComm final : public Comm {
 public:
  RemappedComm(Comm& comm, std::function<int(int)> node) : comm_(comm), node_(std::move(node)) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  double now_s() const override { return comm_.now_s(); }
  std::string_view executor() const override { return comm_.executor(); }
  bool has_payload() const override { return comm_.has_payload(); }
  int node_of(int rank) const override { return node_(rank); }
  RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) override {
    return comm_.isend(destination, tag, data, bytes, category);
  }
  RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) override {
    return comm_.irecv(source, tag, data, bytes, category);
  }
  void compute(const ComputeStep& step) override { comm_.compute(step); }
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                              std::span<const float> initial) override {
    return comm_.shared_vector(name, count, initial);
  }

 private:
  Comm& comm_;
  std::function<int(int)> node_;
};

// Node maps the hierarchical allreduces must handle, by name: uneven, interleaved, numbered out of order.
inline std::vector<std::pair<std::string, std::function<int(int)>>> test_node_maps() {
  return {
      {"nodes of 3", [](int rank) { return rank / 3; }},
      {"interleaved over 2", [](int rank) { return rank % 2; }},
      {"rank 0 alone on node 9", [](int rank) { return rank == 0 ? 9 : 4; }},
      {"nodes of 1, 2, 3, ... ranks",
       [](int rank) {
         int node = 0;  // node k holds k + 1 ranks; next is the first rank of node + 1
         for (int next = 1; next <= rank; next += node + 1) ++node;
         return node;
       }},
  };
}

// The collectives inside groups of the world (core/group_comm.hpp): the even and the odd ranks, each in a tag block
// of its own, and then all ranks in reverse order in a third, so a rank done with its parity group already sends in
// the reversed group while its peers still receive in theirs. Every allreduce (the hierarchical ones inside a group
// of a group), a broadcast, and receives from any rank whose statuses must name group ranks.
inline void check_group_collectives(Comm& comm, std::size_t count) {
  const int rank = comm.rank();
  const int size = comm.size();
  std::vector<int> parity, reversed;
  for (int r = rank % 2; r < size; r += 2) parity.push_back(r);
  for (int r = size - 1; r >= 0; --r) reversed.push_back(r);
  GroupComm same_parity(comm, parity, group_tag_offset(1 + rank % 2));
  GroupComm backwards(comm, reversed, group_tag_offset(3));
  for (GroupComm* group : {&same_parity, &backwards}) {
    const std::string where =
        "group of " + std::to_string(group->size()) + " (offset " + std::to_string(group->tag_offset()) + "): ";
    std::vector<float> sums(count, 0.0F);
    for (std::size_t i = 0; i < count; ++i) {
      for (const int member : group->members()) sums[i] += input_value(member, i);
    }
    Tag tag = kFirstCollectiveTag;
    for (const auto algorithm : kAllreduceAlgorithms) {
      TestBuffer buffer(comm, inputs(rank, count));
      allreduce(*group, buffer.floats(), algorithm, {Category::kGpuGpuPara, tag++});
      expect_values(comm, where + "allreduce " + std::string(to_string(algorithm)), buffer.storage, sums);
    }
    const int root = group->size() - 1;
    const int root_world = group->members()[static_cast<std::size_t>(root)];
    TestBuffer buffer(comm, rank == root_world ? inputs(rank, count) : std::vector<float>(count, -1.0F));
    broadcast(*group, buffer.floats(), root, {Category::kGpuGpuPara, tag++});
    expect_values(comm, where + "broadcast from group rank " + std::to_string(root), buffer.storage,
                  inputs(root_world, count));
  }
  // Each rank but the reversed group's rank 0 sends its world rank there; the statuses name group ranks.
  const Tag any_tag = kFirstCollectiveTag + 50;
  if (backwards.rank() != 0) {
    const int sender = rank;
    const Status sent =
        backwards.send(0, any_tag, comm.has_payload() ? &sender : nullptr, sizeof sender, Category::kGpuGpuPara);
    if (sent.source != 0 || sent.tag != any_tag) throw std::runtime_error("group send: status names a world rank");
    return;
  }
  std::vector<bool> seen(static_cast<std::size_t>(size), false);
  for (int i = 1; i < size; ++i) {
    int sender = -1;
    const Status status = backwards.recv(kAnySource, any_tag, comm.has_payload() ? &sender : nullptr, sizeof sender,
                                         Category::kGpuGpuPara);
    const bool named = status.source >= 1 && status.source < size && status.tag == any_tag &&
                       !seen[static_cast<std::size_t>(status.source)] &&
                       (!comm.has_payload() || reversed[static_cast<std::size_t>(status.source)] == sender);
    if (!named) {
      throw std::runtime_error("rank " + std::to_string(rank) + ": a group receive from any rank got group rank " +
                               std::to_string(status.source) + " (tag " + std::to_string(status.tag) +
                               ") for a message of world rank " + std::to_string(sender));
    }
    seen[static_cast<std::size_t>(status.source)] = true;
  }
}

// Runs every collective of core/collectives.hpp on `count` floats and checks each result exactly.
inline void check_collectives(Comm& comm, std::size_t count) {
  const int rank = comm.rank();
  const int size = comm.size();
  std::vector<float> sums(count);
  for (std::size_t i = 0; i < count; ++i) sums[i] = sum_value(size, i);
  Tag tag = kFirstCollectiveTag;
  auto next = [&tag](Category category = Category::kGpuGpuPara) { return CollectiveOptions{category, tag++}; };

  for (const int root : {0, size - 1, size / 2}) {
    TestBuffer buffer(comm, rank == root ? inputs(root, count) : std::vector<float>(count, -1.0F));
    broadcast(comm, buffer.floats(), root, next());
    expect_values(comm, "broadcast from " + std::to_string(root), buffer.storage, inputs(root, count));

    TestBuffer partial(comm, inputs(rank, count));
    reduce(comm, partial.floats(), root, next(Category::kCpuGpuPara));
    expect_values(comm, "reduce to " + std::to_string(root), partial.storage,
                  rank == root ? sums : inputs(rank, count));
  }

  for (const auto algorithm : kAllreduceAlgorithms) {
    TestBuffer buffer(comm, inputs(rank, count));
    allreduce(comm, buffer.floats(), algorithm, next());
    expect_values(comm, "allreduce " + std::string(to_string(algorithm)), buffer.storage, sums);
  }
  for (const auto& [map_name, node] : test_node_maps()) {
    RemappedComm remapped(comm, node);
    for (const auto algorithm : kAllreduceAlgorithms) {
      if (!node_aware(algorithm)) continue;
      TestBuffer buffer(comm, inputs(rank, count));
      allreduce(remapped, buffer.floats(), algorithm, next());
      expect_values(comm, "allreduce " + std::string(to_string(algorithm)) + " on " + map_name, buffer.storage, sums);
    }
  }

  // The master's handler adds 1 to its buffer after each reply, the way EASGD moves its centre, so worker w is
  // answered with the master's inputs + (w - 1): the reply goes before the handler runs.
  const auto plus = [](std::vector<float> values, int added) {
    for (auto& value : values) value += static_cast<float>(added);
    return values;
  };
  for (const bool reply : {false, true}) {
    const int master = 0;
    TestBuffer buffer(comm, inputs(rank, count));
    std::vector<int> order;
    round_robin_gather(
        comm, master, buffer.floats(), reply,
        [&](int worker, std::span<const float> received) {
          order.push_back(worker);
          expect_values(comm, "round-robin gather from " + std::to_string(worker),
                        std::vector<float>(received.begin(), received.end()), inputs(worker, count));
          for (auto& value : buffer.storage) value += 1.0F;
        },
        next(Category::kCpuGpuPara));
    if (rank == master) {
      for (int worker = 1; worker < size; ++worker) {
        if (order.size() != static_cast<std::size_t>(size - 1) ||
            order[static_cast<std::size_t>(worker - 1)] != worker) {
          throw std::runtime_error("round-robin gather: workers not served in rank order");
        }
      }
    }
    if (rank == master) {
      expect_values(comm, "round-robin gather: the master's buffer after its handlers", buffer.storage,
                    plus(inputs(master, count), size - 1));
    } else {
      expect_values(comm, std::string("round-robin gather") + (reply ? " reply" : ""), buffer.storage,
                    reply ? plus(inputs(master, count), rank - 1) : inputs(rank, count));
    }
  }

  // Parameter server on rank 0; each worker pushes twice and gets back twice what it pushed. The reply is sent
  // from the server's own buffer, which after_reply then spoils: a worker seeing it was answered too late.
  if (size > 1) {
    constexpr int kRounds = 2;
    const CollectiveOptions options = next(Category::kCpuGpuPara);
    if (rank == 0) {
      std::vector<double> total(count, 0.0);
      TestBuffer answer(comm, std::vector<float>(count, 0.0F));
      const PushHandler handler{
          [&](int, std::span<const float> pushed) {
            for (std::size_t i = 0; i < pushed.size(); ++i) {
              total[i] += pushed[i];
              answer.storage[i] = 2 * pushed[i];
            }
            return answer.floats();
          },
          [&](int, std::span<const float>) { std::fill(answer.storage.begin(), answer.storage.end(), -1.0F); }};
      serve_parameter_server(comm, count, static_cast<std::size_t>(kRounds * (size - 1)), handler, options);
      if (comm.has_payload()) {
        for (std::size_t i = 0; i < count; ++i) {
          const double expected = kRounds * (static_cast<double>(sums[i]) - input_value(0, i));
          if (total[i] != expected) throw std::runtime_error("parameter server: pushes lost or duplicated");
        }
      }
    } else {
      for (int round = 0; round < kRounds; ++round) {
        TestBuffer push(comm, inputs(rank, count));
        TestBuffer pull(comm, std::vector<float>(count, 0.0F));
        parameter_server_exchange(comm, 0, push.floats(), pull.floats(), options);
        std::vector<float> twice = inputs(rank, count);
        for (auto& v : twice) v *= 2;
        expect_values(comm, "parameter server reply", pull.storage, twice);
      }
    }
  }
  check_group_collectives(comm, count);
}

// A stream (Comm::start_stream) beside its caller, as wait-free backpropagation uses one: the caller computes
// `parts` steps and posts after each; the stream takes each post and sums that part of a buffer with a ring
// allreduce of its own tag. The sums are exact, the stream's comm is its own of the same rank, and its
// communication is in the stream's breakdown. Returns what join() returned.
inline StreamResult check_stream(Comm& comm, std::size_t count, int parts) {
  const int size = comm.size();
  std::vector<float> sums(count);
  for (std::size_t i = 0; i < count; ++i) sums[i] = sum_value(size, i);
  TestBuffer buffer(comm, inputs(comm.rank(), count));
  float* data = buffer.floats().data;
  StreamPtr stream = comm.start_stream([&](Comm& own, StreamPosts& posts) {
    if (own.rank() != comm.rank() || own.size() != size || own.has_payload() != comm.has_payload()) {
      throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": the stream's comm is another rank's");
    }
    for (int part = 0; part < parts; ++part) {
      posts.take();
      const std::size_t begin = count * static_cast<std::size_t>(part) / static_cast<std::size_t>(parts);
      const std::size_t end = count * static_cast<std::size_t>(part + 1) / static_cast<std::size_t>(parts);
      allreduce(own, {data != nullptr ? data + begin : nullptr, end - begin}, AllreduceAlgorithm::kRing,
                {Category::kGpuGpuPara, kFirstCollectiveTag + 100 + part});
    }
  });
  for (int part = 0; part < parts; ++part) {
    ComputeStep step;
    step.flops = 1e6;
    comm.compute(step);
    stream->post();
  }
  const StreamResult joined = stream->join(Category::kGpuGpuPara);
  expect_values(comm, "allreduce on a stream", buffer.storage, sums);
  if (size > 1 && count > 0 && !(joined.stream[Category::kGpuGpuPara] > 0)) {
    throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": the stream's breakdown has no gpu-gpu para");
  }
  return joined;
}

}  // namespace dsgd::testing
