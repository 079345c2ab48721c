#include "measure/mpi/executor.hpp"

#include <mpi.h>

#include <cstdlib>

#include "measure/mpi/comm.hpp"

namespace dsgd::measure::mpi {

namespace {

bool mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0;
}

void check_not_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw UnavailableError("MPI was already finalised in this process and cannot be started again");
}

void initialize(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    throw UnavailableError("MPI_Init_thread failed (is this process started by mpirun?)");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    // dsgd's MPI side calls MPI from the main thread only, while OpenMP threads may run kernels: FUNNELED.
    throw UnavailableError("MPI provides thread level " + std::to_string(provided) +
                           ", below MPI_THREAD_FUNNELED");
  }
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  check_not_finalized();
  if (!mpi_initialized()) {
    initialize(argc, argv);
    owned_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
}

MpiSession::~MpiSession() {
  if (!owned_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

MpiWorkerResult run_mpi_worker(const WorldOptions& options, const WorkerFunction& worker) {
  check_not_finalized();
  if (!mpi_initialized()) {
    initialize(nullptr, nullptr);
    std::atexit(finalize_at_exit);
  }
  MpiComm comm(MPI_COMM_WORLD, options);
  try {
    worker(comm);
  } catch (...) {
    comm.abandon();
    throw;
  }
  MpiWorkerResult result;
  result.wall_s = comm.now_s();
  result.breakdown = comm.breakdown();
  return result;
}

}  // namespace dsgd::measure::mpi
