#include "simulate/transformer_study.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/format.hpp"
#include "simulate/study_entries.hpp"

namespace dsgd::simulate {

ParallelLayout layout_of(const algorithms::TransformerStudyRow& row) {
  ParallelLayout layout;
  layout.tensor_parallel = row.tensor_parallel;
  layout.pipeline_parallel = row.pipeline_parallel;
  layout.data_parallel = row.gpus / (row.tensor_parallel * row.pipeline_parallel);
  layout.micro_batch = row.micro_batch;
  layout.global_batch = row.global_batch;
  layout.virtual_stages = row.virtual_stages;
  layout.schedule = row.virtual_stages > 1 ? algorithms::PipelineSchedule::kInterleaved
                                           : algorithms::PipelineSchedule::kOneForwardOneBackward;
  layout.recomputation = Recomputation::kFull;
  layout.overlap_gradient_reduction = row.overlap_gradient_reduction;
  return layout;
}

namespace {

platforms::Platform with_efficiency(platforms::Platform platform, double efficiency) {
  platform.nodes.devices.front().kernels->efficiency = efficiency;
  return platform;
}

// The efficiency at which `row` runs at its published rate: the rate rises with the efficiency, so bisect.
double fit_efficiency(const algorithms::TransformerStudyRow& row, const platforms::Platform& platform) {
  const TransformerSpec model = build_transformer(row.model);
  const ParallelLayout layout = layout_of(row);
  const auto below_published = [&](double efficiency) {
    return predict_transformer(model, layout, with_efficiency(platform, efficiency)).tflops_per_gpu <
           row.published_tflops_per_gpu;
  };
  double low = 1e-3;
  double high = 1;
  if (below_published(high)) {
    throw InputError(row.model + " cannot reach its published " + significant(row.published_tflops_per_gpu) +
                     " TFLOP/s per GPU on " + platform.name + " even at efficiency 1");
  }
  for (int step = 0; step < 60; ++step) {
    const double middle = (low + high) / 2;
    (below_published(middle) ? low : high) = middle;
  }
  return (low + high) / 2;
}

}  // namespace

TransformerStudyOutcome run_transformer_study(const algorithms::TransformerStudy& study,
                                              const platforms::Platform& platform) {
  const auto start = std::chrono::steady_clock::now();
  if (platform.nodes.devices.empty() || !platform.nodes.devices.front().kernels) {
    throw InputError(study.name + ": " + platform.name + "'s devices do not describe how they run kernels");
  }
  TransformerStudyOutcome outcome;
  outcome.study = study.name;
  outcome.platform = platform.name;
  outcome.device = platform.nodes.devices.front().model;
  const auto& fitted_row = study.rows.at(study.fitted);
  outcome.efficiency = fit_efficiency(fitted_row, platform);
  outcome.fitted_on = fitted_row.model;
  const platforms::Platform fitted = with_efficiency(platform, outcome.efficiency);
  double sum = 0;
  int predicted = 0;
  for (std::size_t i = 0; i < study.rows.size(); ++i) {
    TransformerStudyPoint point;
    point.row = study.rows[i];
    point.layout = layout_of(point.row);
    point.prediction = predict_transformer(build_transformer(point.row.model), point.layout, fitted);
    point.determined = i == study.fitted ? Determined::kFitted : Determined::kPredicted;
    point.difference_percent = 100 * (point.prediction.tflops_per_gpu / point.row.published_tflops_per_gpu - 1);
    if (point.determined == Determined::kPredicted) {
      sum += std::abs(point.difference_percent);
      ++predicted;
      outcome.max_abs_difference_percent =
          std::max(outcome.max_abs_difference_percent, std::abs(point.difference_percent));
    }
    outcome.points.push_back(point);
  }
  outcome.mean_abs_difference_percent = predicted > 0 ? sum / predicted : 0;
  outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

std::string format_transformer_study(const TransformerStudyOutcome& outcome,
                                     const algorithms::TransformerStudy& study) {
  std::string text = study.description + "\nsource: " + study.source + "\nplatform: " + outcome.platform + " (" +
                     outcome.device + ")\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-11s %4s %4s %4s %5s %4s %6s %3s %9s %9s %6s %8s %8s %9s  %s\n", "model", "tp",
                "pp", "dp", "GPUs", "mb", "batch", "v", "iter s", "bubble", "MFU", "TFLOP/s", "paper", "diff",
                "determined");
  text += line;
  for (const auto& point : outcome.points) {
    const auto& p = point.prediction;
    std::snprintf(line, sizeof line,
                  "%-11s %4d %4d %4d %5d %4lld %6lld %3d %9.2f %8.1f%% %5.1f%% %8.1f %8.0f %+8.1f%%  %s\n",
                  point.row.model.c_str(), point.layout.tensor_parallel, point.layout.pipeline_parallel,
                  point.layout.data_parallel, point.row.gpus, static_cast<long long>(point.row.micro_batch),
                  static_cast<long long>(point.row.global_batch), point.row.virtual_stages, p.iteration_s,
                  100 * p.bubble_fraction, 100 * p.mfu, p.tflops_per_gpu, point.row.published_tflops_per_gpu,
                  point.difference_percent, std::string(to_string(point.determined)).c_str());
    text += line;
  }
  const auto& first = outcome.points.front().prediction.tflops_per_gpu;
  const auto& last = outcome.points.back().prediction.tflops_per_gpu;
  text += "\nFITTED: the device's kernel efficiency " + fixed(outcome.efficiency, 4) + " on the " + outcome.fitted_on +
          " row; every other row predicted\n";
  text +=
      "predicted rows: mean |difference| " + fixed(outcome.mean_abs_difference_percent, 2) + "%, largest " +
      fixed(outcome.max_abs_difference_percent, 2) + "%; last row against first " + fixed(last / first, 3) +
      "x (paper " +
      fixed(outcome.points.back().row.published_tflops_per_gpu / outcome.points.front().row.published_tflops_per_gpu,
            3) +
      "x); " + fixed(outcome.wall_s, 2) + " s of wall time\n";
  for (const auto& note : study.notes) text += "assumed: " + note + "\n";
  return text;
}

reports::Entry to_entry(std::string name, const TransformerSpec& model, const ParallelLayout& layout,
                        const std::string& platform, const TransformerPrediction& p) {
  reports::Entry entry = study_entry(std::move(name), "transformer", "point");
  entry.fidelity = "analytic";
  entry.platform = platform;
  entry.model = model.name;
  entry.ranks = layout.gpus();
  entry.real_time = p.iteration_s;
  entry.labels["device"] = p.device;
  entry.labels["layout"] = describe(layout);
  entry.counters["gpus"] = layout.gpus();
  entry.counters["tensor_parallel"] = layout.tensor_parallel;
  entry.counters["pipeline_parallel"] = layout.pipeline_parallel;
  entry.counters["data_parallel"] = layout.data_parallel;
  entry.counters["micro_batch"] = static_cast<double>(layout.micro_batch);
  entry.counters["global_batch"] = static_cast<double>(layout.global_batch);
  entry.counters["virtual_stages"] = layout.virtual_stages;
  entry.counters["zero_stage"] = layout.zero_stage;
  entry.counters["seconds_per_iteration"] = p.iteration_s;
  entry.counters["tflops_per_gpu"] = p.tflops_per_gpu;
  entry.counters["mfu"] = p.mfu;
  entry.counters["bubble_fraction"] = p.bubble_fraction;
  entry.counters["pipeline_s"] = p.pipeline_s;
  entry.counters["data_parallel_exposed_s"] = p.data_parallel_exposed_s;
  entry.counters["optimizer_s"] = p.optimizer_s;
  entry.counters["tensor_parallel_s_per_block"] = p.tensor_parallel_s;
  double peak_memory = 0;
  for (const auto& stage : p.memory) peak_memory = std::max(peak_memory, stage.total());
  entry.counters["peak_memory_bytes"] = peak_memory;
  entry.counters["device_memory_bytes"] = p.device_memory_bytes;
  return entry;
}

std::vector<reports::Entry> to_entries(const TransformerStudyOutcome& outcome) {
  std::vector<reports::Entry> entries;
  for (const auto& point : outcome.points) {
    reports::Entry entry =
        to_entry("study/" + outcome.study + "/" + point.row.model, build_transformer(point.row.model), point.layout,
                 outcome.platform, point.prediction);
    entry.labels["study"] = outcome.study;
    entry.labels["determined"] = std::string(to_string(point.determined));
    entry.counters["row"] = static_cast<double>(entries.size() + 1);  // the table's order
    entry.counters["published_tflops_per_gpu"] = point.row.published_tflops_per_gpu;
    entry.counters["difference_percent"] = point.difference_percent;
    entries.push_back(std::move(entry));
  }
  reports::Entry fitted = study_entry("study/" + outcome.study + "/fitted/efficiency", outcome.study, "fitted");
  fitted.platform = outcome.platform;
  fitted.counters["efficiency"] = outcome.efficiency;
  fitted.counters["mean_abs_difference_percent"] = outcome.mean_abs_difference_percent;
  fitted.counters["max_abs_difference_percent"] = outcome.max_abs_difference_percent;
  fitted.counters["wall_s"] = outcome.wall_s;
  fitted.labels["fitted_on"] = outcome.fitted_on;
  entries.push_back(std::move(fitted));
  return entries;
}

}  // namespace dsgd::simulate
