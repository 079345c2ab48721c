#pragma once
// Units a user may write on dsgd's command lines (docs/commands.md).

#include <CLI/CLI.hpp>
#include <string>

namespace dsgd::app {

// A size in bytes with or without a unit: 4096, 64KiB, 16MiB, 1.5GB (k, M, G, T: powers of 1000; Ki, Mi, Gi, Ti:
// of 1024; b or B optional; case ignored).
inline CLI::AsSizeValue byte_sizes() { return CLI::AsSizeValue(true); }

// An option of a size in bytes, its default shown.
template <typename T>
CLI::Option* add_bytes_option(CLI::App& command, const std::string& name, T& bytes, const std::string& help) {
  return command.add_option(name, bytes, help)->capture_default_str()->transform(byte_sizes());
}

}  // namespace dsgd::app
