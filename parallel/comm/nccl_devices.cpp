// The NCCL device checks of nccl_devices.h, compiled in every build (the CPU tests call them).
#include "duet/parallel/comm/nccl_devices.h"

#include "duet/core/error.h"

namespace duet::parallel {
namespace {

constexpr const char* kUseLocal =
    " (virtual devices, DUET_CUDA_VIRTUAL_DEVICES), and NCCL refuses two ranks on one GPU; use make_local_group for "
    "virtual devices";

}  // namespace

void check_distinct_gpus(const char* function, const std::vector<Device>& devices, const std::vector<int>& physical) {
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      DUET_CHECK(physical[j] != physical[i], function, ": ", devices[j], " and ", devices[i],
                 " both run on physical GPU ", physical[i], kUseLocal);
}

void refuse_virtual_device(const char* function, Device device, int physical, bool virtual_devices) {
  DUET_CHECK(!virtual_devices, function, ": ", device, " and the other ranks' devices all run on physical GPU ",
             physical, kUseLocal);
}

}  // namespace duet::parallel
