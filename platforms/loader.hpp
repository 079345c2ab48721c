#pragma once
// Reading and writing platform and link descriptions (docs/platform-schema.md). The loader validates
// everything -- types, units' ranges, unknown fields, topology shapes SimGrid can build, PCIe lane budgets, NVLink
// pairs and NICs against the node's devices, and that every number has a source -- and reports the first problem
// as one dsgd::InputError line:
//   "FILE:LINE:COL: JSON syntax error: ..."      for malformed text,
//   "FILE: /json/path: what was expected ..."   for a well-formed file with a wrong value.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "platforms/platform.hpp"

namespace dsgd::platforms {

// The `schema` tags of the two kinds of description.
inline constexpr std::string_view kPlatformSchema = "dsgd-platform/1";
inline constexpr std::string_view kLinkSchema = "dsgd-link/1";

// Validates a parsed platform description. `source` names it in errors (a path, or platforms/catalog/NAME.json).
// Throws InputError on any problem.
Platform parse_platform(const Json& json, const std::string& source);

// Parses and validates platform text. Throws InputError (with line:column for syntax errors).
Platform parse_platform_text(std::string_view text, const std::string& source);

// Reads a platform file. Throws InputError if it is missing or not a valid platform, IoError if unreadable.
Platform read_platform_file(const std::filesystem::path& path);

// Validates a link description (a file with schema dsgd-link/1). Throws InputError.
Link parse_link(const Json& json, const std::string& source);

// What a valid platform leaves the simulation to assume that changes its answer, one line each: a processor that
// computes (the devices, else the CPU) with neither a kernel_efficiency, kernels nor a kernel_profile runs every
// kernel at its full peak, several times faster than any real one.
std::vector<std::string> platform_warnings(const Platform& platform);

// The JSON form of a platform or link; parse_platform(to_json(p)) gives back p.
Json to_json(const Platform& platform);
Json to_json(const Link& link);

}  // namespace dsgd::platforms
