// `dsgd models`: the model zoo as a table (or results file), and one model layer by layer.
#include <iomanip>
#include <sstream>

#include "app/commands.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
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
  show->callback([&context, name] { print_layers(context.out, build_model(*name)); });

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
