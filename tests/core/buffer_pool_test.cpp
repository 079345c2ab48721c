// core/buffer_pool.hpp: zeroed, aligned blocks on huge-page mappings; a released block is reused, zeroed again,
// by the next request of its size; large blocks are mappings of their own; a forked child never writes into its
// parent's blocks.

#include "core/buffer_pool.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/huge_pages.hpp"
#include "tests/support/smaps.hpp"

namespace dsgd {
namespace {

bool all_zero(const void* data, std::size_t bytes) {
  const auto* first = static_cast<const unsigned char*>(data);
  return std::all_of(first, first + bytes, [](unsigned char byte) { return byte == 0; });
}

// An odd size no other test of this process asks for, so that held blocks of other tests do not interfere.
constexpr std::size_t kOddBytes = 12345 * 7;

TEST(BufferPool, BlocksAreZeroedAlignedAndWritableToTheLastVector) {
  PoolBuffer small(1);
  PoolBuffer medium(kOddBytes);
  for (const PoolBuffer* buffer : {&small, &medium}) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 64, 0u);
  }
  EXPECT_TRUE(all_zero(medium.data(), kOddBytes));
  std::memset(small.data(), 0xff, 64);  // a whole vector, though only one byte was asked for
  std::memset(medium.data(), 0xff, (kOddBytes + 63) / 64 * 64);
}

TEST(BufferPool, AReleasedBlockIsReusedForItsSizeAndZeroedAgain) {
  if (!pool_keeps_blocks()) GTEST_SKIP() << "blocks come from calloc in this build (AddressSanitizer)";
  void* first = pool_allocate(kOddBytes + 64);
  std::memset(first, 0x5a, kOddBytes + 64);
  const std::size_t held = pool_held_bytes();
  pool_release(first);
  EXPECT_GT(pool_held_bytes(), held);
  void* again = pool_allocate(kOddBytes + 64);
  EXPECT_EQ(again, first);
  EXPECT_EQ(pool_held_bytes(), held);
  EXPECT_TRUE(all_zero(again, kOddBytes + 64));
  pool_release(again);
  pool_release(nullptr);  // does nothing
}

TEST(BufferPool, LargeBlocksAreMappingsOfTheirOwnAndGoBackToTheSystem) {
  const std::size_t held = pool_held_bytes();
  void* large = pool_allocate(kPoolDirectBytes + 1);
  EXPECT_TRUE(all_zero(large, kPoolDirectBytes + 1));
  std::memset(large, 1, kPoolDirectBytes + 1);
  pool_release(large);
  EXPECT_EQ(pool_held_bytes(), held);
}

TEST(BufferPool, PooledMemoryIsAdvisedForHugePages) {
  if (!pool_keeps_blocks()) GTEST_SKIP() << "blocks come from calloc in this build (AddressSanitizer)";
  PoolBuffer buffer(kOddBytes + 128);
  if (!huge_pages_on_request()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  const std::string eligible = smaps_field(buffer.data(), "THPeligible");
  EXPECT_NE(eligible.find('1'), std::string::npos) << "THPeligible:" << eligible;
}

TEST(BufferPool, AForkedChildNeitherReusesNorWritesItsParentsBlocks) {
  if (!pool_keeps_blocks()) GTEST_SKIP() << "blocks come from calloc in this build (AddressSanitizer)";
  constexpr std::size_t kBytes = kOddBytes + 192;
  void* kept = pool_allocate(kBytes);
  std::memset(kept, 7, kBytes);
  void* held = pool_allocate(kBytes);
  pool_release(held);  // held by the parent's pool
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes: 0 fine, 1 the child got its parent's held block, 2 not zeroed, 3 its own block was not reused.
    void* mine = pool_allocate(kBytes);
    int code = mine == held ? 1 : all_zero(mine, kBytes) ? 0 : 2;
    std::memset(mine, 9, kBytes);
    pool_release(kept);  // the parent's block: not for the child's reuse
    pool_release(mine);
    void* again = pool_allocate(kBytes);
    if (code == 0 && again != mine) code = 3;
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(static_cast<const unsigned char*>(kept)[kBytes - 1], 7);
  EXPECT_EQ(pool_allocate(kBytes), held);  // still the parent's to reuse
  pool_release(held);
  pool_release(kept);
}

TEST(BufferPool, AnImpossibleSizeIsRefusedWithBadAlloc) {
  EXPECT_THROW(static_cast<void>(pool_allocate(static_cast<std::size_t>(-1) - 1)), std::bad_alloc);
}

}  // namespace
}  // namespace dsgd
