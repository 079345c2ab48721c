#pragma once
// Training dsgd's small GPT natively on a byte-level text corpus with 3-D parallelism (algorithms/parallel_gpt.hpp):
// the tokens each rank draws, the loss curve and the run's results entry (docs/transformers.md "Training natively").

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/parallel_gpt.hpp"
#include "core/data/text_corpus.hpp"
#include "core/world.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms {

struct GptTrainingPoint {
  std::int64_t iteration = 0;  // from 1
  double time_s = 0;           // since the world started
  double loss = 0;             // mean cross-entropy in nats per byte over the iteration's micro-batches
};

// The sequences of micro-batch `micro_batch` of replica `replica` in `iteration`, drawn from the training part of
// the corpus at offsets from a counter of (seed, iteration, replica, micro-batch, sequence): every rank that asks
// gets the same bytes.
TokenSource corpus_tokens(const data::TextCorpus& corpus, std::int64_t sequence, std::uint64_t seed);

// What every rank runs: run_parallel_gpt on the corpus; `progress` gets each iteration's loss from the one rank
// that reports it (the last stage's first tensor-parallel rank of replica 0).
WorkerFunction gpt_training_worker(const ParallelGptOptions& options, const data::TextCorpus& corpus,
                                   std::function<void(const GptTrainingPoint&)> progress);

struct GptTrainingOutcome {
  ParallelGptOptions options;
  std::string executor;
  std::string corpus;
  std::size_t corpus_bytes = 0;
  std::vector<GptTrainingPoint> losses;
  double wall_s = 0;
  // The mean of the last (up to) ten iterations' losses: one iteration's is noisy.
  double final_loss() const;
};

reports::Entry to_entry(const GptTrainingOutcome& outcome);

}  // namespace dsgd::algorithms
