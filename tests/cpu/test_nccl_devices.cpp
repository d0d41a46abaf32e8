// The device checks make_nccl_group and make_nccl_communicator share (parallel/comm/nccl_devices.h):
// plain C++, tested here without a GPU. NCCL refuses two ranks on one GPU, so logical devices of
// one GPU (DUET_CUDA_VIRTUAL_DEVICES) are refused by both, with one message naming make_local_group.
#include <catch2/catch.hpp>

#include "duet/parallel/comm/nccl_devices.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

TEST_CASE("make_nccl_group's check refuses two devices on one physical GPU", "[nccl_devices]") {
  CHECK_NOTHROW(check_distinct_gpus("make_nccl_group", {cuda_device(0), cuda_device(1)}, {0, 1}));
  CHECK_NOTHROW(check_distinct_gpus("make_nccl_group", {cuda_device(0)}, {0}));
  CHECK_THROWS_WITH(check_distinct_gpus("make_nccl_group", {cuda_device(0), cuda_device(1), cuda_device(2)}, {0, 1, 0}),
                    Contains("make_nccl_group: cuda:0 and cuda:2 both run on physical GPU 0") &&
                        Contains("NCCL refuses two ranks on one GPU; use make_local_group for virtual devices"));
}

TEST_CASE("make_nccl_communicator's check refuses a virtual device with make_nccl_group's advice", "[nccl_devices]") {
  CHECK_NOTHROW(refuse_virtual_device("make_nccl_communicator", cuda_device(1), 1, false));
  CHECK_THROWS_WITH(refuse_virtual_device("make_nccl_communicator", cuda_device(1), 0, true),
                    Contains("make_nccl_communicator: cuda:1") && Contains("physical GPU 0") &&
                        Contains("NCCL refuses two ranks on one GPU; use make_local_group for virtual devices"));
}
