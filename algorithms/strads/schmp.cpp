#include "algorithms/strads/schmp.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/collectives.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::strads {

namespace {

// The set's header: a count >= 0, or one of these (rank 0's decision to stop, for every rank).
constexpr float kStopRounds = -1;
constexpr float kStopSeconds = -2;
constexpr float kStopTarget = -3;
constexpr float kStopDiverged = -4;
constexpr float kStopNonFiniteStart = -5;  // the objective before any update: the input, not the algorithm

const char* stop_reason(float code) {
  if (code == kStopRounds) return "rounds";
  if (code == kStopSeconds) return "seconds";
  if (code == kStopTarget) return "target objective";
  return "diverged";
}

}  // namespace

SchmpResult run_schmp(Comm& comm, SchmpProgram& program, const SchmpOptions& options) {
  if (options.rounds < 0 || options.eval_every < 1 || options.seconds < 0) {
    throw InputError("schmp: rounds >= 0, eval_every >= 1 and seconds >= 0, got " + std::to_string(options.rounds) +
                     ", " + std::to_string(options.eval_every) + ", " + std::to_string(options.seconds));
  }
  const bool root = comm.rank() == 0;
  const std::size_t capacity = program.max_set();
  std::vector<float> header(capacity + 1);
  std::vector<float> partial(capacity);
  std::vector<float> result(capacity);
  std::vector<std::uint32_t> set;
  SchmpResult out;
  const double start_s = comm.now_s();
  double first_objective = 0;
  float pending_stop = 0;  // rank 0: a stop the last evaluation decided

  // Sums the workers' objective shares at rank 0, records the point and checks target and divergence.
  const auto evaluate = [&] {
    float share = static_cast<float>(program.local_objective());
    reduce(comm, {&share, 1}, 0);
    if (!root) return;
    const double objective = program.objective(share);
    out.curve.push_back({out.rounds, comm.now_s() - start_s, objective, out.updates});
    if (out.curve.size() == 1) first_objective = objective;
    if (out.curve.size() == 1 && !std::isfinite(objective)) {
      pending_stop = kStopNonFiniteStart;
    } else if (!std::isfinite(objective) || objective > options.divergence_factor * std::abs(first_objective)) {
      pending_stop = kStopDiverged;
    } else if (options.target_objective > 0 && objective <= options.target_objective) {
      pending_stop = kStopTarget;
    }
  };

  evaluate();
  for (;;) {
    if (root) {
      float code = pending_stop;
      if (code == 0 && out.rounds >= options.rounds) code = kStopRounds;
      if (code == 0 && options.seconds > 0 && comm.now_s() - start_s >= options.seconds) code = kStopSeconds;
      if (code == 0) {
        set = program.schedule(comm);
        DSGD_ENFORCE(set.size() <= capacity, "schmp: schedule() returned more than max_set()");
        header[0] = static_cast<float>(set.size());
        std::memcpy(header.data() + 1, set.data(), set.size() * sizeof(std::uint32_t));
      } else {
        header[0] = code;
      }
    }
    broadcast(comm, {header.data(), header.size()}, 0);
    if (header[0] == kStopNonFiniteStart) {
      // Every rank has the code: all stop together, none left waiting in a collective.
      throw InputError("the objective is " + std::string(root ? std::to_string(first_objective) : "not finite") +
                       " before any update: the data's values or labels overflow (scale them down)");
    }
    if (header[0] < 0) {
      out.stop_reason = stop_reason(header[0]);
      break;
    }
    set.resize(static_cast<std::size_t>(header[0]));
    std::memcpy(set.data(), header.data() + 1, set.size() * sizeof(std::uint32_t));
    std::fill(partial.begin(), partial.end(), 0.0F);
    program.update(comm, set, {partial.data(), set.size()});
    reduce(comm, {partial.data(), partial.size()}, 0);
    if (root) program.aggregate(comm, set, {partial.data(), set.size()}, {result.data(), set.size()});
    broadcast(comm, {result.data(), result.size()}, 0);
    program.commit(comm, set, {result.data(), set.size()});
    ++out.rounds;
    out.updates += set.size();
    if (out.rounds % options.eval_every == 0) evaluate();
  }
  if (out.rounds % options.eval_every != 0) evaluate();
  out.seconds = comm.now_s() - start_s;
  return out;
}

}  // namespace dsgd::algorithms::strads
