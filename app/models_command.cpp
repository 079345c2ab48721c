// `dsgd models`: the model zoo as a table (or results file), and one model layer by layer.
#include <iomanip>
#include <sstream>

#include "app/commands.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/transformer.hpp"
#include "reports/model_entry.hpp"
#include "reports/table.hpp"

namespace dsgd::app {

namespace {

void print_layers(std::ostream& out, const ModelSpec& model) {
  reports::Table table;
  table.title = model.name + ": " + model.description;
  using reports::Align;
  table.columns = {{"layer", Align::kLeft},
                   {"kind", Align::kLeft},
                   {"input", Align::kLeft},
                   {"output", Align::kLeft},
                   {"kernel/stride/pad", Align::kLeft},
                   {"parameters", Align::kRight},
                   {"MFLOP", Align::kRight},
                   {"activation KB", Align::kRight}};
  for (const auto& layer : model.layers) {
    std::string geometry;
    if (layer.kernel_h > 0) {
      geometry = std::to_string(layer.kernel_h) + "×" + std::to_string(layer.kernel_w) + "/" +
                 std::to_string(layer.stride) + "/" + std::to_string(layer.pad_h);
      if (layer.pad_w != layer.pad_h) geometry += "×" + std::to_string(layer.pad_w);
      if (layer.groups > 1) geometry += " g" + std::to_string(layer.groups);
    }
    table.add_row({layer.name, std::string(to_string(layer.kind)), to_string(layer.input), to_string(layer.output),
                   geometry, std::to_string(layer.parameters), fixed(layer.forward_flops * 1e-6, 2),
                   fixed(static_cast<double>(layer.activation_bytes) / 1e3, 1)});
  }
  table.notes.push_back("total: " + std::to_string(model.parameters()) + " parameters, " +
                        fixed(model.forward_flops() * 1e-9, 3) + " GFLOP forward per image (multiply-add = 2)");
  out << reports::to_text(table);
}

std::string megabytes(double bytes) { return fixed(bytes / 1e6, 1); }

// A transformer layer by layer for one sequence on one rank, then one block's kernels (forward passes).
void print_transformer(std::ostream& out, const TransformerSpec& model) {
  reports::Table layers;
  layers.title = model.name + ": " + model.description;
  using reports::Align;
  layers.columns = {{"layer", Align::kLeft},
                    {"parameters", Align::kRight},
                    {"GFLOP forward", Align::kRight},
                    {"activation MB (none / selective / full)", Align::kRight}};
  const auto forward_flops = [](const std::vector<LayerKernel>& kernels) {
    double flops = 0;
    for (const auto& kernel : kernels) flops += kernel.pass == KernelPass::kForward ? kernel.flops : 0;
    return flops;
  };
  const double embedding_flops = forward_flops(transformer_embedding_kernels(model, 1, 1));
  layers.add_row({"embedding (" + std::string(to_string(model.position)) + " positions)",
                  std::to_string(model.embedding_parameters()), fixed(embedding_flops * 1e-9, 3), ""});
  const double block_flops = forward_flops(transformer_block_kernels(model, 1, 1));
  const std::string activations = megabytes(block_activation_bytes(model, 1, 1, Recomputation::kNone)) + " / " +
                                  megabytes(block_activation_bytes(model, 1, 1, Recomputation::kSelective)) + " / " +
                                  megabytes(block_activation_bytes(model, 1, 1, Recomputation::kFull));
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    layers.add_row({"block " + std::to_string(layer) + " (" + std::string(to_string(model.norm)) + ", " +
                        std::string(to_string(model.mlp)) + ")",
                    std::to_string(model.layer_parameters()), fixed(block_flops * 1e-9, 3), activations});
  }
  layers.add_row({model.tied_embeddings ? "head (tied to the embedding)" : "head", "",
                  fixed(forward_flops(transformer_head_kernels(model, 1, 1)) * 1e-9, 3), ""});
  layers.notes.push_back("one sequence of " + std::to_string(model.sequence) + " tokens, vocabulary " +
                         std::to_string(model.vocabulary) + ", " + std::to_string(model.heads) + " heads (" +
                         std::to_string(model.kv_heads) + " key/value) of " + std::to_string(model.head_dim()) +
                         ", MLP width " + std::to_string(model.ffn_hidden));
  layers.notes.push_back("total: " + std::to_string(model.parameters()) + " parameters; an iteration of one sequence " +
                         fixed(transformer_iteration_flops(model, 1, false) * 1e-9, 2) + " GFLOP (" +
                         fixed(transformer_iteration_flops(model, 1, true) * 1e-9, 2) +
                         " with full recomputation); published: " + model.published_source);
  out << reports::to_text(layers) << '\n';

  reports::Table kernels;
  kernels.title = "one block's forward kernels, one sequence, one tensor-parallel rank";
  kernels.columns = {{"kernel", Align::kLeft},
                     {"GEMM m x n x k (x count)", Align::kLeft},
                     {"GFLOP", Align::kRight},
                     {"MB moved", Align::kRight}};
  for (const auto& kernel : transformer_block_kernels(model, 1, 1)) {
    if (kernel.pass != KernelPass::kForward) continue;
    std::string shape;
    if (kernel.gemm) {
      shape = std::to_string(kernel.gemm->m) + " x " + std::to_string(kernel.gemm->n) + " x " +
              std::to_string(kernel.gemm->k);
      if (kernel.gemm->count > 1) shape += " (x " + std::to_string(kernel.gemm->count) + ")";
    }
    kernels.add_row({kernel.layer_name, shape, fixed(kernel.flops * 1e-9, 3), megabytes(kernel.bytes)});
  }
  kernels.notes.push_back("each kernel's backward follows (docs/models.md \"Transformers\"); `dsgd simulate --model " +
                          model.name + " --tp T ...` prices them on a platform");
  out << reports::to_text(kernels);
}

}  // namespace

void register_models_command(CLI::App& app, Context& context) {
  auto* models =
      app.add_subcommand("models", "The model zoo: parameters, sizes, FLOPs, computation/communication ratio");
  auto results_path = std::make_shared<std::string>();
  auto with_sources = std::make_shared<bool>(false);
  models->add_option("--results", *results_path, "Also write the table as a results file (JSON) here")
      ->check(output_file_check());
  models->add_flag("--sources", *with_sources, "Print where each published figure comes from");

  auto* show = models->add_subcommand("show", "One model layer by layer");
  auto name = std::make_shared<std::string>();
  show->add_option("name", *name, "Model name (see `dsgd models`)")->required();
  show->callback([&context, name] {
    if (is_transformer(*name)) {
      print_transformer(context.out, build_transformer(*name));
    } else {
      print_layers(context.out, build_model(*name));
    }
  });

  models->callback([&context, models, results_path, with_sources] {
    if (models->got_subcommand("show")) return;
    auto results = new_results(context);
    for (const auto& model_name : model_names())
      results.benchmarks.push_back(reports::to_entry(build_model(model_name)));
    if (!results_path->empty()) reports::write_results(*results_path, results);
    print_manifest_table(context.out, "models", "totals", results);
    if (*with_sources) {
      context.out << "\nPublished figures:\n";
      for (const auto& entry : results.benchmarks) {
        context.out << "  " << entry.name << ": " << entry.labels.at("published_source") << '\n';
      }
    }
  });
}

}  // namespace dsgd::app
