#pragma once
// Seed 000's comparisons as named studies: which algorithms run, with which options, for which table or figure.
// They live here because they name algorithms (nothing outside algorithms/ does); `dsgd study NAME` runs one and
// the reproduce manifest renders it.
//   methods         Fig 8: every algorithm, same workers and hyper-parameters, test error against time
//   easgd-variants  Table 3 / Fig 11: Original EASGD*, Original EASGD, Sync EASGD1/2/3 to one target accuracy
//   packing         Fig 10: one packed message per exchange against one message per layer
//   partition       Fig 12 (seed 000 §6.2): the cores split into 1, 2, 4, ... groups, each a worker with its own
//                   weights and data, gradients summed between groups; as many groups as this machine has cores

#include <string>
#include <vector>

#include "algorithms/runner.hpp"

namespace dsgd::algorithms {

struct StudySettings {
  int workers = 4;
  double seconds = 20;           // per run, where a study runs on time (methods)
  double target_accuracy = 0.85;  // where a study runs to an accuracy (easgd-variants)
  std::int64_t iterations = 200;  // where a study runs on iterations (packing, partition)
  int cores = 0;                  // for partition; 0: this machine's
};

struct StudyRun {
  std::string label;  // the row or series name
  RunOptions options;
};

struct Study {
  std::string name;
  std::string description;  // one line
  std::vector<StudyRun> (*runs)(const StudySettings& settings);
};

const std::vector<Study>& study_catalog();
// Throws UnknownNameError listing the names.
const Study& find_study(const std::string& name);

}  // namespace dsgd::algorithms
