// `dsgd lost-updates`: seed 002's lost-update experiment (measure/lost_updates.hpp, docs/lost-updates.md) as a
// table and a results file, one entry per (threads, floats).

#include <algorithm>
#include <cstdio>
#include <memory>

#include "app/commands.hpp"
#include "core/format.hpp"
#include "measure/lost_update_entry.hpp"
#include "measure/lost_updates.hpp"
#include "reports/table.hpp"

namespace dsgd::app {

namespace {

struct LostUpdatesOptions {
  std::vector<int> threads;
  std::vector<std::size_t> floats;
  std::int64_t additions_per_element = 0;
  int repeats = 3;
  std::string variant = "spread";
  std::string results;
};

void print_rows(std::ostream& out, const std::string& variant, int repeats,
                const std::vector<measure::LostUpdateRow>& rows) {
  using reports::Align;
  reports::Table table;
  table.title = "lost updates, " + variant + " variant: each thread adds 1 to every float K times (" +
                (variant == "fetch-add" ? "one relaxed fetch_add" : "relaxed load, then relaxed store") + "), " +
                std::to_string(repeats) + " run(s) per row";
  table.columns = {
      {"threads", Align::kRight},       {"floats", Align::kRight},          {"K", Align::kRight},
      {"additions/run", Align::kRight}, {"lost (all runs)", Align::kRight}, {"lost/run min..max", Align::kRight},
      {"lost %", Align::kRight},        {"seconds", Align::kRight},         {"M additions/s", Align::kRight},
      {"parallelism", Align::kRight}};
  for (const auto& row : rows) {
    const auto [fewest, most] = std::minmax_element(row.lost.begin(), row.lost.end());
    table.add_row({std::to_string(row.threads), std::to_string(row.floats), std::to_string(row.additions_per_element),
                   std::to_string(row.additions), std::to_string(row.lost_total()),
                   std::to_string(*fewest) + ".." + std::to_string(*most), format("%.4f", row.lost_percent()),
                   format("%.4f", row.median_seconds()), format("%.1f", row.additions_per_second() / 1e6),
                   format("%.2f", row.parallelism())});
  }
  table.notes.push_back("lost = threads x K x floats - end sum; lost % over all runs; seconds: the median run");
  table.notes.push_back(
      "parallelism = the threads' CPU seconds / wall seconds: how many ran at once on average (below "
      "the thread count on a busy machine, where threads take turns and collide less)");
  out << reports::to_text(table);
}

void lost_updates(Context& context, const LostUpdatesOptions& options) {
  measure::LostUpdateOptions measurement;
  measurement.variant = measure::lost_update_variant_from_string(options.variant);
  measurement.threads = options.threads;
  measurement.floats = options.floats;
  measurement.additions_per_element = options.additions_per_element;
  measurement.repeats = options.repeats;
  const auto rows = measure::measure_lost_updates(measurement, [&](const measure::LostUpdateRow& row) {
    context.err << "lost-updates: " << row.threads << " thread(s), " << row.floats << " floats done" << std::endl;
  });

  auto results = new_results(context);
  for (const auto& row : rows) results.benchmarks.push_back(measure::to_entry(row));
  if (!options.results.empty()) reports::write_results(options.results, results);
  print_rows(context.out, options.variant, options.repeats, rows);
}

}  // namespace

void register_lost_updates_command(CLI::App& app, Context& context) {
  auto* command = app.add_subcommand(
      "lost-updates", "Seed 002's experiment: how many unsynchronised additions (relaxed load + store) are lost");
  auto options = std::make_shared<LostUpdatesOptions>();
  command->add_option("--threads", options->threads, "Thread counts (default: 1 to the hardware threads)")
      ->delimiter(',');
  command->add_option("--floats", options->floats, "Vector sizes in floats (default: 1000,100000,1000000; hot: 16)")
      ->delimiter(',')
      ->check(positive_check());
  command->add_option("--additions", options->additions_per_element,
                      "Additions per element per thread, K (default 0: about 2^26 additions per run; threads x K "
                      "must stay below 2^24)");
  command->add_option("--repeats", options->repeats, "Runs per row")->capture_default_str();
  command
      ->add_option("--variant", options->variant,
                   "spread (threads start apart), hot (all on the same lines) or fetch-add (the control)")
      ->capture_default_str();
  command->add_option("--results", options->results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, options] { lost_updates(context, *options); });
}

}  // namespace dsgd::app
