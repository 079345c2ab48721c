#pragma once
// `dsgd simulate --model <transformer> --tp T --pp P --dp D ...` and `dsgd simulate --study megatron`: one
// training iteration under 3-D parallelism (simulate/transformer_training.hpp), and Megatron-LM's Table 1
// (simulate/transformer_study.hpp).

#include <memory>
#include <string>

#include "app/commands.hpp"
#include "simulate/transformer_training.hpp"

namespace dsgd::app {

struct TransformerCommandOptions {
  simulate::ParallelLayout layout;
  std::string schedule = "1f1b";
  std::string recompute = "full";
};

// Adds --tp, --pp, --dp, --micro-batch, --global-batch, --virtual-stages, --schedule, --zero, --recompute,
// --sequence-parallel and --overlap-grad-reduce to `simulate`.
void add_transformer_options(CLI::App& simulate, TransformerCommandOptions& options);
// The first of those options given on the command line, or "" for none (they apply to transformers only).
std::string given_transformer_option(const CLI::App& simulate);

void run_transformer_simulation(Context& context, const std::string& model, const std::string& platform,
                                TransformerCommandOptions options, const std::string& results);
// Whether `study` is a transformer study (algorithms::transformer_study_catalog); then runs it.
bool is_transformer_study(const std::string& study);
void run_transformer_study(Context& context, const std::string& study, const std::string& results);

}  // namespace dsgd::app
