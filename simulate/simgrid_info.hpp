#pragma once
// Facts about the SimGrid library this build runs against (its version may differ from the headers' if the
// shared library was upgraded under us, which is worth seeing in `dsgd --version`).

#include <string>

namespace dsgd::simulate {

// "3.32.0" as reported by the loaded libsimgrid at run time.
std::string simgrid_runtime_version();

}  // namespace dsgd::simulate
