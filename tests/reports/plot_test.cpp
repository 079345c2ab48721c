#include "reports/plot.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd::reports {
namespace {

// A weak-scaling entry as `dsgd simulate` writes it.
Entry point(const std::string& algorithm, const std::string& fidelity, std::int64_t ranks, double efficiency) {
  Entry entry;
  entry.name = "simulate/" + algorithm + "/lenet/" + std::to_string(ranks);
  entry.executor = "simgrid";
  entry.fidelity = fidelity;
  entry.platform = "cori-knl";
  entry.algorithm = algorithm;
  entry.model = "lenet";
  entry.ranks = ranks;
  entry.counters["efficiency"] = efficiency;
  entry.counters["seconds_per_iteration"] = 0.01 / efficiency;
  return entry;
}

// A training run with its accuracy curves, as `dsgd run` writes it.
Entry run(const std::string& algorithm, const std::string& executor, double final_accuracy) {
  Entry entry;
  entry.name = "run/" + algorithm + "/lenet/2";
  entry.executor = executor;
  entry.algorithm = algorithm;
  entry.model = "lenet";
  entry.ranks = 2;
  entry.counters["test_accuracy"] = final_accuracy;
  entry.curves.push_back({"test_accuracy", "time_s", "accuracy", {{1, 0.5}, {2, final_accuracy}}});
  entry.curves.push_back({"test_accuracy_by_iteration", "iteration", "accuracy", {{50, 0.5}, {100, final_accuracy}}});
  entry.curves.push_back({"test_error", "time_s", "error", {{1, 0.5}, {2, 1 - final_accuracy}}});
  return entry;
}

NamedResults file(const std::string& name, std::vector<Entry> entries) {
  Results results;
  results.benchmarks = std::move(entries);
  return {name, results};
}

std::vector<std::string> titles(const Figure& figure) {
  std::vector<std::string> out;
  for (const auto& series : figure.series) out.push_back(series.title);
  return out;
}

std::string message_of(const std::vector<NamedResults>& files, const PlotRequest& request) {
  try {
    plot_figure(files, request);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportsPlot, TwoFilesGiveOneSeriesPerAlgorithmNamedByIt) {
  // The files are named after the algorithms and the fidelity changes along the sweep: neither splits a series.
  const std::vector<NamedResults> files = {
      file("sync", {point("sync-sgd", "message", 272, 0.95), point("sync-sgd", "message", 68, 1.0),
                    point("sync-sgd", "flow", 544, 0.88)}),
      file("easgd", {point("async-easgd", "message", 68, 1.0), point("async-easgd", "flow", 544, 0.08)})};
  PlotRequest request;
  request.x = "ranks";
  request.y = "efficiency";
  const Figure figure = plot_figure(files, request);
  EXPECT_EQ(titles(figure), (std::vector<std::string>{"sync-sgd", "async-easgd"}));
  // One line from left to right, whatever order the file lists the sizes in.
  EXPECT_EQ(figure.series[0].points, (std::vector<std::pair<double, double>>{{68, 1.0}, {272, 0.95}, {544, 0.88}}));
  EXPECT_EQ(figure.x_label, "ranks");
  EXPECT_EQ(figure.y_label, "efficiency");
  EXPECT_EQ(figure.title, "efficiency against ranks");

  // Two fidelities at one size are two series, and the legend says so.
  const std::vector<NamedResults> both = {
      file("a", {point("sync-sgd", "message", 68, 1.0), point("sync-sgd", "message", 136, 0.9)}),
      file("b", {point("sync-sgd", "flow", 68, 1.0), point("sync-sgd", "flow", 136, 0.8)})};
  EXPECT_EQ(titles(plot_figure(both, request)), (std::vector<std::string>{"message", "flow"}));
  request.series = {"algo", "file"};
  EXPECT_EQ(titles(plot_figure(both, request)), (std::vector<std::string>{"sync-sgd, a", "sync-sgd, b"}));
}

TEST(ReportsPlot, BareNamesFindCountersAndUnitsReachTheLabels) {
  const std::vector<NamedResults> files = {file("sync", {point("sync-sgd", "message", 68, 1.0)})};
  PlotRequest request;
  request.x = "ranks";
  request.y = "seconds_per_iteration";
  EXPECT_EQ(plot_figure(files, request).y_label, "seconds per iteration");
  request.y = "counter:efficiency";
  EXPECT_EQ(plot_figure(files, request).series.size(), 1U);
  request.y = "efficency";
  const std::string message = message_of(files, request);
  EXPECT_NE(message.find("--y: unknown field 'efficency'; did you mean 'efficiency'?"), std::string::npos) << message;
  request.y = "efficiency";
  request.x = "rank";
  EXPECT_NE(message_of(files, request).find("--x: unknown field 'rank'; did you mean 'ranks'?"), std::string::npos);
  request.x = "";
  EXPECT_NE(message_of(files, request).find("--x: expected the field"), std::string::npos);
  request.x = "ranks";
  request.where = {"algorithm=async-sgd"};
  EXPECT_NE(message_of(files, request).find("--where: no entry has algorithm=async-sgd"), std::string::npos);
  request.where = {"algorithm"};
  EXPECT_NE(message_of(files, request).find("--where: expected FIELD=VALUE"), std::string::npos);
}

TEST(ReportsPlot, CurvesOfRunsFromSeveralFilesAreNamedByWhatDiffers) {
  const std::vector<NamedResults> files = {file("threads", {run("sync-sgd", "threads", 0.84)}),
                                           file("mpi", {run("sync-sgd", "mpi", 0.83), run("async-sgd", "mpi", 0.79)})};
  PlotRequest request;
  request.y = "test_accuracy";
  Figure figure = plot_figure(files, request);
  EXPECT_EQ(titles(figure), (std::vector<std::string>{"sync-sgd, threads", "sync-sgd, mpi", "async-sgd, mpi"}));
  EXPECT_EQ(figure.x_label, "time (s)");
  // A curve by its y label, and the x picks among curves of that y.
  request.y = "accuracy";
  request.x = "iteration";
  figure = plot_figure(files, request);
  EXPECT_EQ(figure.series[0].points.front().first, 50);
  EXPECT_EQ(figure.x_label, "iteration");
  request.y = "error";
  EXPECT_NE(message_of(files, request).find("--x: the error curves are against time_s, not iteration"),
            std::string::npos);
}

}  // namespace
}  // namespace dsgd::reports
