#include "duet/parallel/lab/link_calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/functional.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/lab/repeats.h"
#include "duet/parallel/replica_threads.h"
#include "duet/parallel/transfers.h"

namespace duet::parallel {
namespace {

using Clock = std::chrono::steady_clock;

// The median ms of `repeats` runs of `op`, after two untimed ones (first-touch, wake-ups).
template <class Op> double median_ms(int repeats, Op&& op) {
  DUET_CHECK(repeats >= 1, "link calibration: repeats must be at least 1, got ", repeats);
  op();
  op();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const Clock::time_point start = Clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(std::move(ms));
}

Tensor f32_of_bytes(int64_t bytes, Device device) {
  return zeros({std::max<int64_t>(1, bytes / 4)}, {.dtype = DType::f32, .device = device});
}

void wait_for(Device device) {
  if (device.is_cuda()) cuda::synchronize(device);
}

// Rank 0's sweep, each rank's part on its own thread.
LinkFit calibrate_group(const std::string& what, const std::vector<std::shared_ptr<Communicator>>& group,
                        const std::vector<int64_t>& sizes, int repeats,
                        std::vector<TimedSize> (*part)(Communicator&, const std::vector<int64_t>&, int)) {
  DUET_CHECK(group.size() >= 2, "link calibration: ", what, " needs a group of 2 ranks or more, got ", group.size());
  std::vector<Device> devices;
  for (const auto& comm : group) devices.push_back(comm->device());
  std::vector<TimedSize> rank0;
  run_on_devices(devices, [&](size_t r) {
    std::vector<TimedSize> mine = part(*group[r], sizes, repeats);
    if (r == 0) rank0 = std::move(mine);
  });
  return fit_link(what, rank0);
}

}  // namespace

std::vector<int64_t> calibration_sizes() {
  std::vector<int64_t> sizes;
  for (int64_t b = 4; b <= (int64_t{4} << 20); b *= 4) sizes.push_back(b);
  return sizes;
}

LinkFit fit_link(std::string what, const std::vector<TimedSize>& samples) {
  DUET_CHECK(samples.size() >= 2, "fit_link: ", what, ": needs times for 2 sizes or more, got ", samples.size());
  // Weighted least squares of t = a + s·b with weights 1/t²: each sample's relative error counts
  // alike, so a 4-byte message's 20 us is not drowned by a 4 MiB one's milliseconds.
  double sw = 0, sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const TimedSize& x : samples) {
    DUET_CHECK(x.bytes > 0 && x.ms > 0 && std::isfinite(x.ms), "fit_link: ", what, ": a sample of ", x.bytes,
               " bytes took ", x.ms, " ms");
    const double w = 1 / (x.ms * x.ms), b = static_cast<double>(x.bytes);
    sw += w, sb += w * b, st += w * x.ms, sbb += w * b * b, sbt += w * b * x.ms;
  }
  const double det = sw * sbb - sb * sb;
  double slope = det > 0 ? (sw * sbt - sb * st) / det : 0;
  double alpha = (st - slope * sb) / sw;
  if (alpha < 0) {  // the line through the origin that fits best
    alpha = 0;
    slope = sbt / sbb;
  }
  // A sweep whose time does not grow with size: the bandwidth is at least what the largest
  // message reached in its whole time.
  const TimedSize& largest = *std::max_element(
      samples.begin(), samples.end(), [](const TimedSize& a, const TimedSize& b) { return a.bytes < b.bytes; });
  const double floor_slope = largest.ms / static_cast<double>(largest.bytes) * 1e-3;
  if (!(slope > floor_slope)) slope = std::max(slope, floor_slope);
  LinkFit fit{.what = std::move(what), .alpha_us = alpha * 1e3, .beta_gbps = 1 / (slope * 1e6), .samples = samples};
  return fit;
}

std::vector<TimedSize> time_all_reduce(Communicator& comm, const std::vector<int64_t>& sizes, int repeats) {
  std::vector<TimedSize> out;
  for (int64_t bytes : sizes) {
    Tensor t = f32_of_bytes(bytes, comm.device());
    out.push_back({t.numel() * 4, median_ms(repeats, [&] { comm.all_reduce(t); })});
  }
  return out;
}

std::vector<TimedSize> time_ping_pong(Communicator& comm, const std::vector<int64_t>& sizes, int repeats) {
  DUET_CHECK(comm.world_size() >= 2, "time_ping_pong: needs 2 ranks or more, got ", comm.world_size());
  std::vector<TimedSize> out;
  for (int64_t bytes : sizes) {
    Tensor t = f32_of_bytes(bytes, comm.device());
    const double round_trip = median_ms(repeats, [&] {
      comm.broadcast(t, 0);
      comm.broadcast(t, 1);
    });
    out.push_back({t.numel() * 4, round_trip / 2});
  }
  return out;
}

LinkFit calibrate_all_reduce(const std::vector<std::shared_ptr<Communicator>>& group, const std::vector<int64_t>& sizes,
                             int repeats) {
  const std::string what =
      group.empty() ? "all-reduce" : group[0]->name() + " all-reduce, " + std::to_string(group.size()) + " ranks";
  return calibrate_group(what, group, sizes, repeats, time_all_reduce);
}

LinkFit calibrate_ping_pong(const std::vector<std::shared_ptr<Communicator>>& group, const std::vector<int64_t>& sizes,
                            int repeats) {
  const std::string what = group.empty() ? "ping-pong" : group[0]->name() + " ping-pong";
  return calibrate_group(what, group, sizes, repeats, time_ping_pong);
}

namespace {

// A transfer onto `to`, from `to`'s thread, timed at every size: transfer(a tensor of `from`,
// a tensor of `to`) of that size.
template <class Transfer> LinkFit calibrate_transfer(const std::string& what, Device from, Device to,
                                                     const std::vector<int64_t>& sizes, int repeats,
                                                     Transfer transfer) {
  DeviceThreadScope on_device(to);
  std::vector<TimedSize> samples;
  for (int64_t bytes : sizes) {
    Tensor there = f32_of_bytes(bytes, from), here = f32_of_bytes(bytes, to);
    samples.push_back({here.numel() * 4, median_ms(repeats, [&] {
                         transfer(there, here);
                         wait_for(to);
                       })});
  }
  return fit_link(what + " " + from.str() + " -> " + to.str(), samples);
}

}  // namespace

LinkFit calibrate_copy(Device from, Device to, const std::vector<int64_t>& sizes, int repeats, const LinkModel& link) {
  return calibrate_transfer("copy", from, to, sizes, repeats, [&link](const Tensor& there, const Tensor& here) {
    transfers::copy_between(there, here, link);
  });
}

LinkFit calibrate_reduce_add(Device from, Device to, const std::vector<int64_t>& sizes, int repeats,
                             const LinkModel& link) {
  return calibrate_transfer("copy and add", from, to, sizes, repeats,
                            [to, &link](const Tensor& there, const Tensor& here) {
                              Tensor sum = transfers::sum_onto({here, there}, to, link);
                            });
}

double time_replica_threads(const std::vector<Device>& devices, int repeats) {
  DUET_CHECK(!devices.empty(), "time_replica_threads: no devices given");
  return median_ms(repeats, [&] { run_on_devices(devices, [](size_t) {}); });
}

double time_model_step(const std::string& model, const Shape& example, int64_t rows, const std::vector<Device>& devices,
                       int repeats) {
  DUET_CHECK(!devices.empty(), "time_model_step: no devices given");
  DUET_CHECK(rows > 0, "time_model_step: rows must be positive, got ", rows);
  Shape batch = example;
  batch.insert(batch.begin(), rows);
  std::vector<double> times(devices.size());
  run_on_devices(devices, [&](size_t k) {
    const Device device = devices[k];
    std::shared_ptr<nn::Module> net = nn::models::make(model);
    net->to(device);
    const Tensor x = randn(batch, {.device = device});
    const Tensor y = zeros({rows}, {.dtype = DType::i64, .device = device});
    times[k] = median_ms(repeats, [&] {
      net->zero_grad();
      nn::functional::cross_entropy(net->forward(x), y).backward();
      wait_for(device);
    });
  });
  return *std::max_element(times.begin(), times.end());
}

}  // namespace duet::parallel
