#include "measure/mpi/launch.hpp"

#include <unistd.h>

#include "core/error.hpp"

namespace dsgd::measure::mpi {

std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& program_and_args) {
  if (ranks < 1) throw InputError("mpirun: the number of ranks must be at least 1, got " + std::to_string(ranks));
  if (program_and_args.empty()) throw InputError("mpirun: no program to run");
  std::vector<std::string> command = {"mpirun"};
  if (::geteuid() == 0) command.emplace_back("--allow-run-as-root");
  command.insert(command.end(), {"--oversubscribe", "--bind-to", "none", "-np", std::to_string(ranks)});
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
