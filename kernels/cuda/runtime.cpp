// Device discovery, the DUET_CUDA_VIRTUAL_DEVICES mapping, per-device streams and DeviceGuard.
#include "duet/kernels/cuda/runtime.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "duet/core/error.h"
#include "duet/kernels/cuda/bad_label.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"

namespace duet::cuda {
namespace {

constexpr const char* kVirtualDevicesEnv = "DUET_CUDA_VIRTUAL_DEVICES";

struct Topology {
  int physical = 0;  // GPUs the driver reports
  int logical = 0;   // what device_count() returns
  bool virtual_devices = false;
  std::string unavailable;  // why there is no device at all, for error messages
};

// 0 when unset; -1 when set to something other than an integer in 1..kMaxDevicesPerType.
int virtual_devices_requested() {
  const char* text = std::getenv(kVirtualDevicesEnv);
  if (!text || !*text) return 0;
  char* end = nullptr;
  long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxDevicesPerType) return -1;
  return static_cast<int>(n);
}

Topology discover() {
  Topology t;
  cudaError_t status = cudaGetDeviceCount(&t.physical);
  if (ignore_cuda_error(status) != cudaSuccess) {  // no driver or no GPU: not an error for a CPU-only run
    t.physical = 0;
    t.unavailable = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
    return t;
  }
  if (t.physical == 0) {
    t.unavailable = "the driver reports no GPU";
    return t;
  }
  t.logical = std::min(t.physical, kMaxDevicesPerType);
  int requested = virtual_devices_requested();
  if (requested < 0) {
    // device_count() cannot throw, so a bad value is reported once and ignored.
    std::fprintf(stderr, "duet: ignoring %s=%s (expected an integer from 1 to %d)\n", kVirtualDevicesEnv,
                 std::getenv(kVirtualDevicesEnv), kMaxDevicesPerType);
  } else if (requested > 0) {
    t.logical = requested;
    t.virtual_devices = true;
  }
  return t;
}

// Discovered once: the driver's answer does not change while the process runs.
const Topology& topology() {
  static const Topology t = discover();
  return t;
}

struct Streams {
  std::array<std::once_flag, kMaxDevicesPerType> created;
  std::array<cudaStream_t, kMaxDevicesPerType> stream{};
};

// Streams live as long as the process: destroying them at exit would race the driver's teardown.
Streams& streams() {
  static Streams* s = new Streams();
  return *s;
}

}  // namespace

int device_count() noexcept {
  try {
    return topology().logical;
  } catch (...) {
    return 0;  // only std::bad_alloc could get here
  }
}

bool is_built() noexcept { return true; }

bool virtual_devices() noexcept {
  try {
    return topology().virtual_devices;
  } catch (...) {
    return false;  // as device_count()
  }
}

void require_gpu(const std::string& what) {
  const Topology& t = topology();
  if (t.logical == 0) DUET_FAIL(what, ": no CUDA device is available (", t.unavailable, ")");
}

void check_device(Device device) {
  DUET_CHECK(device.is_cuda(), "expected a CUDA device, got ", device);
  require_gpu("cannot use " + device.str());
  const Topology& t = topology();
  if (device.index < 0 || device.index >= t.logical) {
    DUET_FAIL("cannot use ", device, ": only ", t.logical, " CUDA device(s) exist",
              t.virtual_devices ? " (virtual, from " : "", t.virtual_devices ? kVirtualDevicesEnv : "",
              t.virtual_devices ? ")" : "");
  }
}

int physical_device(int index) { return topology().virtual_devices ? 0 : index; }

cudaStream_t stream(Device device) {
  check_device(device);
  Streams& s = streams();
  auto i = static_cast<size_t>(device.index);
  std::call_once(s.created[i], [&] {
    DeviceGuard guard(device);
    DUET_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream[i], cudaStreamNonBlocking));
  });
  return s.stream[i];
}

void synchronize(Device device) {
  if (!device.is_cuda()) return;
  DeviceGuard guard(device);
  DUET_CUDA_CHECK(cudaStreamSynchronize(stream(device)));
  raise_bad_label(device);  // the wait is over: a cross-entropy's label check has answered
}

namespace {

// cuDevicePrimaryCtxGetState, a driver call, reached through the runtime so that libduet does not
// link libcuda (which a machine without a driver lacks, where the CPU half must still load).
using PrimaryContextState = int (*)(int device, unsigned int* flags, int* active);

PrimaryContextState primary_context_state() {
  static const PrimaryContextState fn = [] {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &found, 7000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
      found = nullptr;
    cudaGetLastError();  // a missing entry point is an answer, not an error for the next check
    return reinterpret_cast<PrimaryContextState>(found);
  }();
  return fn;
}

}  // namespace

bool has_context(int gpu) noexcept {
  PrimaryContextState state = primary_context_state();
  unsigned int flags = 0;
  int active = 0;
  // Without the entry point, say yes: restoring a device is the safe default.
  if (!state) return true;
  return state(gpu, &flags, &active) == 0 && active != 0;
}

DeviceGuard::DeviceGuard(Device device) {
  check_device(device);
  int target = physical_device(device.index);
  DUET_CUDA_CHECK(cudaGetDevice(&previous_));  // never creates a context
  if (previous_ != target) {
    restore_ = has_context(previous_);
    DUET_CUDA_CHECK(cudaSetDevice(target));
  }
}

DeviceGuard::~DeviceGuard() {
  if (restore_) restore_device(previous_);
}

void restore_device(int gpu) noexcept { ignore_cuda_error(cudaSetDevice(gpu)); }

}  // namespace duet::cuda
