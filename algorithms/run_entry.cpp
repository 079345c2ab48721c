#include "algorithms/run_entry.hpp"

#include <cinttypes>
#include <cstdio>
#include <span>

#include "core/breakdown.hpp"

namespace dsgd::algorithms {

void add_staleness(reports::Entry& entry, const CountHistogram& staleness) {
  if (staleness.empty()) return;
  entry.counters["staleness_mean"] = staleness.mean();
  entry.counters["staleness_p99"] = static_cast<double>(staleness.quantile(0.99));
  entry.counters["staleness_max"] = static_cast<double>(staleness.max());
  entry.counters["pushes"] = static_cast<double>(staleness.total());
  reports::Curve histogram{"staleness_histogram", "staleness_updates", "pushes", {}};
  const auto& counts = staleness.counts();
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] > 0) histogram.points.emplace_back(static_cast<double>(k), static_cast<double>(counts[k]));
  }
  entry.curves.push_back(std::move(histogram));
}

reports::Entry to_entry(const RunOptions& run, const RunResult& result, const RunEntryContext& context) {
  const std::string& executor = context.executor;
  reports::Entry entry;
  entry.name = "run/" + run.algorithm + "/" + run.model + "/" + std::to_string(run.workers) + "workers/" + executor;
  entry.executor = executor;
  entry.fidelity = "measured";
  entry.algorithm = run.algorithm;
  entry.algorithm_options = {{"learning_rate", run.hyper.learning_rate},
                             {"momentum", run.hyper.momentum},
                             {"weight_decay", run.hyper.weight_decay},
                             {"rho", run.hyper.elastic_rho},
                             {"batch", run.hyper.batch},
                             {"period", run.hyper.period},
                             {"servers", run.hyper.servers},
                             {"staleness_bound", run.hyper.staleness_bound},
                             {"per_layer", run.hyper.per_layer},
                             {"bucket_bytes", run.hyper.bucket_bytes},
                             {"allreduce", std::string(to_string(run.hyper.allreduce))},
                             {"workers", run.workers},
                             {"threads_per_rank", run.threads_per_rank},
                             {"backend", run.backend},
                             {"global_batch", run.hyper.batch * run.workers},
                             {"lr_scaling", std::string(nn::lr_scaling_name(run.hyper.lr_scaling))},
                             {"reference_batch", run.hyper.reference_batch},
                             {"scaled_learning_rate", scaled_learning_rate(run.hyper, run.workers)},
                             {"warmup_iterations", run.hyper.warmup_iterations},
                             {"lars", run.hyper.lars},
                             {"lars_trust", run.hyper.lars_trust},
                             {"compression", std::string(to_string(run.hyper.compression))},
                             {"topk_ratio", run.hyper.topk_ratio},
                             {"loss_rate", run.hyper.datagrams.loss_rate},
                             {"chunk_floats", run.hyper.chunk_floats},
                             {"device_memory_bytes", static_cast<double>(run.hyper.device_memory_bytes)}};
  for (const auto& [name, value] : resolve_options(result.info, run.hyper.own)) {
    entry.algorithm_options[name] = value;
  }
  entry.model = run.model;
  entry.dataset = context.dataset;
  entry.ranks = result.ranks;
  entry.seed = run.hyper.seed;
  entry.iterations = result.iterations;
  entry.real_time = result.train_seconds;
  entry.cpu_time = result.train_seconds;
  entry.labels["stop_reason"] = result.stop_reason;
  if (run.budget.target_accuracy > 0) {
    entry.counters["target_accuracy"] = run.budget.target_accuracy;
    entry.labels["target_reached"] = result.time_to_target_s >= 0 ? "yes" : "no";
  }
  entry.labels["description"] = result.info.description;
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, result.parameters_hash);
  entry.labels["parameters_fnv1a"] = hash;
  if (!result.curve.empty()) {
    const auto& last = result.curve.back();
    entry.counters["test_accuracy"] = last.test_accuracy;
    entry.counters["test_loss"] = last.test_loss;
    entry.counters["train_loss"] = last.train_loss;
  }
  // An accuracy on part of the test set is not comparable with one on all of it.
  if (context.test_images > 0) entry.counters["test_images_at_most"] = static_cast<double>(context.test_images);
  entry.counters["images_per_second"] = result.images_per_second;
  if (result.time_to_target_s >= 0) entry.counters["time_to_target_s"] = result.time_to_target_s;
  // The breakdown of a worker (seed 000 Table 3 is per GPU): worker 0's rank; the master's, if any, apart. A
  // sharded server's ranks are 0..servers-1.
  const std::size_t servers = result.info.has_master ? static_cast<std::size_t>(run.hyper.servers) : 0;
  const std::size_t worker = servers;
  if (worker < result.per_rank.size()) reports::set_breakdown(entry, result.per_rank[worker]);
  if (worker < result.first_round_per_rank.size()) {
    const Breakdown& first = result.first_round_per_rank[worker];
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      if (first.seconds[i] > 0) entry.counters["first_round_s:" + std::string(kCategoryNames[i])] = first.seconds[i];
    }
  }
  if (result.info.has_master && !result.per_rank.empty()) {
    const Breakdown& master = result.per_rank[0];
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      if (master.seconds[i] > 0) entry.counters["master_" + std::string(kCategoryNames[i]) + "_s"] = master.seconds[i];
    }
  }
  // Seed 000 Table 3's shares, as the simulated studies compute them (core/breakdown.hpp).
  if (worker < result.per_rank.size()) {
    // With S servers the last server stands for the master: the servers update their shards side by side.
    const auto ranks = std::span<const Breakdown>(result.per_rank).subspan(servers > 1 ? servers - 1 : 0);
    const Table3Shares table3 = table3_shares(ranks, result.info.has_master);
    if (table3.busy_s > 0) {
      for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
        entry.counters["share:" + std::string(kCategoryNames[i])] = table3.shares.seconds[i];
      }
      entry.counters["comm_ratio"] = table3.comm_ratio;
      entry.counters["idle_share"] = table3.wait_s / (table3.busy_s + table3.wait_s);
    }
  }
  reports::Curve by_time{"test_accuracy", "time_s", "accuracy", {}};
  reports::Curve by_iteration{"test_accuracy_by_iteration", "iteration", "accuracy", {}};
  reports::Curve error_by_time{"test_error", "time_s", "error", {}};
  reports::Curve loss{"train_loss", "iteration", "loss", {}};
  for (const auto& point : result.curve) {
    by_time.points.emplace_back(point.seconds, point.test_accuracy);
    by_iteration.points.emplace_back(static_cast<double>(point.iterations), point.test_accuracy);
    error_by_time.points.emplace_back(point.seconds, 1.0 - point.test_accuracy);
    loss.points.emplace_back(static_cast<double>(point.iterations), point.train_loss);
  }
  entry.curves = {by_time, by_iteration, error_by_time, loss};
  add_staleness(entry, result.staleness);
  if (!result.clock_staleness.empty()) {
    // SSP's staleness in clocks (pushes behind the most advanced worker), bounded by --staleness-bound.
    entry.counters["clock_staleness_mean"] = result.clock_staleness.mean();
    entry.counters["clock_staleness_max"] = static_cast<double>(result.clock_staleness.max());
  }
  // Communication per iteration of the algorithms without a master: exposed (worker 0's gpu-gpu para: what it
  // waited for) and overlapped (what ran beside its backward pass: a stream's). docs/results-schema.md.
  if (!result.info.has_master && result.iterations > 0 && !result.per_rank.empty()) {
    const auto iterations = static_cast<double>(result.iterations);
    entry.counters["exposed_comm_s"] = result.per_rank[0][Category::kGpuGpuPara] / iterations;
    entry.counters["overlapped_comm_s"] = result.overlapped_comm_s / iterations;
  }
  add_bytes_sent(entry, result);
  for (const auto& [name, value] : result.counters) entry.counters[name] = value;
  if (const auto received = result.counters.find("datagrams_received"); received != result.counters.end()) {
    // Measured from the sequence gaps of every receiver (docs/dogwild.md "Measured loss").
    const double missing = result.counters.at("datagrams_missing");
    entry.counters["datagram_loss_measured"] =
        missing + received->second > 0 ? missing / (missing + received->second) : 0;
    // About 1 when every datagram has one receiver; multicast's go to P - 1 (docs/dogwild.md "Multicast").
    if (received->second > 0) {
      entry.counters["datagrams_sent_per_received"] = result.counters.at("datagrams_sent") / received->second;
    }
  }
  if (const auto passes = result.counters.find("weight_passes_received");
      passes != result.counters.end() && entry.ranks > 0 && entry.real_time > 0) {
    // How often a slave had every other master's weights, on average: Dogwild's sync rate.
    entry.counters["weight_passes_per_slave_s"] = passes->second / static_cast<double>(entry.ranks) / entry.real_time;
  }
  return entry;
}

void add_bytes_sent(reports::Entry& entry, const RunResult& result) {
  if (const auto bytes = bytes_sent_per_iteration(result)) entry.counters["bytes_sent_per_iteration"] = *bytes;
  if (const auto bytes = bytes_sent_per_iteration(result, /*master=*/true)) {
    entry.counters["master_bytes_sent_per_iteration"] = *bytes;
  }
}

}  // namespace dsgd::algorithms
