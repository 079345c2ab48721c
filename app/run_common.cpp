#include "app/run_common.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>

#include "algorithms/run_entry.hpp"
#include "core/data/catalog.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "measure/host_info.hpp"

namespace dsgd::app {

reports::Results new_results(const std::string& command_line) {
  reports::Results results;
  results.provenance = reports::current_provenance(command_line);
  std::error_code ec;
  results.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  results.num_cpus = measure::cpu_info().logical_cores;
  return results;
}

algorithms::RunData load_run_data(const RunCli& cli) {
  const ModelSpec model = build_model(cli.run.model);
  auto data = data::load_normalized(cli.dataset);
  const Shape input{data.train.channels, data.train.height, data.train.width};
  if (!(input == model.input) || data.train.classes > model.classes) {
    throw InputError("run: model '" + cli.run.model + "' does not take the images or classes of dataset '" +
                     cli.dataset + "'");
  }
  if (cli.test_images < 0) {
    throw InputError("run: --test-images must be >= 0 (0: all), not " + std::to_string(cli.test_images));
  }
  if (cli.test_images > 0 && static_cast<std::size_t>(cli.test_images) < data.test.size()) {
    const auto images = static_cast<std::size_t>(cli.test_images);
    data.test.images.resize(images * data.test.image_size());
    data.test.labels.resize(images);
  }
  algorithms::RunData run_data;
  run_data.train = std::make_shared<const data::Dataset>(std::move(data.train));
  run_data.test = std::make_shared<const data::Dataset>(std::move(data.test));
  return run_data;
}

reports::Entry run_entry(const RunCli& cli, const algorithms::RunResult& result, const std::string& executor) {
  return algorithms::to_entry(cli.run, result, {executor, cli.dataset, cli.test_images});
}

std::string progress_line(const algorithms::RunPoint& point) {
  char line[200];
  std::snprintf(line, sizeof line,
                "  iteration %6lld  %8.0f images  %7.1f s  train loss %.4f  test loss %.4f  test accuracy %.4f\n",
                static_cast<long long>(point.iterations), point.images, point.seconds, point.train_loss,
                point.test_loss, point.test_accuracy);
  return line;
}

std::string run_summary(const RunCli& cli, const reports::Entry& entry) {
  std::string text;
  char line[400];
  const auto counter = [&](const char* name) {
    const auto found = entry.counters.find(name);
    return found == entry.counters.end() ? 0.0 : found->second;
  };
  std::snprintf(line, sizeof line,
                "%s, %d workers on %s (%lld ranks): test accuracy %.4f after %lld iterations per worker, %.1f s of "
                "training, %.0f images/s; stopped by %s\n",
                cli.run.algorithm.c_str(), cli.run.workers, entry.executor.c_str(), static_cast<long long>(entry.ranks),
                counter("test_accuracy"), static_cast<long long>(entry.iterations), entry.real_time,
                counter("images_per_second"), entry.labels.at("stop_reason").c_str());
  text += line;
  if (cli.run.budget.target_accuracy > 0 && entry.labels.at("stop_reason") != "target accuracy") {
    std::snprintf(line, sizeof line, "target accuracy %.4g not reached within the budget (stopped by %s)\n",
                  cli.run.budget.target_accuracy, entry.labels.at("stop_reason").c_str());
    text += line;
  }
  if (const auto found = entry.counters.find("bytes_sent_per_iteration"); found != entry.counters.end()) {
    std::snprintf(line, sizeof line, "bytes sent per iteration per worker: %.0f", found->second);
    text += line;
    if (const auto master = entry.counters.find("master_bytes_sent_per_iteration"); master != entry.counters.end()) {
      std::snprintf(line, sizeof line, " (master: %.0f)", master->second);
      text += line;
    }
    text += "\n";
  }
  if (entry.counters.contains("datagram_loss_measured")) {
    std::snprintf(line, sizeof line,
                  "datagrams: %.0f sent, %.0f received, measured loss %.2f%% (%.0f missing; %.0f dropped by the loss "
                  "model, %.0f by full receive buffers, %.0f refused); %.0f sends refused by a full send buffer\n",
                  counter("datagrams_sent"), counter("datagrams_received"), 100 * counter("datagram_loss_measured"),
                  counter("datagrams_missing"), counter("datagrams_injected_drops"),
                  counter("datagrams_receiver_drops"), counter("datagrams_refused"),
                  counter("datagrams_send_refusals"));
    text += line;
    // The refusals by cause (docs/dogwild.md "Refused datagrams"), where there were any.
    std::string causes;
    const std::string prefix = "datagrams_refused_";
    for (const auto& [name, count] : entry.counters) {
      if (name.starts_with(prefix) && count > 0) {
        causes += (causes.empty() ? "" : ", ") + name.substr(prefix.size()) + " " + std::to_string(std::llround(count));
      }
    }
    if (!causes.empty()) text += "datagrams refused by cause: " + causes + "\n";
  }
  if (entry.counters.contains("weight_passes_per_slave_s")) {
    std::snprintf(line, sizeof line, "sync rate: each slave had every other master's weights %.2f times per second\n",
                  counter("weight_passes_per_slave_s"));
    text += line;
  }
  if (counter("multicast_ranks") > 0) {
    std::snprintf(line, sizeof line,
                  "multicast: %.0f of %.0f ranks sent each chunk once for all their slaves; elsewhere the transport "
                  "emulated it as one send per slave (docs/dogwild.md \"Multicast\")\n",
                  counter("multicast_once_ranks"), counter("multicast_ranks"));
    text += line;
  }
  double total = 0;
  for (const auto& [category, seconds] : entry.breakdown_s) total += seconds;
  if (entry.counters.contains("exposed_comm_s")) {
    std::snprintf(line, sizeof line, "communication per iteration: exposed %.4g s, overlapped %.4g s\n",
                  counter("exposed_comm_s"), counter("overlapped_comm_s"));
    text += line;
  }
  text += "worker 0 time breakdown:";
  for (const auto& [category, seconds] : entry.breakdown_s) {
    std::snprintf(line, sizeof line, " %s %.2f s (%.0f%%);", category.c_str(), seconds,
                  total > 0 ? 100 * seconds / total : 0.0);
    text += line;
  }
  text += "\n";
  return text;
}

}  // namespace dsgd::app
