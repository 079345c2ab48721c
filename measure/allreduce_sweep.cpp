#include "measure/allreduce_sweep.hpp"

#include <algorithm>

#include "core/collectives.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/verifiable.hpp"

namespace dsgd::measure {

void run_collective(Comm& comm, const std::string& variant, Floats values) {
  allreduce(comm, values, allreduce_algorithm_from_string(variant));
}

AllreduceSweep allreduce_sweep(Comm& comm, const AllreduceSweepOptions& options, const RunVariant& run) {
  if (options.rounds < 1) throw InputError("allreduce sweep: --rounds must be at least 1");
  if (options.sizes.empty()) throw InputError("allreduce sweep: no size to measure");
  if (options.variants.empty()) throw InputError("allreduce sweep: no variant to measure");
  const std::size_t sizes = options.sizes.size();
  const std::size_t variants = options.variants.size();
  const auto rounds = static_cast<std::size_t>(options.rounds);
  const auto ranks = static_cast<std::size_t>(comm.size());
  // This rank's times in its own slots; one sum over the ranks at the end gives every rank every time (the others'
  // slots are 0), instead of a reduction in the middle of each sample.
  std::vector<float> times(sizes * variants * rounds * ranks, 0.0F);
  const auto slot = [&](std::size_t s, std::size_t v, std::size_t r, std::size_t rank) {
    return ((s * variants + v) * rounds + r) * ranks + rank;
  };
  std::vector<float> values(*std::max_element(options.sizes.begin(), options.sizes.end()));
  float token = 0;
  for (std::size_t round = 0; round <= rounds; ++round) {
    for (std::size_t s = 0; s < sizes; ++s) {
      const Floats buffer{values.data(), options.sizes[s]};
      for (std::size_t k = 0; k < variants; ++k) {
        const std::size_t v = (k + round) % variants;
        verifiable::fill_inputs(buffer.span(), comm.rank());
        allreduce(comm, {&token, 1}, AllreduceAlgorithm::kRecursiveDoubling,
                  {Category::kWait, kFirstCollectiveTag + 1});
        const double start = comm.now_s();
        run(comm, options.variants[v], buffer);
        const double elapsed = comm.now_s() - start;
        if (round == 0) {
          verifiable::check_sums(buffer.span(), comm.size(), "allreduce " + options.variants[v]);
        } else {
          times[slot(s, v, round - 1, static_cast<std::size_t>(comm.rank()))] = static_cast<float>(elapsed);
        }
      }
    }
  }
  allreduce(comm, {times.data(), times.size()}, AllreduceAlgorithm::kRecursiveDoubling,
            {Category::kWait, kFirstCollectiveTag + 1});
  AllreduceSweep sweep{options.sizes, options.variants, comm.size(), {}};
  sweep.seconds.assign(sizes, std::vector<std::vector<double>>(variants, std::vector<double>(rounds)));
  for (std::size_t s = 0; s < sizes; ++s) {
    for (std::size_t v = 0; v < variants; ++v) {
      for (std::size_t r = 0; r < rounds; ++r) {
        const auto first = times.begin() + static_cast<std::ptrdiff_t>(slot(s, v, r, 0));
        sweep.seconds[s][v][r] = *std::max_element(first, first + static_cast<std::ptrdiff_t>(ranks));
      }
    }
  }
  return sweep;
}

std::vector<reports::Entry> to_entries(const AllreduceSweep& sweep, const std::string& executor) {
  std::vector<reports::Entry> entries;
  for (std::size_t s = 0; s < sweep.sizes.size(); ++s) {
    for (std::size_t v = 0; v < sweep.variants.size(); ++v) {
      const auto& samples = sweep.seconds[s][v];
      const reports::AllreduceTimes times{*std::min_element(samples.begin(), samples.end()), median(samples),
                                          *std::max_element(samples.begin(), samples.end()),
                                          static_cast<std::int64_t>(samples.size())};
      entries.push_back(
          reports::allreduce_entry(executor, "measured", sweep.variants[v], sweep.ranks, sweep.sizes[s], times));
    }
  }
  return entries;
}

}  // namespace dsgd::measure
