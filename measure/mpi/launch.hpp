#pragma once
// Starting the MPI side from dsgd. dsgd links SimGrid, whose library defines MPI_* too, so it never links OpenMPI:
// it runs the `dsgd-mpi` worker executable under `mpirun` as a child process (core/subprocess.hpp). Nothing here
// touches MPI; these functions live in dsgd::measure, which dsgd links.

#include <filesystem>
#include <string>
#include <vector>

namespace dsgd::measure::mpi {

// How the ranks are started: mpirun on this machine (the default), mpirun on the hosts of an OpenMPI hostfile, or
// Slurm's srun inside an allocation (dsgd-mpi then needs an OpenMPI built with Slurm's PMI, as Debian's is).
struct MpiLaunchOptions {
  std::string launcher = "mpirun";           // "mpirun" or "srun"
  std::filesystem::path hostfile;            // mpirun --hostfile FILE; empty: this machine only
  std::vector<std::string> extra_arguments;  // given to the launcher before the program, e.g. --mca ... or -N 2
};

// Throws InputError unless `options` can start `ranks` ranks: a known launcher; a hostfile only with mpirun, that
// can be read and holds OpenMPI hostfile lines ("host [slots=N] [max_slots=N]", # comments), whose slots add up
// to at least `ranks`. Messages name the file and line.
void check_launch(const MpiLaunchOptions& options, int ranks);

// The command line that starts `ranks` copies of program_and_args. By default, on this machine:
//   mpirun [--allow-run-as-root] --oversubscribe --bind-to none -np RANKS [EXTRA...] PROGRAM ARGS...
// With a hostfile, `--hostfile FILE` takes --oversubscribe's place (the file's slots bound the ranks). With srun:
//   srun -n RANKS [EXTRA...] PROGRAM ARGS...
// --allow-run-as-root only when running as root (OpenMPI refuses root otherwise); --oversubscribe so ranks may
// outnumber cores (tests run 4 ranks on 2 cores); --bind-to none so a rank's OpenMP threads are not confined to
// one core (OpenMPI binds each rank to a core by default at np <= 2). OpenMPI 4.1's shared-memory transport
// (vader, with CMA single copy) needed no further settings in this project's container. Throws InputError if
// ranks < 1 or program_and_args is empty.
std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& program_and_args,
                                        const MpiLaunchOptions& options = {});

// The `dsgd-mpi` worker executable beside the running executable (the folder of /proc/self/exe). The build puts
// dsgd and dsgd-mpi in the same folder. Throws UnavailableError if it is not there, naming the path.
std::filesystem::path worker_executable();

}  // namespace dsgd::measure::mpi
