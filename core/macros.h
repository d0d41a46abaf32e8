// Macros shared by host and device code.
#pragma once

// DUET_HD marks functions that compile for both the CPU and CUDA kernels, so the math
// is written once (docs/design.md, section 3).
#if defined(__CUDACC__)
#define DUET_HD __host__ __device__
#else
#define DUET_HD
#endif
