#include "app/error_outcome.hpp"

#include <new>

#include "core/error.hpp"
#include "core/memory.hpp"

namespace dsgd::app {

ErrorOutcome outcome_of(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return {out_of_memory_text(), kExitFailure};
  if (dynamic_cast<const InputError*>(&error) != nullptr) return {error.what(), kExitUsage};
  if (dynamic_cast<const InternalError*>(&error) != nullptr) {
    return {std::string(error.what()) + " (please report this)", kExitInternal};
  }
  if (dynamic_cast<const Error*>(&error) != nullptr) return {error.what(), kExitFailure};
  return {std::string("unexpected error: ") + error.what(), kExitInternal};
}

}  // namespace dsgd::app
