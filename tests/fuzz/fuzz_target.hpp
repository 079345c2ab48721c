#pragma once
// What every fuzz target of tests/fuzz/ shares: the input as bytes and as text, and the rule that hostile input may
// only ever raise an InputError (exit 2 from dsgd). Any other exception escapes to libFuzzer, which reports it as a
// crash, as it does for the sanitizers' findings (scripts/fuzz.sh, docs/testing.md "Fuzzing").

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace dsgd::fuzz {

inline std::vector<std::uint8_t> bytes_of(const std::uint8_t* data, std::size_t size) { return {data, data + size}; }

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse` on the input; an InputError is the expected answer to bad input.
template <typename Parse>
int expect_only_input_errors(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace dsgd::fuzz
