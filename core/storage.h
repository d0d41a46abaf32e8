// Storage: one allocation on one device, shared by every view of it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "duet/core/device.h"

namespace duet {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write through any view. Autograd compares it with the
  // value it saved, to catch an in-place change to a tensor that backward still needs.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_;
  Device device_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace duet
