#pragma once
// GoogleTest accepts only letters, digits and '_' in parameterised test names: turns free text ("allreduce
// recursive_doubling") into one.

#include <cctype>
#include <string>

namespace dsgd::testing {

inline std::string parameter_name(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

}  // namespace dsgd::testing
