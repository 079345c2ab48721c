#include <cmath>

#include "algorithms/entries.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

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

std::map<std::string, double> resolve_options(const AlgorithmInfo& info, const std::map<std::string, double>& given) {
  std::map<std::string, double> resolved;
  for (const auto& option : info.options) {
    const auto found = given.find(option.name);
    const double value = found == given.end() ? option.default_value : found->second;
    const std::string where = info.name + ": --" + option.name;
    if (!(value >= option.min && value <= option.max)) {
      throw InputError(where + " must be in [" + significant(option.min) + ", " + significant(option.max) + "], got " +
                       significant(value));
    }
    if (option.integer && value != std::floor(value)) {
      throw InputError(where + " must be a whole number, got " + significant(value));
    }
    resolved[option.name] = value;
  }
  for (const auto& [name, value] : given) {
    if (resolved.count(name)) continue;
    std::vector<std::string> owners;
    for (const auto& entry : algorithm_catalog()) {
      for (const auto& option : entry.info.options) {
        if (option.name == name) owners.push_back(entry.info.name);
      }
    }
    throw InputError("--" + name + " is not an option of " + info.name +
                     (owners.empty() ? "" : "; it is " + join(owners, " and ") + "'s"));
  }
  return resolved;
}

}  // namespace dsgd::algorithms
