// The NCCL communicator's entry points in a build without NCCL (parallel/comm/nccl_communicator.cpp
// is compiled only when CMake finds CUDA and NCCL).
#ifndef DUET_HAS_NCCL

#include "duet/core/error.h"
#include "duet/parallel/comm/nccl_communicator.h"

namespace duet::parallel {
namespace {

[[noreturn]] void built_without_nccl(const char* function) {
  DUET_FAIL(function,
            ": duet was built without NCCL (it needs the CUDA backend and nccl.h/libnccl; set "
            "NCCL_ROOT and reconfigure); for CPU or virtual devices use make_local_group");
}

}  // namespace

bool nccl_is_built() noexcept { return false; }

std::vector<std::shared_ptr<Communicator>> make_nccl_group(const std::vector<Device>&, NcclOptions) {
  built_without_nccl("make_nccl_group");
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator>, Device, NcclOptions) {
  built_without_nccl("make_nccl_communicator");
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator>, NcclOptions) {
  built_without_nccl("make_nccl_communicator");
}

}  // namespace duet::parallel

#endif  // DUET_HAS_NCCL
