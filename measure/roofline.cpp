#include "measure/roofline.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/format.hpp"
#include "measure/suspect.hpp"

namespace dsgd::measure {

reports::Entry roofline_point(const std::string& series, const std::string& kind, double intensity, double flops_per_s,
                              const std::string& what) {
  reports::Entry entry;
  entry.name = "roofline/" + series + "/" + significant(intensity, 4);
  entry.executor = "threads";
  entry.fidelity = kind == "kernel" ? "measured" : "derived";
  entry.algorithm = series;
  entry.labels = {{"series", series}, {"kind", kind}, {"what", what}, {"plotted", kind == "machine" ? "no" : "yes"}};
  entry.counters = {{"intensity_flop_per_byte", intensity}, {"gflops", flops_per_s / 1e9}};
  return entry;
}

double step_bytes(const ModelSpec& model, int batch, bool inner_product_only) {
  double bytes = 0;
  for (const auto& layer : model.layers) {
    if (inner_product_only && layer.kind != LayerKind::kInnerProduct) continue;
    bytes += 12.0 * static_cast<double>(layer.parameters) +
             12.0 * static_cast<double>(batch) * static_cast<double>(layer.output.elements());
  }
  return bytes;
}

Roofline roofline(const RooflineMachine& machine, std::vector<reports::Entry> kernels) {
  if (kernels.empty()) throw InputError("roofline: no kernel to place");
  double low = 1e30;
  double high = 0;
  const reports::Entry* fastest = nullptr;
  for (const auto& point : kernels) {
    low = std::min(low, point.counters.at("intensity_flop_per_byte"));
    high = std::max(high, point.counters.at("intensity_flop_per_byte"));
    if (fastest == nullptr || point.counters.at("gflops") > fastest->counters.at("gflops")) fastest = &point;
  }
  Roofline out;
  const double nominal = machine.nominal_peak_flops;
  const double bandwidth = machine.stream.bytes_per_s;
  out.peak_flops = std::max(nominal, fastest->counters.at("gflops") * 1e9);
  out.ridge_flop_per_byte = out.peak_flops / bandwidth;
  out.source = machine.peak_source;
  if (out.peak_flops > nominal) {
    out.source += "; raised to " + fixed(out.peak_flops / 1e9, 1) + " GFLOP/s, the rate " + fastest->labels.at("what") +
                  " reached: the cores boost";
  }
  out.source += "; memory: STREAM triad on " + std::to_string(machine.stream.threads) + " threads";
  const std::string roof =
      "roof: " + fixed(out.peak_flops / 1e9, 0) + " GFLOP/s peak, " + fixed(bandwidth / 1e9, 1) + " GB/s";
  const auto roof_at = [&](double x) { return std::min(out.peak_flops, bandwidth * x); };
  for (const double x : {low / 2, std::min(out.ridge_flop_per_byte, 2 * high), 2 * high}) {
    out.entries.push_back(roofline_point(roof, "roof", x, roof_at(x), out.source));
  }
  // A kernel above the roof means the roof is wrong: STREAM measured while others used the memory, most likely.
  for (auto& point : kernels) {
    const double x = point.counters.at("intensity_flop_per_byte");
    const std::string above = above_bound_warning(point.labels.at("series"), point.counters.at("gflops") * 1e9,
                                                  roof_at(x), "the roofline", "FLOP/s");
    if (!above.empty()) {
      point.labels["suspect"] = above;
      out.warnings.push_back(above);
    }
    out.entries.push_back(std::move(point));
  }
  auto summary = roofline_point("machine", "machine", out.ridge_flop_per_byte, out.peak_flops, out.source);
  summary.counters["stream_Bps"] = bandwidth;
  summary.counters["stream_one_thread_Bps"] = machine.stream_one.bytes_per_s;
  summary.counters["cores"] = machine.cores;
  summary.counters["ridge_flop_per_byte"] = out.ridge_flop_per_byte;
  out.entries.push_back(std::move(summary));
  return out;
}

}  // namespace dsgd::measure
