// Storage: one allocation on one device, shared by every view of it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "duet/core/device.h"

namespace duet {

class Allocator;

class Storage {
 public:
  // Memory from the allocator registered for `device`'s type.
  Storage(size_t nbytes, Device device);
  // Memory from `allocator` (pinned_allocator() for page-locked host memory).
  Storage(size_t nbytes, Device device, Allocator& allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Page-locked host memory: a copy from it to a GPU may still be running when the copy returns.
  bool is_pinned() const;
  // Waits for the asynchronous copies still reading this memory (none unless pinned); the
  // in-place writes of Tensor call it, so they never change data a GPU has yet to receive.
  void wait_for_pending_reads() const;

  // Bumped by every in-place write through any view. Autograd compares it with the
  // value it saved, to catch an in-place change to a tensor that backward still needs.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Allocator* allocator_;
  void* data_ = nullptr;
  size_t nbytes_;
  Device device_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace duet
