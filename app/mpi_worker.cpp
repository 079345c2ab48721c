#include "app/mpi_worker.hpp"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/subprocess.hpp"
#include "measure/mpi/launch.hpp"

namespace dsgd::app {

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

// The lines a failed dsgd-mpi printed about itself ("dsgd-mpi: rank R: ..."), else the output's last line.
std::string failure_summary(const std::string& output) {
  std::istringstream in(output);
  std::string summary;
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("dsgd-mpi:", 0) == 0) summary += (summary.empty() ? "" : "; ") + line;
    if (!line.empty()) last = line;
  }
  return summary.empty() ? last : summary;
}

// Deletes a temporary file when the command ends, however it ends.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::filesystem::path path) : path_(std::move(path)) {}
  ~TemporaryFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace

WorkerOutcome run_worker(const WorkerLaunch& launch, Context& context) {
  const std::filesystem::path results =
      launch.results.empty() ? std::filesystem::temp_directory_path() /
                                   ("dsgd-" + launch.command + "-" + std::to_string(::getpid()) + ".json")
                             : launch.results;
  std::optional<TemporaryFile> temporary;
  if (launch.results.empty()) temporary.emplace(results);
  std::vector<std::string> program = launch.program;
  program.insert(program.end(), {"--results", results.string()});
  const auto command = measure::mpi::mpirun_command(launch.ranks, program);
  context.err << launch.command << ": running " << joined(command) << std::endl;
  const auto run = run_process(command, std::chrono::seconds(static_cast<long>(launch.timeout_s)));
  if (run.timed_out) {
    throw Error(launch.command + ": " + launch.what + " did not finish within " +
                std::to_string(static_cast<long>(launch.timeout_s)) + " s (--timeout): " + joined(command));
  }
  if (run.exit_code != 0) {
    throw Error(launch.command + ": " + launch.what + " failed (mpirun exit code " + std::to_string(run.exit_code) +
                "): " + failure_summary(run.output));
  }
  return {reports::read_results(results), run.output, results};
}

}  // namespace dsgd::app
