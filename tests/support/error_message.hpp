#pragma once
// The message of the InputError an action throws, checked to be one line (docs/errors.md); fails the test when
// the action throws nothing.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"

namespace dsgd::testing {

inline std::string input_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "messages are one line: " << message;
    return message;
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

}  // namespace dsgd::testing
