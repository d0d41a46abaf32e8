// The pinned allocator's cache of freed blocks (pinned_allocator.cpp), by bin: plain C++ with no
// CUDA header, and the CUDA calls passed in, so that the CPU tests cover its bookkeeping
// (tests/cpu/test_pinned_cache.cpp). The danger it guards against is a free that throws part-way
// through emptying the cache: every block not yet freed, the one whose free threw included, stays
// cached (a failed cudaFreeHost frees nothing), so none leaks and none is freed twice.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace duet::cuda {

// Block: what the allocator keeps per block (its size, the events of the copies still reading it).
template <class Block> class PinnedCache {
 public:
  using Key = std::pair<int, std::size_t>;  // (logical CPU device, bin size)
  using Entry = std::pair<void*, Block>;

  void put(Key key, void* ptr, Block block) {
    std::lock_guard lock(mutex_);
    bins_[key].emplace_back(ptr, std::move(block));
  }

  // The first block of bin `key` for which reusable(block) holds, taken out of the cache; or none.
  template <class Reusable> std::optional<Entry> take(Key key, Reusable reusable) {
    std::lock_guard lock(mutex_);
    auto bin = bins_.find(key);
    if (bin == bins_.end()) return std::nullopt;
    auto& blocks = bin->second;
    for (auto it = blocks.begin(); it != blocks.end(); ++it) {
      if (!reusable(it->second)) continue;
      Entry entry = std::move(*it);
      blocks.erase(it);
      return entry;
    }
    return std::nullopt;
  }

  // Frees every cached block with free_block(key, ptr, block), outside the lock (a free may wait
  // for the copies that read the block, and other threads go on caching and taking meanwhile).
  // Should one free throw, the blocks not yet freed, its own included, go back to the cache and
  // the exception propagates. free_block may change the block (drop the events it has waited for)
  // before it throws.
  template <class FreeBlock> void release(FreeBlock free_block) {
    std::map<Key, std::vector<Entry>> taken;
    {
      std::lock_guard lock(mutex_);
      taken.swap(bins_);
    }
    for (auto& [key, blocks] : taken) {
      while (!blocks.empty()) {
        try {
          free_block(key, blocks.back().first, blocks.back().second);
        } catch (...) {
          put_back(taken);
          throw;
        }
        blocks.pop_back();
      }
    }
  }

  // Blocks cached now.
  std::size_t size() {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [key, blocks] : bins_) n += blocks.size();
    return n;
  }

 private:
  void put_back(std::map<Key, std::vector<Entry>>& taken) {
    std::lock_guard lock(mutex_);
    for (auto& [key, blocks] : taken)
      for (auto& entry : blocks) bins_[key].push_back(std::move(entry));
  }

  std::mutex mutex_;
  std::map<Key, std::vector<Entry>> bins_;
};

// The pinned allocator's answer to running out of page-locked memory: return the cache to the
// driver and try once more, but never while a graph records (`recording()`): a free then would
// invalidate the recording, whose copies may read the cached blocks at every replay. `allocate()`
// returns false for out-of-memory (and throws for any other failure); `release()` frees the cache.
template <class Allocate, class Release, class Recording>
bool allocate_or_release_and_retry(Allocate allocate, Release release, Recording recording) {
  if (allocate()) return true;
  if (recording()) return false;
  release();
  return allocate();
}

}  // namespace duet::cuda
