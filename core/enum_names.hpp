#pragma once
// Names of an enum whose values run 0, 1, ..., N-1 in declaration order: one table serves to_string, the lookup
// by name and the list of valid names that UnknownNameError prints (docs/errors.md).
//
//   constexpr std::array<std::string_view, 3> kModeNames = {"all2all", "quadrant", "snc4"};  // declaration order
//   std::string_view to_string(Mode mode) { return name_of(mode, kModeNames); }
//   Mode mode_from_string(std::string_view name) { return from_name<Mode>("mode", name, kModeNames); }

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace dsgd {

template <std::size_t N>
using EnumNames = std::array<std::string_view, N>;

// The name of `value`; `fallback` for a value outside the table (an integer cast to the enum).
template <typename Enum, std::size_t N>
constexpr std::string_view name_of(Enum value, const EnumNames<N>& names, std::string_view fallback = "?") {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : fallback;
}

// The names in declaration order, as UnknownNameError and the option parsers take them.
template <std::size_t N>
std::vector<std::string> name_list(const EnumNames<N>& names) {
  return {names.begin(), names.end()};
}

// The value named `name`. Throws UnknownNameError(kind, name, valid names) for any other name.
template <typename Enum, std::size_t N>
Enum from_name(std::string_view kind, std::string_view name, const EnumNames<N>& names) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  throw UnknownNameError(kind, name, name_list(names));
}

}  // namespace dsgd
