#pragma once
// A fresh folder per test, named after the test and the process (so parallel ctest runs never share one), removed
// afterwards. Tests that write files derive their fixture from this.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"

namespace dsgd::testing {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("dsgd-test-" + std::string(info->test_suite_name()) + "-" +
                                                     info->name() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `bytes` to `name` in the folder (creating subfolders) and returns its path.
  std::filesystem::path write(const std::filesystem::path& name, const std::vector<std::uint8_t>& bytes) const {
    data::write_binary_file(dir_ / name, bytes);
    return dir_ / name;
  }

  std::filesystem::path dir_;
};

}  // namespace dsgd::testing
