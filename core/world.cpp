#include "core/world.hpp"

namespace dsgd {

bool FirstFailure::record(int rank, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (error_) return false;
  error_ = std::move(error);
  rank_ = rank;
  return true;
}

FirstFailure::operator bool() const {
  std::lock_guard lock(mutex_);
  return static_cast<bool>(error_);
}

std::exception_ptr FirstFailure::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

int FirstFailure::rank() const {
  std::lock_guard lock(mutex_);
  return rank_;
}

void FirstFailure::rethrow_if_any() const {
  if (const std::exception_ptr kept = error()) std::rethrow_exception(kept);
}

std::string exception_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace dsgd
