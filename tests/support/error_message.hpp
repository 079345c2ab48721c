#pragma once
// The message of the error of type E an action throws, checked to be one line (docs/errors.md); fails the test
// when the action throws nothing of that type.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"

namespace dsgd::testing {

template <typename E>
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const E& e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "messages are one line: " << message;
    return message;
  }
  ADD_FAILURE() << "expected an error of the named type";
  return "";
}

inline std::string input_error(const std::function<void()>& action) { return error_of<InputError>(action); }

// The action throws an InputError (one line) whose message contains `fragment`.
inline void expect_input_error(const std::function<void()>& action, const std::string& fragment) {
  const std::string message = input_error(action);
  EXPECT_NE(message.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << message;
}

}  // namespace dsgd::testing
