#include "simulate/mesh_study.hpp"

#include <map>

#include "algorithms/shared_memory/study_entries.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::simulate {

namespace sm = algorithms::shared_memory;

MeshStudyOutcome run_mesh_study(const sm::StudyOptions& study, const MeshStudyOptions& options, std::ostream* log) {
  const auto convergence = sm::run_mesh_convergence(study, options.cores, options.batch, log);
  const auto& serial = convergence.serial.best.result;
  if (!convergence.serial.reached) throw Error("shared-memory mesh study: serial SGD did not reach 99.5%");
  MeshStudyOutcome outcome;
  outcome.dataset = convergence.dataset;
  outcome.options = options;
  outcome.serial_passes_to_target = serial.passes_to_target;
  outcome.native_nnz_per_s = serial.nnz_per_s_per_thread;
  CoreRate rate;
  rate.native_nnz_per_s = serial.nnz_per_s_per_thread;
  rate.native_clock_Hz = options.native_clock_Hz;
  rate.in_order_penalty = options.in_order_penalty;
  SharingPattern pattern;
  pattern.rows = static_cast<long long>(convergence.stats.rows);
  pattern.nnz_per_row = convergence.stats.avg_row_nnz;
  pattern.features = static_cast<long long>(convergence.stats.features);
  pattern.write_cycles_per_feature = options.write_cycles_per_feature;
  std::map<int, MeshStudyRow> best;
  for (const auto& converged : convergence.hogbatch) {
    if (!converged.sweep.reached) {
      if (log != nullptr) {
        *log << "shared-memory mesh study: HogBatch with " << converged.threads << " lockstep threads and HS "
             << converged.hog_batch << " did not reach 99.5%; left out" << std::endl;
      }
      continue;
    }
    pattern.batch_rows = converged.hog_batch;
    const MeshPoint point{seed003_mesh(converged.threads),
                          static_cast<double>(converged.sweep.best.result.passes_to_target)};
    const auto predicted = predict_mesh_speedup({point}, pattern, serial.passes_to_target, rate);
    outcome.seconds_per_nnz = predicted.seconds_per_nnz;
    auto found = best.find(converged.threads);
    if (found == best.end() || predicted.points.front().speedup > found->second.point.speedup) {
      best[converged.threads] = {predicted.points.front(), converged.hog_batch};
    }
  }
  for (auto& [cores, row] : best) outcome.rows.push_back(std::move(row));
  return outcome;
}

std::vector<reports::Entry> to_entries(const MeshStudyOutcome& outcome) {
  std::vector<reports::Entry> entries;
  for (const auto& [point, hog_batch] : outcome.rows) {
    reports::Entry entry = sm::study_entry("mesh", "mesh", outcome.dataset);
    entry.name = "shared-memory/mesh/" + std::to_string(point.mesh.cores);
    entry.executor = "simgrid";
    entry.fidelity = "flow";
    entry.algorithm = "hogbatch";
    entry.ranks = point.mesh.cores;
    entry.real_time = point.time_to_target_s;
    entry.labels["mesh"] = std::to_string(point.mesh.columns) + " x " + std::to_string(point.mesh.rows) + " stops, " +
                           std::to_string(point.mesh.cores_per_stop) + " cores each";
    entry.labels["assumed"] =
        format("in-order penalty %g, write loop %g cycles per model value, 1-cycle link between a stop's cores",
               outcome.options.in_order_penalty, outcome.options.write_cycles_per_feature);
    entry.counters = {{"hog_batch", hog_batch},
                      {"passes_to_target", point.passes_to_target},
                      {"serial_passes_to_target", outcome.serial_passes_to_target},
                      {"time_per_pass_s", point.pass.time_per_pass_s},
                      {"compute_s", point.pass.per_pass.compute_s},
                      {"read_s", point.pass.per_pass.read_s},
                      {"write_s", point.pass.per_pass.write_s},
                      {"hardware_speedup", point.hardware_speedup},
                      {"speedup", point.speedup},
                      {"seconds_per_nnz", outcome.seconds_per_nnz},
                      {"native_nnz_per_s", outcome.native_nnz_per_s},
                      {"simulation_wall_s", point.pass.wall_s}};
    // Seed 003's published speed-ups (its "future scalability" figure).
    if (point.mesh.cores == 64) entry.counters["paper_speedup"] = 53;
    if (point.mesh.cores == 128) entry.counters["paper_speedup"] = 90;
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace dsgd::simulate
