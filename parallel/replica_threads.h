// Helpers that both data-parallel strategies share: one thread per device for the replicas'
// work, and splitting a batch by rows the way scatter does.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "duet/autograd/cpu_device_binding.h"
#include "duet/core/device.h"
#include "duet/core/tensor.h"

namespace duet::parallel {

// The calling thread works for `device` during the scope: on a logical CPU device with cores
// of its own (core/placement.h), its kernels' loops run on those cores. Nothing
// changes for other devices. run_on_devices gives each replica's thread one; the strategies'
// own steps run under one for their first device.
class DeviceThreadScope {
 public:
  explicit DeviceThreadScope(Device device) {
    if (device.is_cpu()) scope_.emplace(device.index);
  }

 private:
  std::optional<autograd::CpuDeviceScope> scope_;
};

// Runs fn(k) for k in [0, devices.size()), each on its own thread working for devices[k] (a
// DeviceThreadScope; a fresh std::thread per call: a step has few of them, and a thread start
// costs microseconds next to a forward). The threads start on their devices' cores and begin
// together, once all of them exist, so that none waits for its creator's core.
// Waits for all of them, then rethrows the first exception that any of them threw as a
// duet::Error "replica on cpu:2 failed: <message>", so the caller learns which device failed.
// on_failure(k, message), if given, runs on replica k's thread once its exception is recorded:
// it lets a failing replica release the others (DDP aborts its group) and still be the one
// reported.
void run_on_devices(const std::vector<Device>& devices, const std::function<void(size_t)>& fn,
                    const std::function<void(size_t, const std::string&)>& on_failure = {});

// "[cpu:0, cpu:1]", for Strategy::devices().
std::string device_list(const std::vector<Device>& devices);

// Splits t along dim 0 with scatter's rule (chunk_sizes: ceil(n / N) rows each, so a small
// batch fills fewer devices) and moves chunk k to devices[k]. Plain copies, no autograd: a DDP
// rank loads its own shard, as a DistributedSampler would give it.
std::vector<Tensor> split_rows(const Tensor& t, const std::vector<Device>& devices);

}  // namespace duet::parallel
