#include "app/simulate_transformer.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "core/format.hpp"
#include "platforms/catalog.hpp"
#include "simulate/transformer_study.hpp"

namespace dsgd::app {

namespace {

// The help section of the transformer options, by which they are also found again (given_transformer_option).
constexpr const char* kTransformerOptions = "Transformers (--model gpt-..., llama2-..., bert-...)";

std::string gib(double bytes) { return fixed(bytes / (1024.0 * 1024.0 * 1024.0), 2); }

void print_prediction(std::ostream& out, const TransformerSpec& model, const simulate::ParallelLayout& layout,
                      const simulate::TransformerPrediction& p) {
  out << model.name << ": " << model.description << "\n"
      << simulate::describe(layout) << " on " << layout.gpus() << " x " << p.device << "\n\n";
  char line[256];
  const auto row = [&](const char* what, double seconds, const std::string& note) {
    std::snprintf(line, sizeof line, "  %-44s %12.4f s  %s\n", what, seconds, note.c_str());
    out << line;
  };
  row("block forward, one micro-batch (kernels)", p.block_forward_s, "");
  row("block backward", p.block_backward_s,
      "forward and backward: " + fixed(100 * p.block_streaming_s / (p.block_forward_s + p.block_backward_s), 1) +
          "% in streaming kernels");
  row("block recomputation", p.block_recompute_s, "");
  row("block tensor-parallel collectives (all passes)", p.tensor_parallel_s, "");
  row("activation to the next stage", p.p2p_s, "");
  row("pipeline (schedule played out)", p.pipeline_s, "bubble " + fixed(100 * p.bubble_fraction, 1) + "%");
  row("gradient reduction (data parallel)", p.data_parallel_s,
      "exposed " + significant(p.data_parallel_exposed_s) + " s");
  row("optimizer step", p.optimizer_s, "");
  row("iteration", p.iteration_s, "");
  out << "\n  " << fixed(p.tflops_per_gpu, 1) << " TFLOP/s per GPU (model FLOPs " << significant(p.model_flops)
      << " per iteration, recomputation included), MFU " << fixed(100 * p.mfu, 1) << "%\n\n";
  out << "  memory per GPU (GiB)     weights  gradients  optimizer  activations  in flight     total\n";
  for (const auto& stage : p.memory) {
    if (p.memory.size() > 4 && stage.stage != 0 && stage.stage != static_cast<int>(p.memory.size()) - 1) continue;
    std::snprintf(line, sizeof line, "  stage %-17d %8s %10s %10s %12s %10d %9s\n", stage.stage,
                  gib(stage.weights).c_str(), gib(stage.gradients).c_str(), gib(stage.optimizer).c_str(),
                  gib(stage.activations).c_str(), stage.in_flight, gib(stage.total()).c_str());
    out << line;
  }
  if (p.memory.size() > 4) out << "  (stages 1 to " << p.memory.size() - 2 << " as stage 0 less the embedding)\n";
  out << "  device memory: " << gib(p.device_memory_bytes) << " GiB\n";
}

}  // namespace

void add_transformer_options(CLI::App& simulate, TransformerCommandOptions& options) {
  auto& layout = options.layout;
  simulate.add_option("--tp", layout.tensor_parallel, "tensor-parallel ranks (inside a node first)")
      ->group(kTransformerOptions);
  simulate.add_option("--pp", layout.pipeline_parallel, "pipeline stages")->group(kTransformerOptions);
  simulate.add_option("--dp", layout.data_parallel, "data-parallel replicas")->group(kTransformerOptions);
  simulate.add_option("--micro-batch", layout.micro_batch, "sequences per micro-batch")->group(kTransformerOptions);
  simulate
      .add_option("--global-batch", layout.global_batch,
                  "sequences per iteration (default: one micro-batch per replica)")
      ->group(kTransformerOptions);
  simulate
      .add_option("--virtual-stages", layout.virtual_stages, "model chunks per pipeline stage (interleaved schedule)")
      ->group(kTransformerOptions);
  simulate.add_option("--schedule", options.schedule, "gpipe, 1f1b or interleaved")->group(kTransformerOptions);
  simulate.add_option("--zero", layout.zero_stage, "ZeRO stage 0-3 (sharded data parallelism)")
      ->group(kTransformerOptions);
  simulate.add_option("--recompute", options.recompute, "activation recomputation none|selective|full")
      ->group(kTransformerOptions);
  simulate.add_flag("--sequence-parallel", layout.sequence_parallel, "split norms and dropouts along the sequence")
      ->group(kTransformerOptions);
  simulate
      .add_flag("--overlap-grad-reduce", layout.overlap_gradient_reduction,
                "reduce gradient buckets during the backward pass (PyTorch DDP)")
      ->group(kTransformerOptions);
}

std::string given_transformer_option(const CLI::App& simulate) {
  for (const CLI::Option* option : simulate.get_options()) {
    if (option->get_group() == kTransformerOptions && option->count() > 0) return option->get_lnames().front();
  }
  return "";
}

void run_transformer_simulation(Context& context, const std::string& model_name, const std::string& platform_name,
                                TransformerCommandOptions options, const std::string& results) {
  const TransformerSpec model = build_transformer(model_name);
  const auto platform = platforms::load_platform(platform_name);
  auto& layout = options.layout;
  layout.schedule = algorithms::pipeline_schedule_from_string(options.schedule);
  layout.recomputation = recomputation_from_string(options.recompute);
  if (layout.global_batch == 0) layout.global_batch = layout.micro_batch * layout.data_parallel;
  if (layout.virtual_stages > 1 && layout.schedule != algorithms::PipelineSchedule::kInterleaved) {
    throw InputError("simulate: --virtual-stages " + std::to_string(layout.virtual_stages) +
                     " needs --schedule interleaved");
  }
  const auto prediction = simulate::predict_transformer(model, layout, platform);
  print_prediction(context.out, model, layout, prediction);
  if (results.empty()) return;
  auto document = new_results(context);
  document.benchmarks.push_back(simulate::to_entry("simulate/" + model.name, model, layout, platform.name, prediction));
  reports::write_results(results, document);
}

bool is_transformer_study(const std::string& study) {
  const auto& catalog = algorithms::transformer_study_catalog();
  return std::any_of(catalog.begin(), catalog.end(), [&](const auto& entry) { return entry.name == study; });
}

void run_transformer_study(Context& context, const std::string& name, const std::string& results) {
  const auto& catalog = algorithms::transformer_study_catalog();
  const auto& study =
      *std::find_if(catalog.begin(), catalog.end(), [&](const auto& entry) { return entry.name == name; });
  const auto outcome = simulate::run_transformer_study(study, platforms::load_platform(study.platform));
  context.out << simulate::format_transformer_study(outcome, study);
  if (results.empty()) return;
  auto document = new_results(context);
  document.benchmarks = simulate::to_entries(outcome);
  reports::write_results(results, document);
}

}  // namespace dsgd::app
