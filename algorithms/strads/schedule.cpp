#include "algorithms/strads/schedule.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/sequential_vertex_coloring.hpp>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/nn/random.hpp"

namespace dsgd::algorithms::strads {

namespace {

constexpr EnumNames<4> kSchedulerNames = {"serial", "shotgun", "strads-static", "strads-dynamic"};

// The greedy independent set of `candidates` (priority order) in the graph with an edge where |dot(a, b)| > tau.
template <typename Dot>
std::vector<std::uint32_t> independent_set(std::span<const std::uint32_t> candidates, double tau, Dot&& dot) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  const std::size_t count = candidates.size();
  Graph graph(count);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = i + 1; j < count; ++j) {
      if (std::abs(dot(candidates[i], candidates[j])) > tau) boost::add_edge(i, j, graph);
    }
  }
  // Greedy colouring in vertex order (the priority order): colour 0 goes to every vertex none of whose earlier
  // neighbours has it, which is the greedy maximal independent set.
  std::vector<Graph::vertices_size_type> colour(count);
  const auto colours = boost::make_iterator_property_map(colour.begin(), boost::get(boost::vertex_index, graph));
  boost::sequential_vertex_coloring(graph, colours);
  std::vector<std::uint32_t> kept;
  for (std::size_t i = 0; i < count; ++i) {
    if (colour[i] == 0) kept.push_back(candidates[i]);
  }
  return kept;
}

double uniform_open(std::uint64_t stream, std::uint64_t index) {
  return (static_cast<double>(nn::random_bits(stream, index) >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
}

class Serial final : public Scheduler {
 public:
  explicit Serial(std::size_t features) : features_(features) {}
  std::vector<std::uint32_t> next(std::span<const double>) override {
    const auto a = static_cast<std::uint32_t>(next_);
    next_ = (next_ + 1) % features_;
    return {a};
  }
  double cost_flops() const override { return 1; }

 private:
  std::size_t features_;
  std::size_t next_ = 0;
};

class Static final : public Scheduler {
 public:
  Static(std::size_t features, std::size_t coordinates) : features_(features), coordinates_(coordinates) {}
  std::vector<std::uint32_t> next(std::span<const double>) override {
    std::vector<std::uint32_t> block;
    for (std::size_t k = 0; k < coordinates_; ++k) block.push_back(static_cast<std::uint32_t>((next_ + k) % features_));
    next_ = (next_ + coordinates_) % features_;
    return block;
  }
  double cost_flops() const override { return static_cast<double>(coordinates_); }

 private:
  std::size_t features_;
  std::size_t coordinates_;
  std::size_t next_ = 0;
};

class Shotgun final : public Scheduler {
 public:
  Shotgun(std::size_t features, std::size_t coordinates, std::uint64_t seed)
      : features_(features), coordinates_(coordinates), stream_(nn::mix64(seed ^ 0x5307'6E75ULL)) {}
  std::vector<std::uint32_t> next(std::span<const double>) override {
    // Distinct draws: C is far below M in practice, so rejection of repeats is cheap.
    std::vector<std::uint32_t> chosen;
    while (chosen.size() < coordinates_) {
      const auto a = static_cast<std::uint32_t>(nn::random_bits(stream_, draws_++) % features_);
      if (std::find(chosen.begin(), chosen.end(), a) == chosen.end()) chosen.push_back(a);
    }
    return chosen;
  }
  // A draw and a search of the chosen per coordinate.
  double cost_flops() const override { return static_cast<double>(coordinates_ * (coordinates_ + 4)); }

 private:
  std::size_t features_;
  std::size_t coordinates_;
  std::uint64_t stream_;
  std::uint64_t draws_ = 0;
};

class Dynamic final : public Scheduler {
 public:
  Dynamic(const LassoProblem& problem, const SchedulerOptions& options)
      : problem_(problem),
        coordinates_(options.coordinates),
        candidates_(std::min(problem.features, options.candidates > 0 ? options.candidates : 2 * options.coordinates)),
        tau_(options.tau),
        stream_(nn::mix64(options.seed ^ 0xD1A'A41CULL)) {}

  std::vector<std::uint32_t> next(std::span<const double> change) override {
    // L candidates without replacement, P(a) proportional to w_a = change_a^2 + floor (Efraimidis and Spirakis:
    // the L largest keys log(u) / w). The floor, a thousandth of the mean weight, keeps every coordinate in play.
    const std::size_t m = problem_.features;
    double total = 0;
    for (std::size_t a = 0; a < m; ++a) total += change[a] * change[a];
    const double floor = total > 0 ? 1e-3 * total / static_cast<double>(m) : 1.0;
    keys_.resize(m);
    for (std::size_t a = 0; a < m; ++a) {
      const double weight = change[a] * change[a] + floor;
      keys_[a] = {std::log(uniform_open(stream_, round_ * m + a)) / weight, static_cast<std::uint32_t>(a)};
    }
    ++round_;
    std::nth_element(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(candidates_ - 1), keys_.end(),
                     std::greater<>());
    // Highest key first: the priority order the independent set is taken in.
    std::sort(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(candidates_), std::greater<>());
    computed_ = 0;
    std::vector<std::uint32_t> candidates(candidates_);
    for (std::size_t k = 0; k < candidates_; ++k) candidates[k] = keys_[k].second;
    auto chosen = independent_set(candidates, tau_, [this](std::uint32_t a, std::uint32_t b) { return dot(a, b); });
    if (chosen.size() > coordinates_) chosen.resize(coordinates_);
    return chosen;
  }

  // A key per feature (a logarithm and a division, counted as 20 operations), the selection, a look-up (10) per
  // pair of candidates, and a column dot product (2 operations per non-zero) per pair the cache lacked.
  double cost_flops() const override {
    const double m = static_cast<double>(problem_.features);
    const double column_nnz = static_cast<double>(problem_.nnz()) / m;
    const double l = static_cast<double>(candidates_);
    return 22.0 * m + 5.0 * l * (l - 1) + 2.0 * column_nnz * static_cast<double>(computed_);
  }

 private:
  // x_a . x_b, each pair computed once while the cache has room: the prioritised draws come back to the same
  // coordinates round after round, so most of a round's pairs were seen before.
  double dot(std::uint32_t a, std::uint32_t b) {
    const std::uint64_t key = std::uint64_t{std::min(a, b)} << 32 | std::max(a, b);
    if (const auto found = cache_.find(key); found != cache_.end()) return found->second;
    const double value = column_dot(problem_, a, b);
    ++computed_;
    if (cache_.size() < kCachedPairs) cache_.emplace(key, value);
    return value;
  }

  // About 50 MB of pairs at most.
  static constexpr std::size_t kCachedPairs = 1 << 20;

  const LassoProblem& problem_;
  std::size_t coordinates_;
  std::size_t candidates_;
  double tau_;
  std::uint64_t stream_;
  std::uint64_t round_ = 0;
  std::vector<std::pair<double, std::uint32_t>> keys_;
  std::unordered_map<std::uint64_t, double> cache_;
  std::uint64_t computed_ = 0;  // dot products the last round computed
};

}  // namespace

std::string_view to_string(SchedulerKind kind) { return name_of(kind, kSchedulerNames); }

SchedulerKind scheduler_from_string(std::string_view name) {
  return from_name<SchedulerKind>("Lasso scheduler", name, kSchedulerNames);
}

std::vector<std::string> scheduler_names() { return name_list(kSchedulerNames); }

std::vector<std::uint32_t> independent_candidates(const LassoProblem& problem,
                                                  std::span<const std::uint32_t> candidates, double tau) {
  return independent_set(candidates, tau, [&](std::uint32_t a, std::uint32_t b) { return column_dot(problem, a, b); });
}

std::unique_ptr<Scheduler> make_scheduler(const LassoProblem& problem, const SchedulerOptions& options) {
  const std::size_t m = problem.features;
  if (options.coordinates == 0 || options.coordinates > m) {
    throw InputError("lasso: --coordinates " + std::to_string(options.coordinates) + " is not in [1, " +
                     std::to_string(m) + "] (the problem's features)");
  }
  if (options.kind == SchedulerKind::kDynamic) {
    if (options.candidates != 0 && options.candidates < options.coordinates) {
      throw InputError("lasso: --candidates " + std::to_string(options.candidates) + " is below --coordinates " +
                       std::to_string(options.coordinates) + " (strads-dynamic picks L > C candidates)");
    }
    if (!(options.tau >= 0 && options.tau <= 1)) {
      throw InputError("lasso: --tau " + std::to_string(options.tau) + " is not a correlation in [0, 1]");
    }
  }
  switch (options.kind) {
    case SchedulerKind::kSerial:
      return std::make_unique<Serial>(m);
    case SchedulerKind::kShotgun:
      return std::make_unique<Shotgun>(m, options.coordinates, options.seed);
    case SchedulerKind::kStatic:
      return std::make_unique<Static>(m, options.coordinates);
    case SchedulerKind::kDynamic:
      return std::make_unique<Dynamic>(problem, options);
  }
  throw InternalError("make_scheduler: unknown kind");
}

}  // namespace dsgd::algorithms::strads
