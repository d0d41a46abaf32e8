#include "duet/core/storage.h"

#include "duet/core/allocator.h"

namespace duet {

Storage::Storage(size_t nbytes, Device device) : Storage(nbytes, device, allocator_for(device)) {}

Storage::Storage(size_t nbytes, Device device, Allocator& allocator)
    : allocator_(&allocator), nbytes_(nbytes), device_(device) {
  data_ = allocator_->allocate(nbytes, device);
}

Storage::~Storage() { allocator_->deallocate(data_, nbytes_, device_); }

bool Storage::is_pinned() const { return allocator_->is_pinned(); }

void Storage::wait_for_pending_reads() const {
  if (is_pinned() && data_) allocator_->wait_for_pending_reads(data_);
}

}  // namespace duet
