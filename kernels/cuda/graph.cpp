#include "duet/kernels/cuda/graph.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "duet/core/error.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/private_pool.h"

namespace duet::cuda {
namespace {

// Which logical devices are being recorded. A flag of our own rather than
// cudaStreamIsCapturing: it is asked from hot paths and must not create streams or throw.
std::array<std::atomic<bool>, kMaxDevicesPerType> recording{};

// Held exclusively by a recording, shared by other threads' host-device copies
// (outside_recording), per logical device; with the thread that records.
struct Gate {
  std::shared_mutex mutex;
  std::atomic<std::thread::id> recorder{};
};
std::array<Gate, kMaxDevicesPerType>& gates() {
  static auto* g = new std::array<Gate, kMaxDevicesPerType>();
  return *g;
}

}  // namespace

void outside_recording(Device device, const std::function<void()>& enqueue) {
  Gate& gate = gates()[static_cast<size_t>(device.index)];
  if (gate.recorder.load() == std::this_thread::get_id()) {
    enqueue();
    return;
  }
  std::shared_lock lock(gate.mutex);
  enqueue();
}

struct CapturedWork::Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int pool = 0;  // the private pool of the captured work's memory; 0 before capture()
};

CapturedWork::CapturedWork(Device device) : device_(device), graph_(std::make_unique<Graph>()) { check_device(device); }

CapturedWork::~CapturedWork() {
  // An in-flight replay is not cut short: CUDA frees a running graph when it completes, and the
  // pool's blocks are reused only by later work on the same stream. A destructor cannot throw.
  if (graph_->exec) ignore_cuda_error(cudaGraphExecDestroy(graph_->exec));
  if (graph_->graph) ignore_cuda_error(cudaGraphDestroy(graph_->graph));
  if (graph_->pool) release_private_pool(device_, graph_->pool);
}

void CapturedWork::capture(const std::function<void()>& work) {
  DUET_CHECK(!graph_->pool, "CapturedWork on ", device_, ": already captured (a CapturedWork records once)");
  DeviceGuard guard(device_);
  cudaStream_t s = stream(device_);
  Gate& gate = gates()[static_cast<size_t>(device_.index)];
  std::unique_lock closed(gate.mutex);  // other threads' host-device copies wait until the end
  gate.recorder = std::this_thread::get_id();
  struct Reopen {
    Gate& gate;
    ~Reopen() { gate.recorder = std::thread::id(); }
  } reopen{gate};
  graph_->pool = begin_private_pool(device_);
  // Relaxed: the caching allocator may cudaMalloc while recording, and other threads (the
  // loader's cudaHostAlloc) must not be refused meanwhile. Any thread's launches into `s` are
  // recorded, whatever the mode.
  if (cudaError_t began = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed); began != cudaSuccess) {
    end_private_pool(device_);
    release_private_pool(device_, graph_->pool);
    graph_->pool = 0;  // nothing was recorded: capture() may be tried again
    cudaGetLastError();
    DUET_FAIL("recording a CUDA graph on ", device_, ": cudaStreamBeginCapture failed: ", cudaGetErrorString(began));
  }
  auto& flag = recording[static_cast<size_t>(device_.index)];
  flag = true;
  std::exception_ptr failure;
  try {
    work();
  } catch (...) {
    failure = std::current_exception();
  }
  flag = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  end_private_pool(device_);
  if (failure || ended != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture errors are not sticky; clear the last one
    release_private_pool(device_, graph_->pool);
    graph_->pool = 0;
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        DUET_FAIL("recording a CUDA graph on ", device_, ": ", e.what());
      }
    }
    DUET_FAIL("recording a CUDA graph on ", device_, ": ", cudaGetErrorString(ended),
              " (the recorded work waited for the device or used another stream, which a graph cannot replay; "
              "if it ran convolutions or batch norms, DUET_CONV_IM2COL=1 and DUET_BATCH_NORM_KERNELS=duet keep "
              "them out of cuDNN)");
  }
  graph_->graph = graph;
  DUET_CUDA_CHECK(cudaGraphInstantiate(&graph_->exec, graph_->graph, 0));
}

void CapturedWork::replay() {
  DUET_CHECK(graph_->exec, "CapturedWork on ", device_, ": replay() before capture()");
  DeviceGuard guard(device_);
  DUET_CUDA_CHECK(cudaGraphLaunch(graph_->exec, stream(device_)));
}

void check_recording(Device device, const std::string& call, const std::string& failure, const std::string& remedy) {
  if (!capturing(device)) return;
  std::string problem = failure;
  if (problem.empty()) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t asked = cudaStreamIsCapturing(stream(device), &status);
    if (asked != cudaSuccess) {
      cudaGetLastError();
      problem = std::string("cudaStreamIsCapturing failed after it: ") + cudaGetErrorString(asked);
    } else if (status == cudaStreamCaptureStatusInvalidated) {
      problem = "it broke the recording (CUDA invalidated the capture)";
    }
  }
  if (problem.empty()) return;
  DUET_FAIL(call, " while recording a CUDA graph on ", device, ": ", problem, ". ", remedy);
}

bool capturing(Device device) noexcept {
  return device.is_cuda() && device.index >= 0 && device.index < kMaxDevicesPerType &&
         recording[static_cast<size_t>(device.index)].load();
}

}  // namespace duet::cuda
