#pragma once
// This machine's roofline as results entries (docs/roofline.md): its kernels placed by arithmetic intensity under
// the roof of its peak and STREAM bandwidth, each checked against the roof (suspect.hpp), and the machine's summary.
// `dsgd bench roofline` times the kernels and prints the table.

#include <string>
#include <vector>

#include "core/model_zoo.hpp"
#include "measure/stream.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

// One point of the plot: `series` ("OpenBLAS sgemm", "lenet conv", "roof", ...) of `kind` kernel, roof or machine
// (not plotted), at `intensity` FLOP/byte and `flops_per_s`; `what` says what ran.
reports::Entry roofline_point(const std::string& series, const std::string& kind, double intensity, double flops_per_s,
                              const std::string& what);

// Bytes a training step of `model` at least moves per batch: each layer's parameters read in the forward pass, read
// again and their gradients written in the backward pass (3 x 4 bytes each), and its output written forward, read
// back and its gradient written backward (3 x 4 bytes per element per image); only the inner-product layers where
// asked. Caches only lower the traffic of what fits; this is the compulsory part the intensities are computed with.
double step_bytes(const ModelSpec& model, int batch, bool inner_product_only);

struct RooflineMachine {
  int cores = 1;
  double nominal_peak_flops = 0;  // cores x FLOP per cycle x nominal clock
  std::string peak_source;        // how the nominal peak was derived
  StreamResult stream;            // triad on every core
  StreamResult stream_one;        // on one thread
};

struct Roofline {
  double peak_flops = 0;  // the nominal peak, or the fastest kernel's rate where it ran faster (the cores boost)
  double ridge_flop_per_byte = 0;
  std::string source;                   // where the peak and the memory slope come from
  std::vector<reports::Entry> entries;  // the roof's three points, the kernels, the machine's summary
  std::vector<std::string> warnings;    // a kernel above the roof (its entry labelled "suspect" too)
};

// The roofline of `machine` under `kernels` (roofline_point entries of kind "kernel"; at least one): the roof runs
// from half the smallest intensity to the ridge on the memory slope, then at the peak to twice the largest. Throws
// InputError for no kernels.
Roofline roofline(const RooflineMachine& machine, std::vector<reports::Entry> kernels);

}  // namespace dsgd::measure
