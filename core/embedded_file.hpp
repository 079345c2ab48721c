#pragma once
// A data file compiled into the binary (cmake/DsgdEmbed.cmake), so dsgd runs with its defaults -- platform catalog,
// reproduction manifest -- from any folder, with nothing to install beside the executable.

#include <string_view>

namespace dsgd {

struct EmbeddedFile {
  std::string_view name;    // file name without folder and extension, e.g. "cori-knl"
  std::string_view source;  // path in the repository, used in error messages, e.g. "platforms/catalog/cori-knl.json"
  std::string_view text;    // the file's contents
};

}  // namespace dsgd
