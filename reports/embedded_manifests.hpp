#pragma once
// The reproduction manifests compiled into dsgd (reports/manifests/*.json, see cmake/DsgdEmbed.cmake).

#include <span>

#include "core/embedded_file.hpp"

namespace dsgd::reports {

std::span<const EmbeddedFile> embedded_manifests();

}  // namespace dsgd::reports
