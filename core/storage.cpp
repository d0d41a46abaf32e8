#include "duet/core/storage.h"

#include "duet/core/allocator.h"

namespace duet {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = allocator_for(device).allocate(nbytes, device);
}

Storage::~Storage() { allocator_for(device_).deallocate(data_, nbytes_, device_); }

}  // namespace duet
