#include "core/buffer_pool.hpp"

#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/huge_pages.hpp"

namespace dsgd {

namespace {

constexpr std::size_t kAlignment = 64;
// Each block starts with this header, one alignment unit long, so that the data after it stays aligned.
struct BlockHeader {
  std::uint64_t generation;  // the pool generation it was carved in; kDirect for a mapping of its own
  std::uint64_t bytes;       // the whole block, header included
};
static_assert(sizeof(BlockHeader) <= kAlignment);
constexpr std::uint64_t kDirect = ~std::uint64_t{0};
// Pooled blocks are carved from mappings this large; a block that does not fit the rest of one starts the next, so
// at most kPoolDirectBytes of each is left unused.
constexpr std::size_t kChunkBytes = std::size_t{64} << 20;

BlockHeader* header_of(void* data) { return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kAlignment); }

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPooled = false;
#else
constexpr bool kPooled = true;
#endif
#else
constexpr bool kPooled = true;
#endif

class Pool {
 public:
  Pool() {
    // The mutex is held across fork(), so the child finds it in a known state; the child then drops what it
    // inherited (its parent's blocks are shared copy-on-write: writing into them would copy them page by page).
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] {
                     Pool& pool = instance();
                     pool.mutex_.unlock();
                     pool.start_afresh();
                   });
  }

  static Pool& instance() {
    // Never destroyed: buffers may be released by other static objects' destructors at exit.
    static Pool* const pool = new Pool;  // NOLINT(cppcoreguidelines-owning-memory)
    return *pool;
  }

  void* allocate(std::size_t bytes) {
    if (bytes > SIZE_MAX - kChunkBytes) throw std::bad_alloc();
    const std::size_t block_bytes = kAlignment + (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (block_bytes >= kPoolDirectBytes) {
      auto* block = static_cast<BlockHeader*>(allocate_huge_pages(block_bytes));  // fresh pages: zero
      *block = {kDirect, block_bytes};
      return reinterpret_cast<char*>(block) + kAlignment;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = held_.find(block_bytes); found != held_.end() && !found->second.empty()) {
      char* block = found->second.back();
      found->second.pop_back();
      held_bytes_ -= block_bytes;
      std::memset(block + kAlignment, 0, block_bytes - kAlignment);
      return block + kAlignment;
    }
    if (block_bytes > chunk_left_) {
      chunk_next_ = static_cast<char*>(allocate_huge_pages(kChunkBytes));
      chunk_left_ = kChunkBytes;
    }
    char* block = chunk_next_;
    chunk_next_ += block_bytes;
    chunk_left_ -= block_bytes;
    *reinterpret_cast<BlockHeader*>(block) = {generation_, block_bytes};
    return block + kAlignment;
  }

  void release(void* data) noexcept {
    BlockHeader* header = header_of(data);
    if (header->generation == kDirect) {
      release_huge_pages(header, header->bytes);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (header->generation != generation_) return;  // the parent's, before a fork: left as it is
    try {
      held_[header->bytes].push_back(reinterpret_cast<char*>(header));
      held_bytes_ += header->bytes;
    } catch (const std::bad_alloc&) {  // no memory for the list: the block is not reused
    }
  }

  std::size_t held_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_bytes_;
  }

 private:
  void start_afresh() {
    ++generation_;
    chunk_next_ = nullptr;
    chunk_left_ = 0;
    held_.clear();
    held_bytes_ = 0;
  }

  std::mutex mutex_;
  std::uint64_t generation_ = 0;
  char* chunk_next_ = nullptr;
  std::size_t chunk_left_ = 0;
  std::unordered_map<std::size_t, std::vector<char*>> held_;  // released blocks by whole size
  std::size_t held_bytes_ = 0;
};

// Without the pool (AddressSanitizer): calloc'ed blocks, the block's own address just below the aligned pointer.
void* allocate_unpooled(std::size_t bytes) {
  constexpr std::size_t kHeader = kAlignment + sizeof(void*);
  if (bytes > SIZE_MAX - 2 * kHeader) throw std::bad_alloc();
  const std::size_t whole = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::calloc(1, whole + kHeader);
  if (block == nullptr) throw std::bad_alloc();
  const auto first = reinterpret_cast<std::uintptr_t>(block) + sizeof(void*);
  auto* data = reinterpret_cast<void**>((first + kAlignment - 1) / kAlignment * kAlignment);
  data[-1] = block;
  return data;
}

}  // namespace

void* pool_allocate(std::size_t bytes) {
  if constexpr (kPooled) {
    return Pool::instance().allocate(bytes);
  } else {
    return allocate_unpooled(bytes);
  }
}

void pool_release(void* data) noexcept {
  if (data == nullptr) return;
  if constexpr (kPooled) {
    Pool::instance().release(data);
  } else {
    std::free(static_cast<void**>(data)[-1]);
  }
}

std::size_t pool_held_bytes() {
  if constexpr (kPooled) return Pool::instance().held_bytes();
  return 0;
}

bool pool_keeps_blocks() { return kPooled; }

}  // namespace dsgd
