#include "platforms/kernel_profile.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::platforms {

namespace {

// A profiled kernel of more than a minute is not a kernel: a unit typo (µs written as s), or hostile input.
constexpr double kMaxKernel_s = 60;
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;

const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names{"forward", "backward", "backward-data", "backward-weights"};
  return names;
}

}  // namespace

std::string_view to_string(ProfilePhase phase) { return phase_names()[static_cast<std::size_t>(phase)]; }

ProfilePhase profile_phase_from_string(std::string_view name) {
  const auto& names = phase_names();
  const auto found = std::find(names.begin(), names.end(), name);
  if (found == names.end()) throw UnknownNameError("kernel phase", name, names);
  return static_cast<ProfilePhase>(found - names.begin());
}

void KernelProfile::add(const ProfileKey& key, std::int64_t batch, double seconds) {
  if (key.model.empty() || key.layer.empty()) throw InputError("kernel profile: a kernel needs a model and a layer");
  const std::string kernel = shown_text(key.model) + "/" + shown_text(key.layer);
  if (key.threads < 0) throw InputError("kernel profile: negative threads for " + kernel);
  if (batch < 1 || batch > kMaxBatch) {
    throw InputError("kernel profile: batch " + std::to_string(batch) + " of " + kernel + " is not in [1, 2^30]");
  }
  if (!(seconds > 0) || seconds > kMaxKernel_s) {
    throw InputError("kernel profile: time " + significant(seconds) + " s of " + kernel + " is not in (0, 60] s");
  }
  auto& points = kernels_[key];
  const auto at = std::lower_bound(points.begin(), points.end(), batch,
                                   [](const ProfilePoint& point, std::int64_t b) { return point.batch < b; });
  if (at != points.end() && at->batch == batch) {
    at->seconds = seconds;
  } else {
    points.insert(at, {batch, seconds});
  }
}

std::optional<double> KernelProfile::seconds(const ProfileKey& key, std::int64_t batch) const {
  const auto found = kernels_.find(key);
  if (found == kernels_.end()) return std::nullopt;
  const auto& points = found->second;
  if (points.empty() || batch < points.front().batch || batch > points.back().batch) return std::nullopt;
  const auto upper = std::lower_bound(points.begin(), points.end(), batch,
                                      [](const ProfilePoint& point, std::int64_t b) { return point.batch < b; });
  if (upper->batch == batch) return upper->seconds;
  const ProfilePoint& lower = *(upper - 1);
  const double t = static_cast<double>(batch - lower.batch) / static_cast<double>(upper->batch - lower.batch);
  return lower.seconds + t * (upper->seconds - lower.seconds);
}

KernelProfile parse_kernel_profile(const JsonView& view) {
  view.allow_only({"device", "source", "kernels"});
  KernelProfile profile;
  profile.device = view.at("device").string();
  profile.source = view.at("source").string();
  if (profile.source.empty()) view.at("source").fail("expected how the times were taken, got \"\"");
  const JsonView kernels = view.at("kernels");
  const std::size_t count = kernels.size();
  if (count > kMaxProfileKernels) {
    kernels.fail("expected at most " + std::to_string(kMaxProfileKernels) + " kernels, got " + std::to_string(count));
  }
  for (std::size_t i = 0; i < count; ++i) {
    const JsonView item = kernels.at(i);
    item.allow_only({"model", "layer", "phase", "threads", "points"});
    ProfileKey key;
    key.model = item.at("model").string();
    key.layer = item.at("layer").string();
    key.phase = profile_phase_from_string(item.at("phase").one_of(phase_names()));
    const std::int64_t threads = item.at("threads").integer();
    if (threads < 0 || threads > (1 << 20)) item.at("threads").fail("expected threads in [0, 2^20]");
    key.threads = static_cast<int>(threads);
    if (key.model.empty() || key.layer.empty()) item.fail("a kernel needs a non-empty model and layer");
    if (profile.kernels().contains(key)) item.fail("repeats an earlier kernel; give each batch as one more point");
    const JsonView points = item.at("points");
    if (points.size() == 0) points.fail("expected at least one [batch, seconds] point");
    std::int64_t previous = 0;
    for (std::size_t p = 0; p < points.size(); ++p) {
      const JsonView point = points.at(p);
      if (point.size() != 2) point.fail("expected [batch, seconds]");
      const std::int64_t batch = point.at(std::size_t{0}).positive_integer();
      if (batch <= previous) point.fail("expected batches in ascending order, each once");
      previous = batch;
      const JsonView time = point.at(std::size_t{1});
      const double seconds = time.positive();
      if (seconds > kMaxKernel_s) time.fail("expected a kernel time of at most 60 s, got " + significant(seconds));
      if (batch > kMaxBatch) point.fail("expected a batch of at most 2^30");
      profile.add(key, batch, seconds);
    }
  }
  return profile;
}

Json to_json(const KernelProfile& profile) {
  Json kernels = Json::array();
  for (const auto& [key, points] : profile.kernels()) {
    Json pairs = Json::array();
    for (const ProfilePoint& point : points) pairs.push_back({point.batch, point.seconds});
    kernels.push_back({{"model", key.model},
                       {"layer", key.layer},
                       {"phase", std::string(to_string(key.phase))},
                       {"threads", key.threads},
                       {"points", std::move(pairs)}});
  }
  return {{"device", profile.device}, {"source", profile.source}, {"kernels", std::move(kernels)}};
}

KernelProfile load_kernel_profile(const std::filesystem::path& path) {
  const Json json = read_json_file(path);
  return parse_kernel_profile(JsonView(json, path.string()));
}

void attach_kernel_profile(Platform& platform, std::shared_ptr<const KernelProfile> profile) {
  if (platform.nodes.devices.empty()) {
    platform.nodes.cpu.profile = std::move(profile);
    return;
  }
  for (auto& group : platform.nodes.devices) group.profile = profile;
}

}  // namespace dsgd::platforms
