#pragma once
// What `dsgd` and `dsgd-mpi` share beyond a run's options (run_options.hpp): loading the data, the results document
// and entries, the progress lines and summary. Links neither SimGrid nor OpenMPI, so both executables can.

#include <optional>
#include <ostream>
#include <string>

#include "algorithms/runner.hpp"
#include "app/run_options.hpp"
#include "core/comm.hpp"
#include "reports/results.hpp"

namespace dsgd::app {

// An empty results document of this process: provenance (with `command_line`), executable and CPU count.
reports::Results new_results(const std::string& command_line);

// The training and test sets of cli.dataset, normalised, the test set cut to at most cli.test_images; checks that the
// model takes them.
algorithms::RunData load_run_data(const RunCli& cli);
// The results entry of a run on `executor` (algorithms::to_entry with the command line's data set).
reports::Entry run_entry(const RunCli& cli, const algorithms::RunResult& result, const std::string& executor);
// One line per evaluation, for progress.
std::string progress_line(const algorithms::RunPoint& point);
// The closing summary: accuracy, time, throughput, breakdown of rank 0 and of a worker.
std::string run_summary(const RunCli& cli, const reports::Entry& entry);

}  // namespace dsgd::app
