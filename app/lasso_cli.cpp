#include "app/lasso_cli.hpp"

#include <algorithm>

#include "app/run_common.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::app {

namespace strads = algorithms::strads;

void add_lasso_options(CLI::App& command, LassoCli& cli) {
  auto& run = cli.run;
  command
      .add_option("--problem", cli.problem,
                  "A generated problem (tiny, small, correlated, large; NAME:SEED for another seed) or libsvm:FILE "
                  "(a regression file)")
      ->capture_default_str();
  command.add_option("--lambda", cli.lambda, "The L1 penalty (0: --lambda-ratio x lambda_max)")->capture_default_str();
  command.add_option("--lambda-ratio", cli.lambda_ratio, "lambda as a share of lambda_max = max |x_a . y|")
      ->capture_default_str();
  // Counts are unsigned: without the check, -1 would wrap to 18446744073709551615.
  command.add_option("--coordinates", cli.coordinates, "Coordinates per round, C (0: one per worker; serial: 1)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_option("--candidates", run.scheduler.candidates, "strads-dynamic: candidates drawn per round (0: 2 C)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_option("--tau", run.scheduler.tau, "strads-dynamic: |correlation| above which coordinates depend")
      ->capture_default_str();
  command.add_option("--rounds", run.schmp.rounds, "Rounds at most")->capture_default_str();
  command.add_option("--seconds", run.schmp.seconds, "Seconds at most (0: no limit)")->capture_default_str();
  command.add_option("--eval-every", run.schmp.eval_every, "Rounds between evaluations of the objective")
      ->capture_default_str();
  command.add_option("--target-objective", run.schmp.target_objective, "Stop at or below this objective (0: never)")
      ->capture_default_str();
  command.add_option("--seed", run.scheduler.seed, "Seed of the random schedulers")->capture_default_str();
}

std::vector<std::string> lasso_arguments(const LassoCli& cli, const std::string& scheduler, int workers) {
  const auto real = [](double value) { return significant(value, 17); };
  const auto& run = cli.run;
  return {"--scheduler",
          scheduler,
          "--workers",
          std::to_string(workers),
          "--problem",
          cli.problem,
          "--lambda",
          real(cli.lambda),
          "--lambda-ratio",
          real(cli.lambda_ratio),
          "--coordinates",
          std::to_string(cli.coordinates),
          "--candidates",
          std::to_string(run.scheduler.candidates),
          "--tau",
          real(run.scheduler.tau),
          "--rounds",
          std::to_string(run.schmp.rounds),
          "--seconds",
          real(run.schmp.seconds),
          "--eval-every",
          std::to_string(run.schmp.eval_every),
          "--target-objective",
          real(run.schmp.target_objective),
          "--seed",
          std::to_string(run.scheduler.seed)};
}

void resolve_lasso_cli(LassoCli& cli, const std::string& scheduler, int workers, const strads::LassoProblem& problem) {
  if (workers < 1) throw InputError("lasso: --workers must be at least 1");
  if (!(cli.lambda >= 0) || !(cli.lambda_ratio >= 0)) throw InputError("lasso: --lambda and --lambda-ratio are >= 0");
  cli.run.scheduler.kind = strads::scheduler_from_string(scheduler);
  cli.run.scheduler.coordinates = cli.run.scheduler.kind == strads::SchedulerKind::kSerial
                                      ? 1
                                      : (cli.coordinates > 0 ? cli.coordinates : static_cast<std::size_t>(workers));
  cli.run.lambda = cli.lambda > 0 ? cli.lambda : cli.lambda_ratio * strads::lambda_max(problem);
  // Refused here, before any rank starts, rather than by every rank.
  const auto& schmp = cli.run.schmp;
  if (schmp.rounds < 0 || schmp.eval_every < 1 || !(schmp.seconds >= 0) || !(schmp.target_objective >= 0)) {
    throw InputError("lasso: --rounds and --seconds must be >= 0, --eval-every >= 1, --target-objective >= 0");
  }
  strads::make_scheduler(problem, cli.run.scheduler);  // its own refusals (--coordinates, --candidates, --tau)
}

}  // namespace dsgd::app
