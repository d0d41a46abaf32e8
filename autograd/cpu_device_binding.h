// Threads that work for a logical CPU device: where core/placement.h's cores meet the kernels'
// pools. Binding a thread to cpu:i pins it to cpu:i's cores and hands the kernels a pool of
// cpu:i's size pinned to them, so that its loops run there; when cpu:i owns no cores, the thread
// gets the process's cores back and the shared pool. It lives here, above the kernels, because
// core cannot make the kernels' pools and the kernels know nothing of devices; the engine's
// device workers (autograd/device_workers.h) are its first users.
#pragma once

namespace duet::autograd {

// Makes the calling thread work for cpu:index from now on. Cheap when neither the device nor the
// placement changed since the thread's last call, so persistent threads call it before each job:
// that is also how they notice a new placement.
void bind_thread_to_cpu_device(int index);

// The same for one scope: the thread's earlier binding (or none) comes back at its end.
class CpuDeviceScope {
 public:
  explicit CpuDeviceScope(int index);
  ~CpuDeviceScope();
  CpuDeviceScope(const CpuDeviceScope&) = delete;
  CpuDeviceScope& operator=(const CpuDeviceScope&) = delete;

 private:
  int previous_;
};

}  // namespace duet::autograd
