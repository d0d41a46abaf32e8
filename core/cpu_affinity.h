// Which CPUs a thread may run on: the process's own set, and pinning a thread to some of them.
// The words here are CPU ids, nothing more; which cores a logical device owns is
// core/placement.h's business.
#pragma once

#include <pthread.h>

#include <vector>

namespace duet {

// The CPU ids this process may run on: its affinity mask as it was the first time it was asked,
// before any of its threads was pinned.
std::vector<int> available_cores();

// The CPU ids `thread` may run on now (none when the system cannot say).
std::vector<int> thread_cores(pthread_t thread);

// Pins `thread` to `cores`. With no cores, gives it the process's whole mask back, since a thread
// inherits its creator's mask, which may be pinned; until some thread was pinned, that is a no-op.
// Failure leaves the thread where it was: slower, not wrong.
void pin_thread(pthread_t thread, const std::vector<int>& cores);

}  // namespace duet
