#include "measure/mpi/executor.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

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
  // SERIALIZED lets a rank's stream (Comm::start_stream) call MPI from its own thread while the main thread only
  // computes; below it, streams run sequentially (MpiComm::start_stream).
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    throw UnavailableError("MPI_Init_thread failed (is this process started by mpirun?)");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    // dsgd's MPI side calls MPI from the main thread only, while OpenMP threads may run kernels: FUNNELED.
    throw UnavailableError("MPI provides thread level " + std::to_string(provided) + ", below MPI_THREAD_FUNNELED");
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

WorldResult run(const WorldOptions& options, const WorkerFunction& worker) {
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
  WorldResult result;
  result.wall_s = comm.now_s();
  // Every rank's breakdown and the slowest rank's time, to every rank: the per-rank shape of the other executors.
  constexpr int kCategories = static_cast<int>(kCategoryNames.size());
  std::vector<double> mine(comm.breakdown().seconds.begin(), comm.breakdown().seconds.end());
  mine.push_back(result.wall_s);
  std::vector<double> all(mine.size() * static_cast<std::size_t>(comm.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(mine.data(), kCategories + 1, MPI_DOUBLE, all.data(), kCategories + 1, MPI_DOUBLE,
                           comm.handle(), &request),
            comm.rank(), "MPI_Iallgather of the breakdowns");
  MPI_Status status{};
  comm.wait_for(request, status, Category::kWait, "for every rank's breakdown at the end of the run");
  for (int rank = 0; rank < comm.size(); ++rank) {
    const double* row = all.data() + static_cast<std::ptrdiff_t>(rank) * (kCategories + 1);
    Breakdown breakdown;
    std::copy(row, row + kCategories, breakdown.seconds.begin());
    result.per_rank.push_back(breakdown);
    result.time_s = std::max(result.time_s, row[kCategories]);
  }
  return result;
}

}  // namespace dsgd::measure::mpi
