// `dsgd platforms`: the platform catalog as a table (or results file); `dsgd platforms show NAME|FILE` prints one
// entry (a file is validated first, so `show` doubles as a checker for user-written platforms); `dsgd platforms new`
// writes a commented file to edit, started from a catalog entry.
#include <filesystem>
#include <variant>

#include "app/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/starting_point.hpp"

namespace dsgd::app {

namespace {

std::string intra_node_text(const platforms::Platform& platform) {
  const auto& intra = platform.nodes.intra_node;
  if (const auto* mesh = std::get_if<platforms::KnlMesh>(&intra)) {
    return "2-D mesh " + std::to_string(mesh->columns) + "×" + std::to_string(mesh->rows) + ", " +
           std::string(platforms::to_string(mesh->cluster_mode));
  }
  std::string text;
  if (const auto* tree = std::get_if<platforms::PcieTree>(&intra)) {
    text = "PCIe tree, " + std::to_string(tree->switches.size()) + " switch(es)";
  }
  // The devices' own links and the NICs, after the tree.
  const auto add = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (platform.nodes.nvlink) add("NVLink " + std::to_string(platform.nodes.nvlink->pairs.size()) + " pairs");
  if (platform.nodes.nvswitch) add("NVSwitch");
  if (platform.nodes.nics) add(std::to_string(platform.nodes.nics->count) + " NICs");
  return text.empty() ? "—" : text;
}

reports::Entry platform_entry(const platforms::Platform& platform) {
  const auto summary = platforms::summarize(platform);
  reports::Entry entry = catalog_entry(summary.name, "platform", summary.description);
  entry.platform = summary.name;
  entry.labels["topology"] = summary.topology;
  const std::string shape = platforms::simgrid_topology_string(platform.network.topology);
  if (!shape.empty()) entry.labels["topology"] += " " + shape;
  entry.labels["intra_node"] = intra_node_text(platform);
  entry.counters["nodes"] = summary.nodes;
  entry.counters["cores_per_node"] = summary.cores_per_node;
  entry.counters["total_cores"] = static_cast<double>(summary.total_cores);
  entry.counters["devices_per_node"] = summary.devices_per_node;
  entry.counters["peak_flops_per_node"] = summary.peak_flops_per_node;
  entry.counters["latency_s"] = summary.latency_s;
  entry.counters["bandwidth_Bps"] = summary.bandwidth_Bps;
  return entry;
}

// A network of the catalog (seed 000 Table 2's links), alpha-beta only.
reports::Entry link_entry(const platforms::Link& link) {
  reports::Entry entry = catalog_entry(link.name, "link", link.description);
  entry.counters["latency_s"] = link.latency_s;
  entry.counters["bandwidth_Bps"] = link.bandwidth_Bps;
  entry.counters["beta_s_per_B"] = 1.0 / link.bandwidth_Bps;
  return entry;
}

}  // namespace

void register_platforms_command(CLI::App& app, Context& context) {
  auto* list = app.add_subcommand("platforms", "The platform catalog: nodes, devices, networks, with sources");
  auto results_path = std::make_shared<std::string>();
  list->add_option("--results", *results_path, "Also write the table as a results file (JSON) here")
      ->check(output_file_check());

  auto* show = list->add_subcommand("show", "Print one catalog entry (or validate and print a platform file)");
  auto name = std::make_shared<std::string>();
  show->add_option("name", *name, "Catalog name (see `dsgd platforms`) or path to a platform JSON file")->required();
  show->callback([&context, name] {
    const bool is_file = name->find('/') != std::string::npos || name->ends_with(".json");
    if (is_file) {
      context.out << platforms::to_json(platforms::load_platform(*name)).dump(2) << '\n';
    } else {
      context.out << platforms::catalog_text(*name);
    }
  });

  auto* start = list->add_subcommand(
      "new", "Write a commented platform file to edit, started from a catalog platform (then check it with show)");
  struct NewOptions {
    std::string from;
    std::string out;
    std::string name;
  };
  auto new_options = std::make_shared<NewOptions>();
  start->add_option("--from", new_options->from, "Catalog platform to start from (see `dsgd platforms`)")->required();
  start->add_option("--out", new_options->out, "The file to write; it must not exist yet")->required();
  start->add_option("--name", new_options->name, "The platform's name (default: the file's name without .json)");
  start->callback([&context, new_options] {
    const std::filesystem::path out = new_options->out;
    // A new file only: an existing one is the user's own work, whatever it holds.
    if (std::filesystem::symlink_status(out).type() != std::filesystem::file_type::not_found) {
      throw InputError(out.string() + ": already exists; `platforms new` writes a new file");
    }
    check_output_file(out);
    const std::string name = new_options->name.empty() ? out.stem().string() : new_options->name;
    write_file_atomically(out, platforms::starting_point(new_options->from, name));
    context.out << out.string() << ": platform '" << name << "' from the catalog's '" << new_options->from
                << "'; edit it, then `dsgd platforms show " << out.string() << "`\n";
  });

  list->callback([&context, list, results_path] {
    if (list->got_subcommand("show") || list->got_subcommand("new")) return;
    auto results = new_results(context);
    for (const auto& platform_name : platforms::catalog_names()) {
      results.benchmarks.push_back(platform_entry(platforms::catalog_platform(platform_name)));
    }
    for (const auto& link_name : platforms::catalog_link_names()) {
      results.benchmarks.push_back(link_entry(platforms::catalog_link(link_name)));
    }
    if (!results_path->empty()) reports::write_results(*results_path, results);
    print_manifest_table(context.out, "platforms", "catalog", results);
    context.out << '\n';
    print_manifest_table(context.out, "platforms", "links", results);
  });
}

}  // namespace dsgd::app
