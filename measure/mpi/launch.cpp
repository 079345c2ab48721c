#include "measure/mpi/launch.hpp"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::measure::mpi {

namespace {

constexpr std::int64_t kMostSlots = 1'000'000;          // per line: more cores than any node has
constexpr std::uintmax_t kMostHostfileBytes = 1 << 20;  // read whole: far more than any real hostfile

// A host name as DNS and OpenMPI take it: letters, digits, '.', '-', '_', at most 253 characters, not starting with
// '-' (mpirun would read "-F/path" as an option).
bool valid_host(const std::string& host) {
  return !host.empty() && host.size() <= 253 && host.front() != '-' &&
         host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
             std::string::npos;
}

// Slots of one hostfile line "host [slots=N] [max_slots=N]" (1 without slots=, OpenMPI's default for a listed host);
// 0 for a blank or comment line. Throws InputError naming file and line, with the text's raw bytes escaped.
std::int64_t slots_of(const std::string& raw, const std::filesystem::path& file, int number) {
  const std::string line = raw.substr(0, raw.find('#'));
  std::istringstream words(line);
  std::string host;
  if (!(words >> host)) return 0;
  const auto where = file.string() + ":" + std::to_string(number) + ": ";
  if (!valid_host(host)) {
    throw InputError(where + "expected a host name (letters, digits, '.', '-', '_'; not starting with '-'), got '" +
                     shown_text(host) + "'");
  }
  std::int64_t slots = 1;
  for (std::string word; words >> word;) {
    const auto equals = word.find('=');
    const std::string key = word.substr(0, equals);
    if (equals == std::string::npos || (key != "slots" && key != "max_slots" && key != "max-slots")) {
      throw InputError(where + "expected slots=N or max_slots=N after the host, got '" + shown_text(word) + "'");
    }
    const std::string value = word.substr(equals + 1);
    if (value.empty() || value.size() > 7 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(value) < 1 || std::stoll(value) > kMostSlots) {
      throw InputError(where + "'" + key + "' needs a count from 1 to " + std::to_string(kMostSlots) + ", got '" +
                       shown_text(value) + "'");
    }
    if (key == "slots") slots = std::stoll(value);
  }
  return slots;
}

}  // namespace

void check_launch(const MpiLaunchOptions& options, int ranks) {
  if (options.launcher != "mpirun" && options.launcher != "srun") {
    throw UnknownNameError("launcher", options.launcher, {"mpirun", "srun"});
  }
  if (options.hostfile.empty()) return;
  if (options.launcher != "mpirun") throw InputError("--hostfile is mpirun's; srun takes its hosts from Slurm");
  std::error_code error;
  if (!std::filesystem::is_regular_file(options.hostfile, error)) {
    throw InputError("hostfile " + options.hostfile.string() + ": not a readable file");
  }
  if (const auto bytes = std::filesystem::file_size(options.hostfile, error); !error && bytes > kMostHostfileBytes) {
    throw InputError("hostfile " + options.hostfile.string() + ": " + std::to_string(bytes) +
                     " bytes, more than a hostfile holds (at most " + std::to_string(kMostHostfileBytes) + ")");
  }
  std::ifstream in(options.hostfile);
  if (!in) throw InputError("hostfile " + options.hostfile.string() + ": cannot be read");
  std::int64_t slots = 0;  // summed in 64 bits: 2,148 lines of 999,999 slots wrapped an int
  int number = 0;
  for (std::string line; std::getline(in, line);) slots += slots_of(line, options.hostfile, ++number);
  if (slots == 0) throw InputError("hostfile " + options.hostfile.string() + ": names no host");
  if (slots < ranks) {
    throw InputError("hostfile " + options.hostfile.string() + ": " + std::to_string(slots) + " slots, but the run " +
                     "needs " + std::to_string(ranks) + " ranks");
  }
}

std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& program_and_args,
                                        const MpiLaunchOptions& options) {
  if (ranks < 1) throw InputError("mpirun: the number of ranks must be at least 1, got " + std::to_string(ranks));
  if (program_and_args.empty()) throw InputError("mpirun: no program to run");
  check_launch(options, ranks);
  std::vector<std::string> command;
  if (options.launcher == "srun") {
    command = {"srun", "-n", std::to_string(ranks)};
  } else {
    command = {"mpirun"};
    if (::geteuid() == 0) command.emplace_back("--allow-run-as-root");
    if (options.hostfile.empty()) {
      command.emplace_back("--oversubscribe");
    } else {
      command.insert(command.end(), {"--hostfile", options.hostfile.string()});
    }
    command.insert(command.end(), {"--bind-to", "none", "-np", std::to_string(ranks)});
  }
  command.insert(command.end(), options.extra_arguments.begin(), options.extra_arguments.end());
  command.insert(command.end(), program_and_args.begin(), program_and_args.end());
  return command;
}

std::filesystem::path worker_executable() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw UnavailableError("cannot locate dsgd-mpi: /proc/self/exe is unreadable (" + error.message() + ")");
  const auto worker = self.parent_path() / "dsgd-mpi";
  if (::access(worker.c_str(), X_OK) != 0) {
    throw UnavailableError("the MPI worker " + worker.string() +
                           " is missing or not executable (build the dsgd-mpi target; it is installed beside " +
                           self.filename().string() + ")");
  }
  return worker;
}

}  // namespace dsgd::measure::mpi
