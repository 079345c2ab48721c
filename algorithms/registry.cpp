#include "algorithms/entries.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms {

namespace {

// The built-in algorithms, then those a program added (add_algorithm).
std::vector<AlgorithmEntry>& catalog_entries() {
  static std::vector<AlgorithmEntry> catalog = [] {
    std::vector<AlgorithmEntry> entries = {sync_sgd_entry(), async_sgd_entry(), async_msgd_entry(),
                                           hogwild_sgd_entry()};
    for (auto& entry : original_easgd_entries()) entries.push_back(std::move(entry));
    for (auto entry : {async_easgd_entry(), async_measgd_entry(), hogwild_easgd_entry()}) {
      entries.push_back(std::move(entry));
    }
    for (auto& entry : sync_easgd_entries()) entries.push_back(std::move(entry));
    for (auto entry : {ssp_sgd_entry(), a_bsp_sgd_entry()}) entries.push_back(std::move(entry));  // seed 004
    entries.push_back(wfbp_sgd_entry());    // issue 25's communication schemes, after seed 000's algorithms
    entries.push_back(hybrid_sgd_entry());  // seed 001 (dMath)
    for (auto& entry : dogwild_entries()) entries.push_back(std::move(entry));  // seed 002
    entries.push_back(geeps_entry());                                           // seed 003
    return entries;
  }();
  return catalog;
}

}  // namespace

const std::vector<AlgorithmEntry>& algorithm_catalog() { return catalog_entries(); }

const AlgorithmEntry& add_algorithm(AlgorithmEntry entry) {
  if (entry.info.name.empty() || !entry.make) {
    throw InputError("add_algorithm: an algorithm needs a name and a factory");
  }
  for (const auto& existing : catalog_entries()) {
    if (existing.info.name == entry.info.name) {
      throw InputError("add_algorithm: the catalog already has an algorithm named '" + entry.info.name + "'");
    }
  }
  return catalog_entries().emplace_back(std::move(entry));
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto& entry : algorithm_catalog()) names.push_back(entry.info.name);
  return names;
}

const AlgorithmEntry& find_algorithm(const std::string& name) {
  for (const auto& entry : algorithm_catalog()) {
    if (entry.info.name == name) return entry;
  }
  throw UnknownNameError("algorithm", name, algorithm_names());
}

}  // namespace dsgd::algorithms
