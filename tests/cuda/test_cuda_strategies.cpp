// The strategy-equivalence tests on GPUs: after 5 SGD steps on the same batches, single-device
// training on cuda:0, DataParallel and DistributedDataParallel (bucketed and unbucketed) agree
// within 1e-5 relative, as on the CPU (tests/cpu/test_strategies.cpp). On 2 and 4 virtual
// devices of one GPU DDP uses the local communicator; on real GPUs it uses NCCL. TF32 stays off.
#include <catch2/catch.hpp>

#include <algorithm>

#include "duet/kernels/cuda/runtime.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using namespace duet::test;

namespace {

void check_strategies_agree(int n) {
  REQUIRE_FALSE(cuda::allow_tf32());
  const std::vector<data::Batch> batches = five_batches();
  for (std::string model : {"lenet-relu", "mlp"}) {
    INFO(model << " on " << n << " CUDA devices" << (cuda::virtual_devices() ? " (virtual, one GPU)" : ""));
    std::shared_ptr<nn::Module> reference_model = fresh(model, cuda_device(0));
    SingleDevice reference(reference_model, sgd(reference_model->parameters()), cuda_device(0));
    const Params expected = trained(reference, batches);

    std::shared_ptr<nn::Module> dp_model = fresh(model, cuda_device(0));
    DataParallel dp(dp_model, sgd(dp_model->parameters()), gpus(n));
    const double dp_diff = max_relative_diff(trained(dp, batches), expected);
    INFO("DataParallel vs single: " << dp_diff);
    CHECK(dp_diff < 1e-5);

    DistributedDataParallel bucketed(fresh(model, cuda_device(0)), sgd, gpus(n), tiny_buckets());
    const double bucketed_diff = max_relative_diff(trained(bucketed, batches), expected);
    INFO("DDP bucketed vs single: " << bucketed_diff);
    CHECK(bucketed_diff < 1e-5);

    DistributedDataParallel unbucketed(fresh(model, cuda_device(0)), sgd, gpus(n), {.bucketed = false});
    const double unbucketed_diff = max_relative_diff(trained(unbucketed, batches), expected);
    INFO("DDP unbucketed vs single: " << unbucketed_diff);
    CHECK(unbucketed_diff < 1e-5);
  }
}

}  // namespace

TEST_CASE("single, DataParallel and DDP agree on 2 and 4 virtual CUDA devices", "[cuda][virtual]") {
  REQUIRE(cuda::virtual_devices());  // run through ctest, which sets DUET_CUDA_VIRTUAL_DEVICES=4
  REQUIRE(cuda::device_count() >= 4);
  for (int n : {2, 4}) check_strategies_agree(n);
}

TEST_CASE("single, DataParallel and DDP (over NCCL) agree on real GPUs", "[cuda][multigpu]") {
  if (cuda::virtual_devices()) {
    SUCCEED("virtual devices: the [virtual] test covers them; NCCL needs a GPU per rank");
    return;
  }
  for (int n = 2; n <= std::min(cuda::device_count(), 4); ++n) check_strategies_agree(n);
}
