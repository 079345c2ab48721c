#pragma once
// dsgd's error policy (written out in docs/errors.md):
//  * Recoverable conditions -- a bad file, a bad option, an unknown name, a back end that is not available --
//    throw a subclass of dsgd::Error whose message is one line naming what was wrong, where, and what was
//    expected (the valid values when a name is unknown).
//  * Broken invariants (a bug in dsgd, not in the input) use DSGD_ENFORCE*, which throws InternalError with both
//    values and file:line.
//  * Library code never calls exit() or abort(); only app/ turns errors into exit codes.

#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd {

// Root of every error dsgd throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user's input is wrong: a file, an option, a name, a size. app/ maps this to exit code 2.
class InputError : public Error {
 public:
  using Error::Error;
};

// A name that is not in a registry or catalog. The message suggests the nearest valid name, if one is near, and
// lists them all.
class UnknownNameError : public InputError {
 public:
  // `kind` is what was looked up ("model", "platform", ...), `name` what the user asked for.
  UnknownNameError(std::string_view kind, std::string_view name, const std::vector<std::string>& valid);
};

// A file could not be read or written (missing, unreadable, disk full).
class IoError : public Error {
 public:
  using Error::Error;
};

// A back end or tool is not available on this machine (no GPU, no gnuplot, ...).
class UnavailableError : public Error {
 public:
  using Error::Error;
};

// Training diverged: a loss became NaN or infinite, the step is too large for the algorithm in its setting. Studies
// that run every algorithm with the same hyper-parameters record it as a result rather than stopping; the SimGrid
// executor brings it back from its simulation process with its class.
class DivergedError : public Error {
 public:
  using Error::Error;
};

// An invariant of dsgd itself does not hold: a bug. Thrown by DSGD_ENFORCE*.
class InternalError : public Error {
 public:
  using Error::Error;
};

// Joins names as "a, b, c" for messages that list valid values.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// The valid name a user most likely meant by `name`: the one fewest edits away (an insertion, a deletion, a changed
// or two swapped neighbouring characters, case ignored), if that is at most a quarter of its length (at least one
// edit, at most three), or the only one that begins with `name`. Empty when none is that near or two are equally near.
std::optional<std::string> nearest_name(std::string_view name, const std::vector<std::string>& valid);

// "unknown KIND 'NAME'; did you mean 'NEAREST'? valid values are: ..." (UnknownNameError's message, and a file
// reader's for a field that takes one of a list).
std::string unknown_name_message(std::string_view kind, std::string_view name, const std::vector<std::string>& valid);

namespace detail {
[[noreturn]] void throw_enforce(const char* file, int line, const std::string& what);

template <typename A, typename B>
[[noreturn]] void throw_enforce_cmp(const char* file, int line, const char* expression, const A& a, const B& b) {
  std::ostringstream out;
  out << expression << " does not hold: " << a << " vs " << b;
  throw_enforce(file, line, out.str());
}
}  // namespace detail

}  // namespace dsgd

// Broken-invariant checks. They stay on in release builds: the cost is a compare, the benefit a clear report.
#define DSGD_ENFORCE(cond, message)                                                                      \
  do {                                                                                                   \
    if (!(cond)) ::dsgd::detail::throw_enforce(__FILE__, __LINE__, std::string(#cond ": ") + (message)); \
  } while (false)

#define DSGD_ENFORCE_CMP_(a, b, op)                                                               \
  do {                                                                                            \
    const auto& dsgd_a_ = (a);                                                                    \
    const auto& dsgd_b_ = (b);                                                                    \
    if (!(dsgd_a_ op dsgd_b_))                                                                    \
      ::dsgd::detail::throw_enforce_cmp(__FILE__, __LINE__, #a " " #op " " #b, dsgd_a_, dsgd_b_); \
  } while (false)

#define DSGD_ENFORCE_EQ(a, b) DSGD_ENFORCE_CMP_(a, b, ==)
#define DSGD_ENFORCE_NE(a, b) DSGD_ENFORCE_CMP_(a, b, !=)
#define DSGD_ENFORCE_LT(a, b) DSGD_ENFORCE_CMP_(a, b, <)
#define DSGD_ENFORCE_LE(a, b) DSGD_ENFORCE_CMP_(a, b, <=)
#define DSGD_ENFORCE_GT(a, b) DSGD_ENFORCE_CMP_(a, b, >)
#define DSGD_ENFORCE_GE(a, b) DSGD_ENFORCE_CMP_(a, b, >=)
