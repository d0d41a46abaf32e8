// The CUDA runtime's entry points in a build without CUDA. kernels/cuda/*.cpp is compiled only
// when CUDA is found, but tests/main.cpp and the parallel layer call device_count() in every
// build, so this always-compiled file supplies the CPU-only answers.
#ifndef DUET_HAS_CUDA

#include "duet/core/error.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {

int device_count() noexcept { return 0; }
bool is_built() noexcept { return false; }
bool virtual_devices() noexcept { return false; }
bool has_context(int) noexcept { return false; }
void synchronize(Device device) {
  DUET_CHECK(!device.is_cuda(), "synchronize(", device, "): duet was built without CUDA");
}
void empty_cache() {}         // nothing is ever cached without CUDA
void set_allow_tf32(bool) {}  // no CUDA math to change
bool allow_tf32() noexcept { return false; }
int64_t cudnn_declined() noexcept { return 0; }  // no cuDNN to decline anything
bool cudnn_is_built() noexcept { return false; }

struct CapturedWork::Graph {};
CapturedWork::CapturedWork(Device device) : device_(device) {
  DUET_FAIL("CUDA graphs on ", device, ": duet was built without CUDA");
}
CapturedWork::~CapturedWork() = default;
void CapturedWork::capture(const std::function<void()>&) {}  // unreachable: the constructor throws
void CapturedWork::replay() {}
bool capturing(Device) noexcept { return false; }
void check_recording(Device, const std::string&, const std::string&, const std::string&) {}  // nothing records

}  // namespace duet::cuda

#endif  // DUET_HAS_CUDA
