#pragma once
// SimGrid settings every engine dsgd starts shares, whichever study starts it.

#include <string>
#include <vector>

namespace dsgd::simulate {

// Under AddressSanitizer, SimGrid's own context switches (stacks it allocates and swaps itself) look like stack
// corruption to ASan, which does not see them: actors run as threads there instead (contexts/factory:thread; slower,
// the same simulated results). scripts/asan.sh builds so.
inline void add_sanitizer_settings(std::vector<std::string>& arguments) {
#if defined(__SANITIZE_ADDRESS__)
  arguments.emplace_back("--cfg=contexts/factory:thread");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  arguments.emplace_back("--cfg=contexts/factory:thread");
#endif
#endif
  (void)arguments;
}

}  // namespace dsgd::simulate
