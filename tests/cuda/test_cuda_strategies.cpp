// The strategy-equivalence tests on GPUs: after 5 SGD steps on the same batches, single-device
// training on cuda:0, DataParallel and DistributedDataParallel (bucketed, unbucketed, d2l's) agree
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

    // ddp-d2l: its gradients copied between the GPUs by the host, as DataParallel's are.
    DistributedDataParallel d2l(fresh(model, cuda_device(0)), sgd, gpus(n),
                                {.bucketed = false, .reduce_through_first_device = true});
    const double d2l_diff = max_relative_diff(trained(d2l, batches), expected);
    INFO("ddp-d2l vs single: " << d2l_diff);
    CHECK(d2l_diff < 1e-5);
  }
}

// DDP with SyncBatchNorm against single-device BatchNorm, and gradient accumulation (3
// micro-batches a step against one step on their concatenation), as on the CPU
// (tests/cpu/test_ddp.cpp).
void check_sync_batchnorm_and_accumulation(int n) {
  INFO(n << " CUDA devices" << (cuda::virtual_devices() ? " (virtual, one GPU)" : ""));
  const std::vector<data::Batch> batches = batches_8x8();
  std::shared_ptr<nn::Module> single_model = batch_norm_model(cuda_device(0));
  SingleDevice single(single_model, sgd(single_model->parameters()), cuda_device(0));
  const Params expected = trained(single, batches);
  DDPOptions options = tiny_buckets();
  options.sync_batchnorm = true;
  DistributedDataParallel ddp(batch_norm_model(cuda_device(0)), sgd, gpus(n), options);
  const double diff = max_relative_diff(trained(ddp, batches), expected);
  INFO("DDP with SyncBatchNorm vs single with BatchNorm: " << diff);
  CHECK(diff < 1e-5);

  std::shared_ptr<nn::Module> whole_model = fresh("lenet-relu", cuda_device(0));
  SingleDevice whole(whole_model, sgd(whole_model->parameters()), cuda_device(0));
  std::vector<data::Batch> micro = {random_batch(5, 60), random_batch(4, 61), random_batch(3, 62)};
  std::vector<Tensor> mx, my;
  for (const data::Batch& b : micro) {
    mx.push_back(b.x);
    my.push_back(b.y);
  }
  const Params want = trained(whole, {{cat(mx, 0), cat(my, 0)}});
  DistributedDataParallel accumulating(fresh("lenet-relu", cuda_device(0)), sgd, gpus(n), tiny_buckets());
  accumulating.train_accumulated(micro);
  const double accumulated = max_relative_diff(trained(accumulating, {}), want);
  INFO("DDP over 3 micro-batches vs one step on their concatenation: " << accumulated);
  CHECK(accumulated < 1e-5);
}

}  // namespace

TEST_CASE("single, DataParallel and DDP agree on 2 and 4 virtual CUDA devices", "[cuda][virtual]") {
  REQUIRE(cuda::virtual_devices());  // run through ctest, which sets DUET_CUDA_VIRTUAL_DEVICES=4
  REQUIRE(cuda::device_count() >= 4);
  for (int n : {2, 4}) check_strategies_agree(n);
}

TEST_CASE("SyncBatchNorm and gradient accumulation under DDP on virtual CUDA devices", "[cuda][virtual]") {
  REQUIRE(cuda::virtual_devices());
  REQUIRE(cuda::device_count() >= 3);
  for (int n : {2, 3}) check_sync_batchnorm_and_accumulation(n);
}

TEST_CASE("single, DataParallel and DDP (over NCCL) agree on real GPUs", "[cuda][multigpu]") {
  if (cuda::virtual_devices()) {
    SUCCEED("virtual devices: the [virtual] test covers them; NCCL needs a GPU per rank");
    return;
  }
  for (int n = 2; n <= std::min(cuda::device_count(), 4); ++n) {
    check_strategies_agree(n);
    check_sync_batchnorm_and_accumulation(n);
  }
}
