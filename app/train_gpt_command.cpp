// `dsgd train-gpt`: dsgd's byte-level GPT trained natively with tensor, pipeline and data parallelism
// (algorithms/gpt_training.hpp) on Debian's fortunes, one thread per rank; the loss as it falls, and a results
// entry with the loss against time.
#include <cstdio>
#include <sstream>

#include "algorithms/gpt_training.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/format.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::app {

namespace {

struct TrainGptCommand {
  algorithms::ParallelGptOptions options;
  std::string model = "gpt-bytes";
  std::string corpus = data::kDefaultTextCorpus;
  std::string schedule = "1f1b";
  std::int64_t print_every = 25;
  double timeout_s = 120;
  std::string executor = "threads";
  std::string platform = "selene";
  std::string results;
};

// The losses a forked simulation collected, one "iteration time loss" line each.
std::vector<algorithms::GptTrainingPoint> parse_losses(const std::string& text) {
  std::vector<algorithms::GptTrainingPoint> points;
  std::istringstream in(text);
  algorithms::GptTrainingPoint point;
  while (in >> point.iteration >> point.time_s >> point.loss) points.push_back(point);
  return points;
}

}  // namespace

void register_train_gpt_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<TrainGptCommand>();
  auto& o = command->options;
  o.grid = {2, 2, 1};
  o.micro_batch = 8;
  o.micro_batches = 4;
  o.iterations = 1000;
  o.adamw.learning_rate = 1e-3F;
  o.adamw.weight_decay = 0.01F;
  auto* train = app.add_subcommand(
      "train-gpt", "Train the byte-level GPT natively with tensor x pipeline x data parallelism (threads)");
  train->add_option("--model", command->model, "A transformer of the zoo that trains natively")->capture_default_str();
  train->add_option("--corpus", command->corpus, "A text file or a folder of them")->capture_default_str();
  train->add_option("--tp", o.grid.tp, "Tensor-parallel ranks")->capture_default_str()->check(positive_check());
  train->add_option("--pp", o.grid.pp, "Pipeline stages")->capture_default_str()->check(positive_check());
  train->add_option("--dp", o.grid.dp, "Data-parallel replicas")->capture_default_str()->check(positive_check());
  train->add_option("--micro-batch", o.micro_batch, "Sequences per micro-batch")->capture_default_str();
  train->add_option("--micro-batches", o.micro_batches, "Micro-batches per replica and iteration")
      ->capture_default_str();
  train->add_option("--schedule", command->schedule, "gpipe, 1f1b or interleaved")->capture_default_str();
  train->add_option("--virtual-stages", o.virtual_stages, "Model chunks per stage (interleaved)")
      ->capture_default_str();
  train->add_option("--zero", o.zero_stage, "ZeRO stage 0-3")->capture_default_str();
  train->add_option("--lr", o.adamw.learning_rate, "AdamW's learning rate")->capture_default_str();
  train->add_option("--weight-decay", o.adamw.weight_decay, "AdamW's decoupled weight decay")->capture_default_str();
  train->add_option("--iterations", o.iterations, "Iterations (optimizer steps)")->capture_default_str();
  train->add_option("--seed", o.seed, "Seed of the weights and of the sampled sequences")->capture_default_str();
  train->add_option("--print-every", command->print_every, "Iterations between progress lines")->capture_default_str();
  train->add_option("--timeout", command->timeout_s, "Seconds a rank waits for another before failing")
      ->capture_default_str();
  train
      ->add_option("--executor", command->executor,
                   "threads (natively, one thread per rank) or simgrid (the same run in simulated time, payloads "
                   "carried, kernels priced on --platform)")
      ->capture_default_str()
      ->check(CLI::IsMember({"threads", "simgrid"}));
  train->add_option("--platform", command->platform, "simgrid: the platform the ranks run on")->capture_default_str();
  train->add_option("--results", command->results, "Write the results (JSON) here")->check(output_file_check());
  train->callback([&context, command] {
    auto options = command->options;
    options.model = build_transformer(command->model);
    options.schedule = algorithms::pipeline_schedule_from_string(command->schedule);
    const auto corpus = data::read_text_corpus(command->corpus, options.model.sequence);
    context.err << "train-gpt: " << options.model.name << " on " << command->corpus << " (" << corpus.files
                << " files, " << corpus.bytes.size() << " bytes), tp " << options.grid.tp << " x pp " << options.grid.pp
                << " x dp " << options.grid.dp << " = " << options.grid.size() << " threads" << std::endl;
    algorithms::GptTrainingOutcome outcome;
    outcome.options = options;
    outcome.corpus = command->corpus;
    outcome.corpus_bytes = corpus.bytes.size();
    const auto progress = [&](const algorithms::GptTrainingPoint& point) {
      outcome.losses.push_back(point);  // one rank reports: no other thread touches it
      if (point.iteration % command->print_every == 0 || point.iteration == options.iterations) {
        context.err << "train-gpt: iteration " << point.iteration << ": loss " << fixed(point.loss, 4) << " nats/byte, "
                    << fixed(point.time_s, 1) << " s" << std::endl;
      }
    };
    WorldOptions world;
    world.size = options.grid.size();
    world.timeout_s = command->timeout_s;
    outcome.executor = command->executor;
    if (command->executor == "threads") {
      outcome.wall_s = measure::threads::run(world, algorithms::gpt_training_worker(options, corpus, progress)).wall_s;
    } else {
      // The simulation runs in a forked child: its losses come back as text, and are printed once it ends.
      std::string collected;
      simulate::SimulationOptions simulation;
      simulation.collect = [&collected] { return collected; };
      const auto worker = algorithms::gpt_training_worker(options, corpus, [&collected](const auto& point) {
        char line[96];  // every digit of a double, so the losses come back bit for bit
        std::snprintf(line, sizeof line, "%lld %.17g %.17g\n", static_cast<long long>(point.iteration), point.time_s,
                      point.loss);
        collected += line;
      });
      const auto result =
          simulate::simgrid::run(platforms::load_platform(command->platform), world, worker, simulation);
      for (const auto& point : parse_losses(result.collected)) progress(point);
      outcome.wall_s = result.time_s;  // simulated seconds
      outcome.executor = "simgrid";
    }
    const auto entry = algorithms::to_entry(outcome);
    context.out << options.model.name << ": loss " << fixed(entry.counters.at("first_loss"), 3) << " -> "
                << fixed(outcome.final_loss(), 3) << " nats/byte (mean of the last 10 iterations) in "
                << options.iterations << " iterations, " << fixed(outcome.wall_s, 1)
                << (outcome.executor == "simgrid" ? " simulated s on " + command->platform + ", " : " s, ")
                << fixed(entry.counters.at("tokens_per_second"), 0) << " tokens/s\n";
    if (command->results.empty()) return;
    auto document = new_results(context);
    document.benchmarks.push_back(entry);
    reports::write_results(command->results, document);
  });
}

}  // namespace dsgd::app
