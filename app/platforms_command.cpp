// `dsgd platforms`: the platform catalog as a table (or results file); `dsgd platforms show NAME|FILE` prints one
// entry (a file is validated first, so `show` doubles as a checker for user-written platforms); `dsgd platforms new`
// writes a commented file to edit, started from a catalog entry.
#include <filesystem>

#include "app/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "platforms/catalog_entries.hpp"
#include "platforms/starting_point.hpp"

namespace dsgd::app {

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
    const std::string chosen = new_options->name.empty() ? out.stem().string() : new_options->name;
    write_file_atomically(out, platforms::starting_point(new_options->from, chosen));
    context.out << out.string() << ": platform '" << chosen << "' from the catalog's '" << new_options->from
                << "'; edit it, then `dsgd platforms show " << out.string() << "`\n";
  });

  list->callback([&context, list, results_path] {
    if (list->got_subcommand("show") || list->got_subcommand("new")) return;
    auto results = new_results(context);
    for (const auto& platform_name : platforms::catalog_names()) {
      results.benchmarks.push_back(platforms::to_entry(platforms::catalog_platform(platform_name)));
    }
    for (const auto& link_name : platforms::catalog_link_names()) {
      results.benchmarks.push_back(platforms::to_entry(platforms::catalog_link(link_name)));
    }
    if (!results_path->empty()) reports::write_results(*results_path, results);
    print_manifest_table(context.out, "platforms", "catalog", results);
    context.out << '\n';
    print_manifest_table(context.out, "platforms", "links", results);
  });
}

}  // namespace dsgd::app
