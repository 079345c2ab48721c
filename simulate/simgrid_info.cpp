#include "simulate/simgrid_info.hpp"

#include <simgrid/config.h>  // defines the SG_BEGIN_DECL/XBT_PUBLIC macros version.h uses
#include <simgrid/version.h>
#include <xbt/base.h>

namespace dsgd::simulate {

std::string simgrid_runtime_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  sg_version_get(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace dsgd::simulate
