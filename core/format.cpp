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

std::string shown_text(std::string_view text, std::size_t most) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < most; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  if (text.size() > most) out += "...";
  return out;
}

}  // namespace dsgd
