#include "algorithms/geeps/memory_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "core/error.hpp"

namespace dsgd::algorithms::geeps {

namespace {

// The distinct buffers of a step.
std::vector<std::uint32_t> touched(const Step& step) {
  std::vector<std::uint32_t> all = step.reads;
  all.insert(all.end(), step.writes.begin(), step.writes.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace

AccessPattern virtual_iteration(const ModelSpec& model, std::int64_t batch) {
  if (batch < 1) throw InputError("geeps: a batch of " + std::to_string(batch) + " images");
  AccessPattern pattern;
  const auto add = [&](std::string name, std::int64_t bytes) {
    pattern.buffers.push_back({std::move(name), static_cast<std::uint64_t>(bytes)});
    return static_cast<std::uint32_t>(pattern.buffers.size() - 1);
  };
  const auto batch_bytes = [&](std::int64_t per_image) { return per_image * batch; };
  const std::uint32_t input = add("input", batch_bytes(model.input.elements() * 4));
  struct LayerBuffers {
    std::int64_t parameters = -1;  // none
    std::uint32_t output = 0;
    std::uint32_t gradient = 0;
  };
  std::map<std::string, LayerBuffers> by_name;
  std::vector<const LayerSpec*> order;
  for (const auto& layer : model.layers) {
    LayerBuffers buffers;
    if (layer.parameters > 0) buffers.parameters = add("parameters:" + layer.name, layer.parameters * 4);
    buffers.output = add("output:" + layer.name, batch_bytes(layer.activation_bytes));
    buffers.gradient = add("gradient:" + layer.name, batch_bytes(layer.activation_bytes));
    by_name[layer.name] = buffers;
    order.push_back(&layer);
  }
  // A layer's inputs: the named layers' outputs (or their gradients); none named: the batch (whose gradient nothing
  // needs).
  const auto inputs_of = [&](std::size_t i, bool gradients) {
    std::vector<std::uint32_t> ids;
    const LayerSpec& layer = *order[i];
    if (layer.inputs.empty() && !gradients) ids.push_back(input);
    for (const auto& name : layer.inputs) {
      const auto& source = by_name.at(name);
      ids.push_back(gradients ? source.gradient : source.output);
    }
    return ids;
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& buffers = by_name.at(order[i]->name);
    Step step{"forward " + order[i]->name, inputs_of(i, false), {buffers.output}};
    if (buffers.parameters >= 0) step.reads.push_back(static_cast<std::uint32_t>(buffers.parameters));
    pattern.steps.push_back(std::move(step));
  }
  for (std::size_t i = order.size(); i-- > 0;) {
    const auto& buffers = by_name.at(order[i]->name);
    Step step{"backward " + order[i]->name, inputs_of(i, false), inputs_of(i, true)};
    step.reads.push_back(buffers.output);
    step.reads.push_back(buffers.gradient);
    if (buffers.parameters >= 0) {
      step.reads.push_back(static_cast<std::uint32_t>(buffers.parameters));
      step.writes.push_back(static_cast<std::uint32_t>(buffers.parameters));
    }
    pattern.steps.push_back(std::move(step));
  }
  return pattern;
}

std::uint64_t buffer_bytes(const AccessPattern& pattern) {
  std::uint64_t total = 0;
  for (const auto& buffer : pattern.buffers) total += buffer.bytes;
  return total;
}

MemoryPlan plan_memory(const AccessPattern& pattern, std::uint64_t device_bytes) {
  const std::size_t count = pattern.buffers.size();
  const std::size_t steps = pattern.steps.size();
  std::vector<std::vector<std::uint32_t>> needs(steps);
  const std::uint64_t total = buffer_bytes(pattern);
  const auto bytes_of = [&](const std::vector<std::uint32_t>& set) {
    std::uint64_t sum = 0;
    for (const auto b : set) sum += pattern.buffers[b].bytes;
    return sum;
  };
  for (std::size_t k = 0; k < steps; ++k) {
    needs[k] = touched(pattern.steps[k]);
    for (const auto b : needs[k]) {
      if (b >= count) {
        throw InputError("geeps: step '" + pattern.steps[k].name + "' names buffer " + std::to_string(b) + " of " +
                         std::to_string(count));
      }
    }
    if (bytes_of(needs[k]) > device_bytes) {
      throw InputError("geeps: step '" + pattern.steps[k].name + "' needs " + std::to_string(bytes_of(needs[k])) +
                       " bytes on the device at once, more than the " + std::to_string(device_bytes) + " it has");
    }
  }
  MemoryPlan plan;
  plan.fits = total <= device_bytes;
  if (plan.fits || steps == 0) {
    // Everything stays: after the first iteration nothing moves.
    plan.steps.assign(steps, StepPlan{{}, {}, 0, total});
    plan.peak_bytes = total;
    return plan;
  }
  // Steps (in the cyclic order of iterations) at which each buffer is used.
  std::vector<std::vector<std::size_t>> uses(count);
  for (std::size_t k = 0; k < steps; ++k) {
    for (const auto b : needs[k]) uses[b].push_back(k);
  }
  // How many steps after `step` buffer b is next used (cyclically; never: the largest value).
  const auto next_use = [&](std::uint32_t b, std::size_t step) {
    if (uses[b].empty()) return std::numeric_limits<std::size_t>::max();
    const auto later = std::upper_bound(uses[b].begin(), uses[b].end(), step);
    return later != uses[b].end() ? *later - step : uses[b].front() + steps - step;
  };
  // Whether step k reads buffer b. A buffer whose next use only writes it holds nothing anyone will read: it is
  // dropped without going back to the host, and made on the device without coming from it.
  std::vector<std::vector<std::uint32_t>> reads(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    reads[k] = pattern.steps[k].reads;
    std::sort(reads[k].begin(), reads[k].end());
  }
  const auto reads_at = [&](std::uint32_t b, std::size_t k) {
    return std::binary_search(reads[k % steps].begin(), reads[k % steps].end(), b);
  };
  std::vector<bool> resident(count, false);
  std::vector<bool> dirty(count, false);
  std::uint64_t used = 0;
  // Two iterations from an empty device; the second is the steady state the plan reports.
  for (int iteration = 0; iteration < 2; ++iteration) {
    for (std::size_t k = 0; k < steps; ++k) {
      StepPlan step;
      const auto& now = needs[k];
      std::vector<std::uint32_t> window = now;
      const auto& next = needs[(k + 1) % steps];
      window.insert(window.end(), next.begin(), next.end());
      std::sort(window.begin(), window.end());
      window.erase(std::unique(window.begin(), window.end()), window.end());
      // The next step's buffers come in beside this one's where both fit; else only this step's are kept.
      const auto& keep = bytes_of(window) <= device_bytes ? window : now;
      for (const auto b : now) {
        if (!resident[b] && reads_at(b, k)) step.stalled_bytes += pattern.buffers[b].bytes;
      }
      for (const auto b : keep) {
        if (resident[b]) continue;
        while (used + pattern.buffers[b].bytes > device_bytes) {
          // Belady: out goes the resident buffer not needed now or next whose next use is farthest.
          std::uint32_t victim = 0;
          std::size_t farthest = 0;
          bool found = false;
          for (std::uint32_t r = 0; r < count; ++r) {
            if (!resident[r] || std::binary_search(keep.begin(), keep.end(), r)) continue;
            const std::size_t distance = next_use(r, k);
            if (!found || distance > farthest) {
              victim = r;
              farthest = distance;
              found = true;
            }
          }
          DSGD_ENFORCE(found, "plan_memory: nothing to evict although the step's buffers fit");
          const std::size_t again = next_use(victim, k);
          const bool live = again != std::numeric_limits<std::size_t>::max() && reads_at(victim, k + again);
          if (dirty[victim] && live) step.to_host.push_back({victim, pattern.buffers[victim].bytes});
          resident[victim] = false;
          dirty[victim] = false;
          used -= pattern.buffers[victim].bytes;
        }
        // Its first user here is this step if it touches it, else the next one.
        const bool user_reads = std::binary_search(now.begin(), now.end(), b) ? reads_at(b, k) : reads_at(b, k + 1);
        if (user_reads) step.to_device.push_back({b, pattern.buffers[b].bytes});
        resident[b] = true;
        used += pattern.buffers[b].bytes;
      }
      for (const auto b : pattern.steps[k].writes) dirty[b] = true;
      step.resident_bytes = used;
      if (iteration == 1) {
        plan.peak_bytes = std::max(plan.peak_bytes, used);
        for (const auto& transfer : step.to_device) plan.to_device_bytes += transfer.bytes;
        for (const auto& transfer : step.to_host) plan.to_host_bytes += transfer.bytes;
        plan.steps.push_back(std::move(step));
      }
    }
  }
  return plan;
}

}  // namespace dsgd::algorithms::geeps
