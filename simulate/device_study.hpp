#pragma once
// Single-device training rates predicted by the kernel model by shape (simulate/kernel_cost.hpp) beside published
// ones (algorithms::DeviceStudy; docs/simulation.md "Single devices"): every kernel of an iteration priced on the
// device's description, plus the optimizer's update, with the description's one efficiency FITTED on one published
// rate and every other rate predicted with it. This is the check that one efficiency per device carries from one
// model and batch to the others.

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/studies.hpp"
#include "core/model_zoo.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/scaling_study.hpp"

namespace dsgd::simulate {

// One iteration of `model` at `batch` images on `machine`: every kernel of iteration_kernels, then a plain SGD
// update reading the weights and gradients and writing the weights.
struct DeviceIteration {
  double seconds = 0;
  int kernels = 0;
  int winograd_kernels = 0;  // priced as Winograd F(2x2, 3x3), the faster form
};
DeviceIteration device_iteration(const KernelMachine& machine, const ModelSpec& model, std::int64_t batch);

struct DeviceStudyRow {
  std::string model;
  int batch = 0;
  DeviceIteration iteration;
  double images_per_second = 0;  // predicted
  double published = 0;
  double difference_percent = 0;  // predicted against published
  Determined determined = Determined::kPredicted;
};

struct DeviceStudyOutcome {
  std::string study;
  std::string description;
  std::string platform;
  std::string device;
  std::string source;
  double efficiency = 0;  // FITTED
  std::string fitted_on;  // "resnet50 at batch 64: 219 images/s"
  std::vector<DeviceStudyRow> rows;
  std::vector<std::string> notes;
};

// Throws InputError where the platform's device has no kernel model or the fitted rate is out of the model's reach
// at an efficiency of 1.
DeviceStudyOutcome run_device_study(const algorithms::DeviceStudy& study);

// The table, the FITTED line and the notes.
std::string format_device_study(const DeviceStudyOutcome& outcome);

}  // namespace dsgd::simulate
