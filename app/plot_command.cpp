// `dsgd plot RESULTS... --x FIELD --y FIELD`: a figure from results files, without a manifest (docs/plot.md).
#include <filesystem>

#include "app/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "reports/plot.hpp"

namespace dsgd::app {

void register_plot_command(CLI::App& app, Context& context) {
  auto* plot = app.add_subcommand(
      "plot", "A figure from one or more results files: --y against --x, one series per algorithm, platform, ...");
  struct Options {
    std::vector<std::string> files;
    reports::PlotRequest request;
    std::string out;
    std::vector<std::string> formats{"png", "pdf"};
    std::string width = "report";
    std::string style = "linespoints";
  };
  auto options = std::make_shared<Options>();
  plot->add_option("results", options->files, "Results files (dsgd ... --results FILE)")
      ->required()
      ->check(CLI::ExistingFile);
  plot->add_option("--y", options->request.y,
                   "What to plot: a field (efficiency, real_time, counter:KEY, ...) or a curve (test_accuracy, error)")
      ->required();
  plot->add_option("--x", options->request.x,
                   "Against what: a field (ranks, ...); with a curve, its x (time_s or iteration; default its own)");
  plot->add_option("--series", options->request.series,
                   "Fields whose values name the series, e.g. algorithm,executor (default: those that differ)")
      ->delimiter(',');
  plot->add_option("--where", options->request.where, "Only entries whose FIELD reads VALUE: FIELD=VALUE (repeatable)");
  plot->add_option("--style", options->style, "lines, points or linespoints")->capture_default_str();
  plot->add_flag("--log-x", options->request.log_x, "Logarithmic x axis");
  plot->add_flag("--log-y", options->request.log_y, "Logarithmic y axis");
  plot->add_option("--title", options->request.title, "Title (default: Y against X)");
  plot->add_option("--x-label", options->request.x_label, "x axis label (default: from the field, with its unit)");
  plot->add_option("--y-label", options->request.y_label, "y axis label (default: from the field, with its unit)");
  plot->add_option("--format", options->formats, "png, pdf, svg, tex (pgfplots); comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  plot->add_option("--width", options->width, "report, one-column (3.5 in) or two-columns (7 in)")
      ->capture_default_str();
  plot->add_option("--out", options->out, "Path of the figure without extension: writes OUT.png, OUT.pdf, ...")
      ->required();
  plot->callback([&context, options] {
    const auto style = reports::plot_style_from_string(options->style);
    if (style == reports::PlotStyle::kBars || style == reports::PlotStyle::kStacked) {
      throw InputError("plot: --style " + options->style +
                       " is for report manifests; use lines, points or linespoints");
    }
    options->request.style = style;
    reports::RenderOptions render;
    render.formats.clear();
    for (const auto& format : options->formats) render.formats.push_back(reports::image_format_from_string(format));
    render.width = reports::figure_width_from_string(options->width);
    // Every file it will write is checked before anything is read or drawn.
    const auto files = reports::figure_files(options->out, render);
    for (const auto& file : files) check_output_file(file);

    std::vector<reports::NamedResults> inputs;
    for (const auto& file : options->files) {
      inputs.push_back({std::filesystem::path(file).stem().string(), reports::read_results(file)});
    }
    const auto figure = reports::plot_figure(inputs, options->request);
    reports::render_figure(figure, options->out, render);
    for (const auto& note : figure.notes) context.err << "plot: " << note << '\n';
    for (const auto& file : files) context.out << file.string() << '\n';
  });
}

}  // namespace dsgd::app
