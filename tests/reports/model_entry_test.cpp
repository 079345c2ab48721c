// reports/model_entry.hpp: a model of the zoo as its catalog entry. LeNet's counts are checked by hand (431,080
// parameters, as Caffe's example has them); VGG-16 carries a published multiply-add count and the designed CIFAR
// AlexNet no published figure at all.
#include "reports/model_entry.hpp"

#include <gtest/gtest.h>

namespace dsgd::reports {
namespace {

TEST(ReportsModelEntry, LeNetsCountsAndItsPublishedParameters) {
  const ModelSpec lenet = build_model("lenet");
  const Entry entry = to_entry(lenet);
  EXPECT_EQ(entry.name, "lenet");
  EXPECT_EQ(entry.model, "lenet");
  EXPECT_EQ(entry.executor, "catalog");
  EXPECT_EQ(entry.fidelity, "static");
  EXPECT_EQ(entry.labels.at("kind"), "model");
  EXPECT_EQ(entry.labels.at("description"), lenet.description);
  EXPECT_EQ(entry.labels.at("input"), "1×28×28");
  EXPECT_EQ(entry.labels.at("published_source"), lenet.published.source);
  EXPECT_EQ(entry.counters.at("layers"), static_cast<double>(lenet.layers.size()));
  EXPECT_EQ(entry.counters.at("parameters"), 431080);
  EXPECT_EQ(entry.counters.at("bytes_fp32"), 4 * 431080);
  EXPECT_EQ(entry.counters.at("bytes_fp16"), 2 * 431080);
  EXPECT_EQ(entry.counters.at("forward_flops"), lenet.forward_flops());
  EXPECT_EQ(entry.counters.at("activation_bytes"), static_cast<double>(lenet.activation_bytes()));
  EXPECT_EQ(entry.counters.at("flops_per_parameter"), lenet.forward_flops() / 431080);
  EXPECT_EQ(entry.counters.at("published_parameters"), 431080);
  EXPECT_EQ(entry.counters.at("parameters_diff_percent"), 0);
  EXPECT_EQ(entry.counters.count("published_forward_multiply_adds"), 0U);  // none is published for LeNet
}

TEST(ReportsModelEntry, PublishedFiguresOnlyWhereTheZooHasThem) {
  const Entry vgg = to_entry(build_model("vgg16"));
  EXPECT_EQ(vgg.labels.at("input"), "3×224×224");
  EXPECT_EQ(vgg.counters.at("published_parameters"), 138357544);
  EXPECT_EQ(vgg.counters.at("published_forward_multiply_adds"), 15.47e9);
  const Entry cifar = to_entry(build_model("cifar10_alexnet"));
  EXPECT_EQ(cifar.counters.count("published_parameters"), 0U);
  EXPECT_EQ(cifar.counters.count("parameters_diff_percent"), 0U);
  EXPECT_EQ(cifar.counters.count("published_forward_multiply_adds"), 0U);
}

}  // namespace
}  // namespace dsgd::reports
