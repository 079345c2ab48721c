#include "core/format.hpp"

#include <cstdarg>
#include <cstdio>

namespace dsgd {

std::string format(const char* pattern, ...) {
  std::va_list arguments;
  va_start(arguments, pattern);
  std::va_list counting;
  va_copy(counting, arguments);
  const int length = std::vsnprintf(nullptr, 0, pattern, counting);
  va_end(counting);
  std::string text(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
  if (length > 0) std::vsnprintf(text.data(), text.size() + 1, pattern, arguments);
  va_end(arguments);
  return text;
}

std::string fixed(double value, int digits) { return format("%.*f", digits, value); }

std::string significant(double value, int digits) { return format("%.*g", digits, value); }

}  // namespace dsgd
