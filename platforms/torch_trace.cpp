#include "platforms/torch_trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::platforms {

namespace {

// Trace times are µs; the autograd profiler's are whole µs, truncated, so a child can seem to end up to 1 µs after
// its parent, and an operator under 1 µs shows as 0 (charged half the resolution: a time must be positive).
constexpr double kResolution_us = 1.0;
constexpr std::string_view kBackwardPrefix = "autograd::engine::evaluate_function: ";

struct Event {
  std::string thread;  // (pid, tid), whatever their types (the autograd profiler's pid is a string)
  std::string name;
  double start_us = 0;
  double duration_us = 0;
};

std::vector<std::string> names_of(LayerKind kind, bool backward) {
  switch (kind) {
    case LayerKind::kConvolution:
      if (backward) {
        return {"ConvolutionBackward0", "MkldnnConvolutionBackward0", "CudnnConvolutionBackward0",
                "ThnnConv2DBackward0", "SlowConv2DBackward0"};
      }
      return {"aten::conv2d", "aten::convolution", "aten::_convolution"};
    case LayerKind::kMaxPool:
      if (backward) return {"MaxPool2DWithIndicesBackward0", "MaxPool2DBackward0", "MkldnnMaxPool2DBackward0"};
      return {"aten::max_pool2d", "aten::max_pool2d_with_indices", "aten::mkldnn_max_pool2d"};
    case LayerKind::kAveragePool:
      if (backward) return {"AvgPool2DBackward0", "AdaptiveAvgPool2DBackward0", "MeanBackward1"};
      return {"aten::avg_pool2d", "aten::adaptive_avg_pool2d", "aten::mean"};
    case LayerKind::kReLU:
      if (backward) return {"ReluBackward0", "ThresholdBackward0"};
      return {"aten::relu", "aten::relu_", "aten::threshold", "aten::threshold_"};
    case LayerKind::kLocalResponseNorm:
      return {};  // torch composes it of several operators: no one event stands for it
    case LayerKind::kBatchNorm:
      if (backward) return {"NativeBatchNormBackward0", "CudnnBatchNormBackward0", "MkldnnBatchNormBackward0"};
      return {"aten::batch_norm"};
    case LayerKind::kInnerProduct:
      if (backward) return {"AddmmBackward0", "MmBackward0", "LinearBackward0"};
      return {"aten::linear", "aten::addmm", "aten::matmul"};
    case LayerKind::kDropout:
      if (backward) return {"NativeDropoutBackward0", "MulBackward0"};
      return {"aten::dropout", "aten::native_dropout", "aten::feature_dropout"};
    case LayerKind::kSoftmax:
      if (backward) return {"NllLossBackward0", "LogSoftmaxBackward0", "SoftmaxBackward0"};
      return {"aten::cross_entropy_loss", "aten::log_softmax", "aten::softmax", "aten::nll_loss_nd", "aten::nll_loss"};
    case LayerKind::kConcat:
      if (backward) return {"CatBackward0"};
      return {"aten::cat"};
    case LayerKind::kEltwiseAdd:
      if (backward) return {"AddBackward0"};
      return {"aten::add"};
  }
  return {};
}

// Backward functions that belong to the layer whose gradient function ran just before them: its parameters'
// gradient accumulation and a linear layer's weight transpose.
bool parameter_bookkeeping(std::string_view name) {
  return name == "torch::autograd::AccumulateGrad" || name == "TBackward0";
}

bool matches(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<Event> read_events(const Json& json, const std::string& source) {
  const Json* list = &json;
  if (json.is_object()) {
    const auto found = json.find("traceEvents");
    if (found == json.end()) throw InputError(source + ": not a Chrome trace: no \"traceEvents\" array");
    list = &*found;
  }
  if (!list->is_array()) {
    throw InputError(source + ": not a Chrome trace: expected an array of events or {\"traceEvents\": [...]}");
  }
  std::vector<Event> events;
  std::size_t index = 0;
  for (const Json& item : *list) {
    const std::string where = source + ": event " + std::to_string(index++);
    if (!item.is_object()) throw InputError(where + " is not an object");
    const auto phase = item.find("ph");
    if (phase == item.end() || !phase->is_string() || *phase != "X") continue;
    // Kineto marks operators "cpu_op"; its Python frames, device kernels and step annotations are left out.
    const auto category = item.find("cat");
    if (category != item.end() && (!category->is_string() || *category != "cpu_op")) continue;
    const auto name = item.find("name");
    const auto ts = item.find("ts");
    const auto dur = item.find("dur");
    if (name == item.end() || !name->is_string()) throw InputError(where + " has no name");
    if (ts == item.end() || dur == item.end() || !ts->is_number() || !dur->is_number()) {
      throw InputError(where + " ('" + shown_text(name->get<std::string>()) + "') has no numeric ts and dur");
    }
    const double start = ts->get<double>();
    const double duration = dur->get<double>();
    if (!std::isfinite(start) || !std::isfinite(duration) || duration < 0) {
      throw InputError(where + " ('" + shown_text(name->get<std::string>()) + "') has a negative or non-finite time");
    }
    const auto pid = item.find("pid");
    const auto tid = item.find("tid");
    events.push_back({(pid == item.end() ? "" : pid->dump()) + "/" + (tid == item.end() ? "" : tid->dump()),
                      name->get<std::string>(), start, duration});
  }
  return events;
}

// The top-level events of each thread (no other event of the thread encloses them), in start order.
std::vector<Event> top_level(std::vector<Event> events) {
  std::map<std::string, std::vector<Event>> by_thread;
  for (Event& event : events) by_thread[event.thread].push_back(std::move(event));
  std::vector<Event> tops;
  for (auto& [thread, list] : by_thread) {
    std::stable_sort(list.begin(), list.end(), [](const Event& a, const Event& b) {
      return a.start_us != b.start_us ? a.start_us < b.start_us : a.duration_us > b.duration_us;
    });
    double open_until = -INFINITY;
    for (Event& event : list) {
      // Inside the open top-level event where it ends no later than it (within the resolution).
      if (event.start_us + event.duration_us > open_until + kResolution_us) {
        open_until = event.start_us + event.duration_us;
        tops.push_back(std::move(event));
      }
    }
  }
  std::stable_sort(tops.begin(), tops.end(), [](const Event& a, const Event& b) { return a.start_us < b.start_us; });
  return tops;
}

double seconds_of(const Event& event) { return std::max(event.duration_us, kResolution_us / 2) * 1e-6; }

}  // namespace

TraceProfile profile_from_torch_trace(const Json& json, const std::string& source, const ModelSpec& model,
                                      std::int64_t batch, int threads) {
  // A GPU's kernels run on its streams, later than the CPU operators that launch them: their times need the
  // trace's device events and the links to their operators, which this reader does not follow yet.
  if (threads < 1) throw InputError(source + ": only a CPU trace is read (threads >= 1), not a GPU's kernels yet");
  const std::vector<Event> tops = top_level(read_events(json, source));
  // The backward starts at the first function the autograd engine ran.
  const auto backward_begin = std::find_if(tops.begin(), tops.end(),
                                           [](const Event& event) { return event.name.starts_with(kBackwardPrefix); });
  TraceProfile result;
  const auto record = [&](const LayerSpec& layer, ProfilePhase phase, std::optional<double> seconds) {
    if (seconds) {
      result.profile.add({model.name, layer.name, phase, threads}, batch, *seconds);
    } else {
      result.unmatched.push_back(layer.name + " " + std::string(to_string(phase)));
    }
  };
  // Forward: each layer takes the next operator of its kind (the loss, the run of loss operators).
  auto next = tops.begin();
  for (const LayerSpec& layer : model.layers) {
    const auto names = names_of(layer.kind, false);
    const auto found = std::find_if(next, backward_begin, [&](const Event& e) { return matches(names, e.name); });
    std::optional<double> seconds;
    if (found != backward_begin) {
      seconds = seconds_of(*found);
      next = found + 1;
      while (layer.kind == LayerKind::kSoftmax && next != backward_begin && matches(names, next->name)) {
        *seconds += seconds_of(*next++);
      }
    }
    record(layer, ProfilePhase::kForward, seconds);
  }
  // Backward, last layer first: the layer's gradient function, then its parameters' bookkeeping.
  next = backward_begin;
  const auto function_name = [](const Event& event) {
    return std::string_view(event.name).substr(std::min(event.name.size(), kBackwardPrefix.size()));
  };
  for (auto layer = model.layers.rbegin(); layer != model.layers.rend(); ++layer) {
    const auto names = names_of(layer->kind, true);
    const auto found = std::find_if(next, tops.end(), [&](const Event& e) {
      return e.name.starts_with(kBackwardPrefix) && matches(names, function_name(e));
    });
    std::optional<double> seconds;
    if (found != tops.end()) {
      seconds = seconds_of(*found);
      next = found + 1;
      while (next != tops.end() && next->name.starts_with(kBackwardPrefix) &&
             (parameter_bookkeeping(function_name(*next)) ||
              (layer->kind == LayerKind::kSoftmax && matches(names, function_name(*next))))) {
        *seconds += seconds_of(*next++);
      }
    }
    record(*layer, ProfilePhase::kBackward, seconds);
  }
  if (result.profile.empty()) {
    throw InputError(source + ": no operator of the trace matches a layer of " + model.name +
                     " (is it a PyTorch profiler trace of one training iteration of that model?)");
  }
  result.profile.device = "PyTorch on the CPU, " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
  result.profile.source = "read from the PyTorch profiler trace " + source + " (one iteration of " + model.name +
                          ", batch " + std::to_string(batch) + "): the top-level operator of each layer";
  return result;
}

TraceProfile profile_from_torch_trace(const std::filesystem::path& path, const ModelSpec& model, std::int64_t batch,
                                      int threads) {
  return profile_from_torch_trace(read_json_file(path), path.string(), model, batch, threads);
}

}  // namespace dsgd::platforms
