#include "core/json.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"

namespace dsgd {

namespace {

// nlohmann's messages start "[json.exception.parse_error.101] parse error at line 3, column 14: ..." -- keep the
// part after the position, which says what was expected.
std::string strip_nlohmann_prefix(const std::string& what) {
  const auto column = what.find("column ");
  if (column != std::string::npos) {
    const auto colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  const auto bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// Line and column (1-based) of the byte *before* `byte` (nlohmann's parse_error::byte is one past the culprit).
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string position(std::string_view text, std::size_t offset, const std::string& source) {
  const auto [line, column] = line_column(text, offset + 1);
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

// nlohmann reports a number it cannot hold ("number overflow parsing '1e400'") without a position: find the token.
[[noreturn]] void number_out_of_range(std::string_view text, const std::string& source, const std::string& what) {
  std::string token;
  if (const auto open = what.find("parsing '"); open != std::string::npos) {
    const auto begin = open + 9;
    if (const auto close = what.find('\'', begin); close != std::string::npos)
      token = what.substr(begin, close - begin);
  }
  const auto at = token.empty() ? std::string_view::npos : text.find(token);
  const std::string where = at == std::string_view::npos ? source : position(text, at, source);
  throw InputError(where + ": JSON number out of range" + (token.empty() ? "" : ": " + token) +
                   " (beyond a 64-bit integer or double)");
}

// Checks what nlohmann accepts but dsgd's loaders must not: an object that names one key twice (nlohmann keeps the
// last one silently, so a typo-free duplicate would override a value unseen) and nesting beyond kMaxJsonDepth
// (no dsgd file nests more than ten levels; deeper input is hostile and recursive code over it could exhaust the
// stack). Runs on text nlohmann has parsed, so strings are well-formed; keys are compared as spelled.
void check_structure(std::string_view text, const std::string& source) {
  struct Frame {
    bool object = false;
    bool expect_key = false;
    std::vector<std::string_view> keys;
  };
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      // A comment (the parser accepted it): its quotes and brackets are not the document's.
      const bool line = text[i + 1] == '/';
      const std::size_t end = line ? text.find('\n', i + 2) : text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + (line ? 0 : 1);
    } else if (c == '"') {
      const std::size_t begin = i + 1;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (!frames.empty() && frames.back().object && frames.back().expect_key) {
        Frame& frame = frames.back();
        const std::string_view key = text.substr(begin, i - begin);
        if (std::find(frame.keys.begin(), frame.keys.end(), key) != frame.keys.end()) {
          throw InputError(position(text, begin - 1, source) + ": JSON object names '" + std::string(key) +
                           "' twice (the first value would be ignored)");
        }
        frame.keys.push_back(key);
        frame.expect_key = false;
      }
    } else if (c == '{' || c == '[') {
      if (frames.size() >= kMaxJsonDepth) {
        throw InputError(position(text, i, source) + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                         " levels");
      }
      frames.push_back({c == '{', c == '{', {}});
    } else if (c == '}' || c == ']') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',' && !frames.empty() && frames.back().object) {
      frames.back().expect_key = true;
    }
  }
}

}  // namespace

Json parse_json(std::string_view text, const std::string& source) {
  Json json;
  try {
    // Comments (// and /* */) are allowed: a platform file written from a commented starting point keeps its notes.
    json = Json::parse(text.begin(), text.end(), nullptr, true, true);
  } catch (const Json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte);
    throw InputError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": JSON syntax error: " + strip_nlohmann_prefix(e.what()));
  } catch (const Json::out_of_range& e) {
    number_out_of_range(text, source, e.what());
  } catch (const Json::exception& e) {
    throw InputError(source + ": JSON error: " + strip_nlohmann_prefix(e.what()));
  }
  check_structure(text, source);
  return json;
}

std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes, double memory_per_byte) {
  // A file the user named that is not there is an input error (exit 2); one that is there but unreadable is not.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw InputError(path.string() + ": no such file");
  if (status.type() == std::filesystem::file_type::directory) {
    throw InputError(path.string() + ": is a folder, not a file");
  }
  const auto too_large = [&](const std::string& size) {
    return InputError(path.string() + ": holds " + size + "; dsgd reads at most " +
                      bytes_text(static_cast<double>(max_bytes)) + " from a file of this kind");
  };
  // The size before any byte is read: a 1 GB file given as a platform took 2.3-4.4 GB before its first error.
  if (std::filesystem::is_regular_file(status)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) throw IoError(path.string() + ": cannot read the size: " + ec.message());
    if (size > max_bytes) throw too_large(bytes_text(static_cast<double>(size)));
    check_available_memory(static_cast<double>(size) * memory_per_byte, path.string() + ": reading it needs ",
                           " (" + significant(memory_per_byte, 3) + " bytes per byte of the file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open for reading");
  // Chunks up to one past the limit: a FIFO or a device (/dev/zero) has no size to check first.
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) throw too_large("more than " + bytes_text(static_cast<double>(max_bytes)));
  }
  if (in.bad()) throw IoError(path.string() + ": read failed");
  return text;
}

Json read_json_file(const std::filesystem::path& path) {
  return parse_json(read_text_file(path, kMaxTextFileBytes, kJsonBytesPerTextByte), path.string());
}

JsonView::JsonView(const Json& node, std::string source, std::string path)
    : node_(&node), source_(std::move(source)), path_(std::move(path)) {}

void JsonView::fail(const std::string& what) const { throw InputError(source_ + ": " + path() + ": " + what); }

std::string JsonView::describe() const {
  // Containers by their size: rendering one would recurse through all of it (and input may nest deep).
  if (node_->is_array()) return "an array of " + std::to_string(node_->size()) + " elements";
  if (node_->is_object()) return "an object of " + std::to_string(node_->size()) + " members";
  std::string shown = node_->dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return std::string(node_->type_name()) + " " + shown;
}

void JsonView::expect_object() const {
  if (!node_->is_object()) fail("expected an object, got " + describe());
}

bool JsonView::has(std::string_view key) const { return node_->is_object() && node_->contains(key); }

JsonView JsonView::at(std::string_view key) const {
  expect_object();
  const auto it = node_->find(key);
  if (it == node_->end()) {
    if (gathered_) gathered_->reported_paths.push_back(path_ + "/" + escape_pointer_token(key));
    fail("missing required field '" + std::string(key) + "'");
  }
  return child(*it, path_ + "/" + escape_pointer_token(key));
}

std::optional<JsonView> JsonView::find(std::string_view key) const {
  expect_object();
  const auto it = node_->find(key);
  if (it == node_->end()) return std::nullopt;
  return child(*it, path_ + "/" + escape_pointer_token(key));
}

std::size_t JsonView::size() const {
  if (!node_->is_array()) fail("expected an array, got " + describe());
  return node_->size();
}

JsonView JsonView::at(std::size_t index) const {
  DSGD_ENFORCE_LT(index, size());
  return child((*node_)[index], path_ + "/" + std::to_string(index));
}

std::vector<std::string> JsonView::keys() const {
  expect_object();
  std::vector<std::string> out;
  for (const auto& item : node_->items()) out.push_back(item.key());
  return out;
}

std::string JsonView::string() const {
  if (!node_->is_string()) fail("expected a string, got " + describe());
  return node_->get<std::string>();
}

double JsonView::number() const {
  if (!node_->is_number()) fail("expected a number, got " + describe());
  return node_->get<double>();
}

double JsonView::positive() const {
  const double value = number();
  if (!(value > 0)) fail("expected a positive number, got " + describe());
  return value;
}

double JsonView::nonnegative() const {
  const double value = number();
  if (!(value >= 0)) fail("expected a non-negative number, got " + describe());
  return value;
}

std::int64_t JsonView::integer() const {
  if (!node_->is_number_integer()) fail("expected an integer, got " + describe());
  if (node_->is_number_unsigned() && node_->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) {
    fail("expected an integer below 2^63, got " + describe());
  }
  return node_->get<std::int64_t>();
}

std::int64_t JsonView::positive_integer() const {
  const std::int64_t value = integer();
  if (value <= 0) fail("expected a positive integer, got " + describe());
  return value;
}

bool JsonView::boolean() const {
  if (!node_->is_boolean()) fail("expected true or false, got " + describe());
  return node_->get<bool>();
}

std::string JsonView::one_of(const std::vector<std::string>& valid) const {
  const std::string value = string();
  if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
    fail(unknown_name_message("value", value, valid));
  }
  return value;
}

void JsonView::allow_only(std::initializer_list<std::string_view> allowed) const {
  expect_object();
  for (const auto& item : node_->items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      const auto nearest = nearest_name(item.key(), names);
      if (gathered_) gathered_->reported_paths.push_back(path_ + "/" + escape_pointer_token(item.key()));
      attempt([&] {
        fail("unknown field '" + item.key() + "'; " + (nearest ? "did you mean '" + *nearest + "'? " : "") +
             "valid fields are: " + join(names));
      });
    }
  }
}

JsonView JsonView::child(const Json& node, std::string path) const {
  JsonView view(node, source_, std::move(path));
  view.gathered_ = gathered_;
  return view;
}

JsonView JsonView::gathering_errors() const {
  JsonView view = *this;
  view.gathered_ = std::make_shared<Gathered>();
  return view;
}

bool JsonView::reported(std::string_view key) const {
  if (!gathered_) return false;
  const std::string member = path_ + "/" + escape_pointer_token(key);
  const auto& paths = gathered_->reported_paths;
  return std::find(paths.begin(), paths.end(), member) != paths.end();
}

bool JsonView::attempt(const std::function<void()>& parse) const {
  if (!gathered_) {
    parse();
    return true;
  }
  try {
    parse();
    return true;
  } catch (const InputError& e) {
    auto& errors = gathered_->errors;
    if (std::find(errors.begin(), errors.end(), e.what()) == errors.end()) errors.push_back(e.what());
    return false;
  }
}

void JsonView::throw_gathered() const {
  if (!gathered_ || gathered_->errors.empty()) return;
  throw InputError(join(gathered_->errors, "\n"));
}

}  // namespace dsgd
