// The device checks that make_nccl_group and make_nccl_communicator share: NCCL refuses two ranks
// on one GPU, so devices that are logical devices of one GPU (DUET_CUDA_VIRTUAL_DEVICES) are
// refused with one message, naming make_local_group. Plain C++ with no CUDA or NCCL header, so
// that the CPU tests cover it (tests/cpu/test_nccl_devices.cpp).
#pragma once

#include <vector>

#include "duet/core/device.h"

namespace duet::parallel {

// Throws unless every device runs on its own physical GPU (`physical[i]` is devices[i]'s).
void check_distinct_gpus(const char* function, const std::vector<Device>& devices, const std::vector<int>& physical);

// Throws when `device` is one of several logical devices of one GPU: one process per rank would
// put two ranks on that GPU.
void refuse_virtual_device(const char* function, Device device, int physical, bool virtual_devices);

}  // namespace duet::parallel
