#pragma once
// printf-style formatting into std::string, the one set of number-to-text helpers for tables, messages and files.

#include <cstddef>
#include <string>
#include <string_view>

namespace dsgd {

// printf(pattern, ...) into a string, whatever its length.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
// `value` with `digits` digits after the point: fixed(2.0 / 3, 3) == "0.667".
std::string fixed(double value, int digits);
// `value` in %g style with `digits` significant digits: significant(0.1, 17) == "0.10000000000000001".
std::string significant(double value, int digits = 6);
// `text` for an error message: printable ASCII as is, any other byte as \xNN (a file must not put raw bytes or
// escape sequences on the terminal), at most `most` characters and "..." after.
std::string shown_text(std::string_view text, std::size_t most = 40);

}  // namespace dsgd
