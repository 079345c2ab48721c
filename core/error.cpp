#include "core/error.hpp"

#include <algorithm>
#include <cctype>

namespace dsgd {

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours, case ignored.
std::size_t edits(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

bool begins_with(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != lower(prefix[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> nearest_name(std::string_view name, const std::vector<std::string>& valid) {
  if (name.empty()) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_edits = std::clamp<std::size_t>(name.size() / 4, 1, 3) + 1;
  bool tied = false;
  for (const std::string& candidate : valid) {
    const std::size_t distance = edits(name, candidate);
    if (distance < best_edits) {
      best = candidate;
      best_edits = distance;
      tied = false;
    } else if (distance == best_edits && best) {
      tied = true;
    }
  }
  if (best && !tied) return best;
  std::optional<std::string> extended;
  for (const std::string& candidate : valid) {
    if (!begins_with(candidate, name)) continue;
    if (extended) return std::nullopt;
    extended = candidate;
  }
  return extended;
}

std::string unknown_name_message(std::string_view kind, std::string_view name, const std::vector<std::string>& valid) {
  std::string message = "unknown " + std::string(kind) + " '" + std::string(name) + "'; ";
  if (const auto near = nearest_name(name, valid)) message += "did you mean '" + *near + "'? ";
  return message + "valid values are: " + join(valid);
}

UnknownNameError::UnknownNameError(std::string_view kind, std::string_view name, const std::vector<std::string>& valid)
    : InputError(unknown_name_message(kind, name, valid)) {}

namespace detail {
void throw_enforce(const char* file, int line, const std::string& what) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": internal error: " + what);
}
}  // namespace detail

}  // namespace dsgd
