#pragma once
// Reading JSON input with errors that say where: "FILE:LINE:COL: ..." for syntax errors and
// "FILE: /json/path: ..." for values that parse but are wrong. Used by every loader of user-written files
// (platforms, results, manifests), so they all report problems the same way.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd {

using Json = nlohmann::json;

// Deepest nesting of arrays and objects parse_json accepts.
inline constexpr std::size_t kMaxJsonDepth = 256;

// Parses `text`; `source` names it in errors (a path, or "embedded:NAME"). Throws InputError with
// "source:line:column: ..." on malformed text, a number beyond a double or 64-bit integer, an object naming a key
// twice, or nesting deeper than kMaxJsonDepth. Comments (// and /* */) are skipped, as in JSONC.
Json parse_json(std::string_view text, const std::string& source);

// The largest text or JSON file dsgd reads whole (platforms, manifests, results are kilobytes to a few megabytes).
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{256} << 20;
// Bytes nlohmann::json may take per byte of JSON text: 16 for a two-byte array element ("0,") in a vector that
// may have doubled; the memory estimate before a parse.
inline constexpr double kJsonBytesPerTextByte = 16;

// Reads and parses a file. Throws InputError if it does not exist, is a folder, is larger than kMaxTextFileBytes,
// would not fit in memory once parsed, or is malformed; IoError if it cannot be read.
Json read_json_file(const std::filesystem::path& path);

// Reads a whole file into a string, checking its size before reading: InputError if it does not exist, is a
// folder, holds more than `max_bytes` (a FIFO or device is read no further than that) or, at `memory_per_byte`
// bytes of memory per byte of text, would not fit in the memory available; IoError if it cannot be read.
std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes = kMaxTextFileBytes,
                           double memory_per_byte = 1);

// A read-only view of one JSON value that knows where it came from, for validating loaders.
// Every accessor checks the type and throws InputError("source: /path: expected ..., got ...") on mismatch.
class JsonView {
 public:
  JsonView(const Json& node, std::string source, std::string path = "");

  const Json& raw() const { return *node_; }
  const std::string& source() const { return source_; }
  // The JSON pointer of this value, "/" for the root.
  std::string path() const { return path_.empty() ? "/" : path_; }

  bool has(std::string_view key) const;
  // A required object member.
  JsonView at(std::string_view key) const;
  // An optional object member.
  std::optional<JsonView> find(std::string_view key) const;
  // An array element; `size()` is the array's length (throws if this is not an array).
  JsonView at(std::size_t index) const;
  std::size_t size() const;
  // Object members in document order (nlohmann keeps them sorted; order matters only for messages).
  std::vector<std::string> keys() const;

  std::string string() const;
  double number() const;
  double positive() const;     // > 0
  double nonnegative() const;  // >= 0
  std::int64_t integer() const;
  std::int64_t positive_integer() const;
  bool boolean() const;
  // A string that must be one of `valid`; the error lists them.
  std::string one_of(const std::vector<std::string>& valid) const;

  // Rejects members not in `allowed`, so a typo ("bandwith") is an error rather than a silently ignored field.
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  [[noreturn]] void fail(const std::string& what) const;

  // Gathering errors, so that one run reports every error of a file. A view made by gathering_errors(), and every
  // view reached from it, records the InputError of an `attempt` and goes on; allow_only records each unknown field.
  // A reader attempts each part that does not depend on another, then calls throw_gathered().
  JsonView gathering_errors() const;
  // Runs `parse`: true when it returned. Gathering, an InputError it throws is recorded (once) and false returned;
  // otherwise the error propagates.
  bool attempt(const std::function<void()>& parse) const;
  // Throws an InputError of every gathered error, if any: one a line, each as it would read alone ("FILE: /path:
  // what"), in the order found.
  void throw_gathered() const;
  // How many errors are gathered so far (0 when not gathering), so a reader can skip the parts that depend on one.
  std::size_t gathered_count() const { return gathered_ ? gathered_->errors.size() : 0; }
  // Gathering: whether member `key` of this object was already found unknown (allow_only) or missing (at), so a
  // later check of the members (every number has a source) does not report it again.
  bool reported(std::string_view key) const;

 private:
  void expect_object() const;
  std::string describe() const;  // the value's type and a short rendering, for "got ..." in messages
  JsonView child(const Json& node, std::string path) const;

  const Json* node_;
  std::string source_;
  std::string path_;
  struct Gathered {
    std::vector<std::string> errors;
    std::vector<std::string> reported_paths;  // members found unknown or missing
  };
  std::shared_ptr<Gathered> gathered_;  // null: not gathering
};

}  // namespace dsgd
