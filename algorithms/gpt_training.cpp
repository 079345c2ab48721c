#include "algorithms/gpt_training.hpp"

#include <algorithm>

#include "core/splitmix.hpp"

namespace dsgd::algorithms {

TokenSource corpus_tokens(const data::TextCorpus& corpus, std::int64_t sequence, std::uint64_t seed) {
  return [&corpus, sequence, seed](std::int64_t iteration, int replica, int micro_batch, std::span<std::int32_t> ids,
                                   std::span<std::int32_t> targets) {
    const auto length = static_cast<std::size_t>(sequence);
    for (std::size_t start = 0, index = 0; start < ids.size(); start += length, ++index) {
      std::uint64_t key = splitmix64(seed);
      for (const std::uint64_t part : {static_cast<std::uint64_t>(iteration), static_cast<std::uint64_t>(replica),
                                       static_cast<std::uint64_t>(micro_batch), static_cast<std::uint64_t>(index)}) {
        key = splitmix64(key ^ part);
      }
      data::sample_text(corpus, false, key, ids.subspan(start, length), targets.subspan(start, length));
    }
  };
}

WorkerFunction gpt_training_worker(const ParallelGptOptions& options, const data::TextCorpus& corpus,
                                   std::function<void(const GptTrainingPoint&)> progress) {
  return [options, &corpus, progress = std::move(progress)](Comm& comm) {
    const int reporter = grid_rank(options.grid, {0, options.grid.pp - 1, 0});
    ParallelGptHooks hooks;
    if (comm.rank() == reporter && progress) {
      hooks.on_iteration = [&progress](const ParallelGptProgress& step) {
        progress({step.iteration + 1, step.time_s, step.loss});
      };
    }
    run_parallel_gpt(comm, options, corpus_tokens(corpus, options.model.sequence, options.seed), hooks);
  };
}

double GptTrainingOutcome::final_loss() const {
  if (losses.empty()) return 0;
  const std::size_t count = std::min<std::size_t>(10, losses.size());
  double sum = 0;
  for (std::size_t i = losses.size() - count; i < losses.size(); ++i) sum += losses[i].loss;
  return sum / static_cast<double>(count);
}

reports::Entry to_entry(const GptTrainingOutcome& outcome) {
  const auto& o = outcome.options;
  reports::Entry entry;
  entry.name = "train-gpt/" + o.model.name + "/tp" + std::to_string(o.grid.tp) + "-pp" + std::to_string(o.grid.pp) +
               "-dp" + std::to_string(o.grid.dp);
  entry.executor = outcome.executor;
  entry.fidelity = "measured";
  entry.model = o.model.name;
  entry.dataset = outcome.corpus;
  entry.ranks = o.grid.size();
  entry.seed = o.seed;
  entry.real_time = outcome.wall_s;
  entry.labels["schedule"] = std::string(to_string(o.schedule));
  entry.counters["tensor_parallel"] = o.grid.tp;
  entry.counters["pipeline_parallel"] = o.grid.pp;
  entry.counters["data_parallel"] = o.grid.dp;
  entry.counters["micro_batch"] = static_cast<double>(o.micro_batch);
  entry.counters["micro_batches"] = o.micro_batches;
  entry.counters["zero_stage"] = o.zero_stage;
  entry.counters["steps"] = static_cast<double>(outcome.losses.size());
  entry.counters["corpus_bytes"] = static_cast<double>(outcome.corpus_bytes);
  entry.counters["first_loss"] = outcome.losses.empty() ? 0 : outcome.losses.front().loss;
  entry.counters["final_loss"] = outcome.final_loss();
  const double tokens = static_cast<double>(outcome.losses.size()) * static_cast<double>(o.micro_batch) *
                        o.micro_batches * o.grid.dp * static_cast<double>(o.model.sequence);
  entry.counters["tokens_per_second"] = outcome.wall_s > 0 ? tokens / outcome.wall_s : 0;
  reports::Curve curve{"loss", "time_s", "loss_nats_per_byte", {}};
  for (const auto& point : outcome.losses) curve.points.emplace_back(point.time_s, point.loss);
  entry.curves.push_back(std::move(curve));
  return entry;
}

}  // namespace dsgd::algorithms
