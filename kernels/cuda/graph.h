// CUDA graphs: the work one call queues on a device's stream, recorded once and then replayed
// with a single launch. A small model's training step is about a hundred kernels of a few
// microseconds each, so launching them one by one costs more than running them; a replay
// costs one launch. Plain C++ like runtime.h: in a build without CUDA, constructing a
// CapturedWork throws "built without CUDA" and capturing() is false.
//
// What a replay does is exactly what the recorded run queued: the same kernels with the same
// arguments on the same memory. So the recorded work must
//   - never wait for the device or read device memory on the host (no item(), no synchronising
//     copy): those calls fail during the capture;
//   - draw no random numbers (every replay would reuse them; duet refuses rand() while
//     capturing);
//   - take anything that changes between replays from device memory: copy new inputs into the
//     tensors the capture read, and read results from the tensors it wrote.
// Nothing runs while recording: the first replay performs the work for the first time.
//
// Memory. Every allocation on the device during the capture comes from a pool private to this
// CapturedWork, and blocks freed during the capture return to that pool only, so the addresses
// baked into the graph are never handed to other tensors while it can still be replayed. The
// pool goes back to the device's cache when the CapturedWork is destroyed.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "duet/core/device.h"

namespace duet::cuda {

class CapturedWork {
 public:
  explicit CapturedWork(Device device);  // throws unless `device` is a usable CUDA device
  ~CapturedWork();
  CapturedWork(const CapturedWork&) = delete;
  CapturedWork& operator=(const CapturedWork&) = delete;

  // Runs `work` on this thread while recording what it queues on the device's stream (work
  // that other threads queue there meanwhile, like the backward engine's device worker, is
  // recorded too; copies between host and device from other threads wait instead, see
  // outside_recording). Throws, naming the CUDA error, if the work cannot be recorded; the
  // device is then usable as before. Only once per CapturedWork.
  void capture(const std::function<void()>& work);
  // Queues one replay on the device's stream and returns without waiting for it.
  void replay();
  Device device() const { return device_; }

 private:
  struct Graph;
  Device device_;
  std::unique_ptr<Graph> graph_;
};

// True while some CapturedWork records `device`'s stream. Operations that must wait for the
// device (checking values on the host) or that cannot be replayed (random numbers) look at it.
bool capturing(Device device) noexcept;

// Runs `enqueue`, a copy between the host and `device` queued on the device's stream, outside
// any recording of `device`: called from a thread other than the recording one, it waits until
// the recording ends, and keeps a new one from starting until `enqueue` returns. Without this a
// DataLoader's thread (pin_memory, device = cuda:0) feeding GraphedSingleDevice would have its
// copy recorded into the step's graph: not run when issued, and run again at every replay from a
// pinned block reused since, with an event the next pinned allocation cannot query. On the
// recording thread itself, `enqueue` runs (and is recorded) at once.
void outside_recording(Device device, const std::function<void()>& enqueue);

// For a call into a library that queues work on `device`'s stream (cuDNN): while the device is
// being recorded, throws when the call failed (`failure`, the library's message, non-empty) or
// broke the recording (CUDA invalidates a capture when work inside it waits for the device or
// uses another stream), naming `call` and a capture-safe alternative (`remedy`). A library
// failing there may fail only because it is being recorded, so its callers must not fall back
// to other algorithms: the fallback would be recorded into a broken graph. Without a
// recording, does nothing.
void check_recording(Device device, const std::string& call, const std::string& failure, const std::string& remedy);

}  // namespace duet::cuda
