#pragma once
// A published table of transformer training throughputs predicted row by row (algorithms/studies.hpp
// TransformerStudy; Megatron-LM SC'21 Table 1): the device's one kernel efficiency is FITTED on the study's fitted
// row, every other row is predicted with it (docs/transformers.md "Megatron-LM's Table 1").

#include <string>
#include <vector>

#include "algorithms/studies.hpp"
#include "platforms/platform.hpp"
#include "reports/results.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/transformer_training.hpp"

namespace dsgd::simulate {

struct TransformerStudyPoint {
  algorithms::TransformerStudyRow row;
  ParallelLayout layout;
  TransformerPrediction prediction;
  Determined determined = Determined::kPredicted;
  double difference_percent = 0;  // predicted against published
};

struct TransformerStudyOutcome {
  std::string study;
  std::string platform;
  std::string device;
  double efficiency = 0;  // the FITTED kernel efficiency
  std::string fitted_on;  // the row's model
  std::vector<TransformerStudyPoint> points;
  double mean_abs_difference_percent = 0;  // over the predicted rows
  double max_abs_difference_percent = 0;
  double wall_s = 0;
};

// The layout of a row: tensor-parallel ranks first, then pipeline stages, the rest data parallel.
ParallelLayout layout_of(const algorithms::TransformerStudyRow& row);

// Fits the efficiency of `platform`'s device kernels on the fitted row, then predicts every row. Throws InputError
// where the fitted row cannot reach its published rate at any efficiency in (0, 1].
TransformerStudyOutcome run_transformer_study(const algorithms::TransformerStudy& study,
                                              const platforms::Platform& platform);

std::string format_transformer_study(const TransformerStudyOutcome& outcome, const algorithms::TransformerStudy& study);
std::vector<reports::Entry> to_entries(const TransformerStudyOutcome& outcome);
// The entry of one prediction (`dsgd simulate --model <transformer>`), named `name`; the study's points add to it.
reports::Entry to_entry(std::string name, const TransformerSpec& model, const ParallelLayout& layout,
                        const std::string& platform, const TransformerPrediction& prediction);

}  // namespace dsgd::simulate
