#include "app/mpi_worker.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <regex>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/subprocess.hpp"
#include "measure/mpi/launch.hpp"

namespace dsgd::app {

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace

std::string failure_summary(const std::string& output) {
  // OpenMPI 4.1: "mpirun noticed that process rank 2 with PID 1234 on node x exited on signal 9 (Killed)."
  static const std::regex killed(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+))");
  std::string summary;
  std::smatch match;
  if (std::regex_search(output, match, killed)) {
    summary = "dsgd-mpi rank " + match[1].str() + " was killed by " + signal_name(std::stoi(match[3].str())) +
              " (on node " + match[2].str() + ")";
  }
  std::istringstream in(output);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("dsgd-mpi:", 0) == 0) summary += (summary.empty() ? "" : "; ") + line;
    if (line.find_first_not_of("- \t") != std::string::npos) last = line;
  }
  return summary.empty() ? last : summary;
}

void add_launch_options(CLI::App& command, measure::mpi::MpiLaunchOptions& options) {
  command.add_option("--launcher", options.launcher, "mpi: mpirun, or srun inside a Slurm allocation")
      ->capture_default_str();
  command.add_option("--hostfile", options.hostfile, "mpi: an OpenMPI hostfile: run the ranks on its hosts");
  command.add_option_function<std::string>(
      "--launcher-args",
      [&options](const std::string& text) {
        std::istringstream words(text);
        for (std::string word; words >> word;) options.extra_arguments.push_back(word);
      },
      "mpi: more arguments for the launcher, before the program (e.g. \"--mca btl_tcp_if_include eth0\")");
}

WorkerOutcome run_worker(const WorkerLaunch& launch, Context& context) {
  // Without a results path, a file in a private folder (a predictable name in /tmp could be another user's FIFO).
  std::optional<PrivateTempFolder> temporary;
  if (launch.results.empty()) temporary.emplace("dsgd-" + launch.command);
  const std::filesystem::path results = temporary ? temporary->path() / "results.json" : launch.results;
  std::vector<std::string> program = launch.program;
  program.insert(program.end(), {"--results", results.string()});
  const auto command = measure::mpi::mpirun_command(launch.ranks, program, launch.launcher);
  context.err << launch.command << ": running " << joined(command) << std::endl;
  OutputSink echo;
  if (launch.echo) echo = [&context](std::string_view piece) { context.err << piece << std::flush; };
  const auto run =
      run_process(command, std::chrono::seconds(static_cast<long>(launch.timeout_s)), {}, context.interrupt, echo);
  if (run.interrupted_by != 0) {
    const auto ranks = std::count(run.stopped_processes.begin(), run.stopped_processes.end(), "dsgd-mpi");
    throw InterruptedError(run.interrupted_by,
                           "stopped mpirun and its " + std::to_string(ranks) + " ranks (" + launch.what + ")");
  }
  if (run.timed_out) {
    throw Error(launch.command + ": " + launch.what + " did not finish within " +
                std::to_string(static_cast<long>(launch.timeout_s)) + " s (" + launch.timeout_option +
                "): " + joined(command));
  }
  if (run.exit_code != 0) {
    throw Error(launch.command + ": " + launch.what + " failed (mpirun exit code " + std::to_string(run.exit_code) +
                "): " + failure_summary(run.output));
  }
  return {reports::read_results(results), results};
}

}  // namespace dsgd::app
