#pragma once
// GoogleTest accepts only letters, digits and '_' in parameterised test names: turns free text ("allreduce
// recursive_doubling") into one; and names the (collective index, with gamma) parameters of the collective tests.

#include <cctype>
#include <string>
#include <tuple>

namespace dsgd::testing {

inline std::string parameter_name(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

// A name generator for parameters (index into `collectives()`, with gamma): "<collective>_gamma" or
// "<collective>_alpha_beta".
template <typename Collectives>
auto collective_gamma_name(Collectives collectives) {
  return [collectives](const auto& param_info) {
    return parameter_name(collectives().at(std::get<0>(param_info.param)).name) +
           (std::get<1>(param_info.param) ? "_gamma" : "_alpha_beta");
  };
}

}  // namespace dsgd::testing
