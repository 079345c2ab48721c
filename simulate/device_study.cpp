#include "simulate/device_study.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/layer_kernels.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace {

// The device's kernel model, at the device's peak and memory.
KernelMachine device_machine(const platforms::Platform& platform) {
  if (platform.nodes.devices.empty() || !platform.nodes.devices.front().kernels) {
    throw InputError("platform '" + platform.name +
                     "': the device study needs a device with a kernel model ('kernels')");
  }
  const auto& device = platform.nodes.devices.front();
  return *kernel_machine(device.kernels, device.peak_flops, 1, {device.memory});
}

std::string fitted_text(const algorithms::DeviceThroughput& throughput) {
  return throughput.model + " at batch " + std::to_string(throughput.batch) + ": " +
         significant(throughput.images_per_second) + " images/s";
}

}  // namespace

DeviceIteration device_iteration(const KernelMachine& machine, const ModelSpec& model, std::int64_t batch) {
  DeviceIteration iteration;
  // On a device the whole iteration lives in its memory: the resident set chooses nothing there.
  constexpr double kResidentBytes = 0;
  for (const LayerKernel& kernel : iteration_kernels(model, batch)) {
    const KernelCost cost = kernel_cost(machine, kernel, kResidentBytes);
    iteration.seconds += cost.seconds;
    ++iteration.kernels;
    iteration.winograd_kernels += cost.winograd_tile > 0 ? 1 : 0;
  }
  // Plain SGD: read the weights and their gradients, write the weights (fp32), one streaming kernel.
  LayerKernel update;
  update.flops = 2.0 * static_cast<double>(model.parameters());
  update.bytes = 12.0 * static_cast<double>(model.parameters());
  iteration.seconds += kernel_cost(machine, update, kResidentBytes).seconds;
  ++iteration.kernels;
  return iteration;
}

DeviceStudyOutcome run_device_study(const algorithms::DeviceStudy& study) {
  DSGD_ENFORCE(study.fitted < study.throughputs.size(), "a device study fits one of its throughputs");
  platforms::Platform platform = platforms::load_platform(study.platform);
  DeviceStudyOutcome outcome;
  outcome.study = study.name;
  outcome.description = study.description;
  outcome.platform = platform.name;
  outcome.device = platform.nodes.devices.empty() ? "" : platform.nodes.devices.front().model;
  outcome.source = study.source;
  outcome.notes = study.notes;
  device_machine(platform);  // refuses a platform without a device kernel model before fitting

  const auto seconds_of = [](const platforms::Platform& at, const algorithms::DeviceThroughput& throughput) {
    return device_iteration(device_machine(at), build_model(throughput.model), throughput.batch).seconds;
  };
  const auto& fitted = study.throughputs[study.fitted];
  outcome.fitted_on = fitted_text(fitted);
  outcome.efficiency = solve_kernel_efficiency(
      platform, "conv", fitted.batch / fitted.images_per_second,
      [&](const platforms::Platform& at) { return seconds_of(at, fitted); }, study.name + ": " + outcome.fitted_on);
  set_kernel_efficiency(platform, "conv", outcome.efficiency, "FITTED on " + outcome.fitted_on);

  const KernelMachine machine = device_machine(platform);
  for (std::size_t i = 0; i < study.throughputs.size(); ++i) {
    const auto& throughput = study.throughputs[i];
    DeviceStudyRow row;
    row.model = throughput.model;
    row.batch = throughput.batch;
    row.iteration = device_iteration(machine, build_model(throughput.model), throughput.batch);
    row.images_per_second = throughput.batch / row.iteration.seconds;
    row.published = throughput.images_per_second;
    row.difference_percent = 100 * (row.images_per_second / row.published - 1);
    row.determined = i == study.fitted ? Determined::kFitted : Determined::kPredicted;
    outcome.rows.push_back(row);
  }
  return outcome;
}

std::string format_device_study(const DeviceStudyOutcome& outcome) {
  std::string out = "device study " + outcome.study + ": " + outcome.description + "\n";
  out += "device: " + outcome.device + " (" + outcome.platform + "), priced kernel by kernel by its kernel model\n";
  out += format("FITTED kernel-model efficiency = %.4f, on %s\n\n", outcome.efficiency, outcome.fitted_on.c_str());
  out += format("%-14s %6s %12s %12s %9s %12s %10s  %s\n", "model", "batch", "images/s", "published", "diff %",
                "s/iteration", "winograd", "determined");
  double worst = 0;
  std::string worst_row;
  for (const auto& row : outcome.rows) {
    out +=
        format("%-14s %6d %12.1f %12.1f %+9.1f %12.4f %4d of %-3d  %s\n", row.model.c_str(), row.batch,
               row.images_per_second, row.published, row.difference_percent, row.iteration.seconds,
               row.iteration.winograd_kernels, row.iteration.kernels, std::string(to_string(row.determined)).c_str());
    if (row.determined == Determined::kPredicted && std::abs(row.difference_percent) >= std::abs(worst)) {
      worst = row.difference_percent;
      worst_row = row.model + " at batch " + std::to_string(row.batch);
    }
  }
  if (!worst_row.empty())
    out += format("\nlargest difference among predicted rows: %s, %+.1f %%\n", worst_row.c_str(), worst);
  out += "published: " + outcome.source + "\n";
  for (const auto& note : outcome.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace dsgd::simulate
