#pragma once
// The results entry of a model of the zoo (core/model_zoo.hpp): a catalog entry (kind "model", the description)
// with the input shape, the published figure's source and counters of the layers, parameters, their fp32 and fp16
// bytes, forward FLOPs, activation bytes and FLOPs per parameter, beside the published counts where there are any.
// It lives in reports/ because core, which holds the zoo, includes nothing above it (docs/design.md).

#include "core/model_zoo.hpp"
#include "reports/results.hpp"

namespace dsgd::reports {

// Named after the model's zoo key.
Entry to_entry(const ModelSpec& model);

}  // namespace dsgd::reports
