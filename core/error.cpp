#include "core/error.hpp"

namespace dsgd {

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

UnknownNameError::UnknownNameError(std::string_view kind, std::string_view name, const std::vector<std::string>& valid)
    : InputError("unknown " + std::string(kind) + " '" + std::string(name) + "'; valid values are: " + join(valid)) {}

namespace detail {
void throw_enforce(const char* file, int line, const std::string& what) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": internal error: " + what);
}
}  // namespace detail

}  // namespace dsgd
