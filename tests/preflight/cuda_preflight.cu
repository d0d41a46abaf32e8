// The first thing bench/gpu.sh runs on a GPU machine, in seconds, before the rest of duet is
// built: does this machine run what duet was built with? It prints the GPU, the driver and the
// library versions, then checks, each step named on failure, that
//   - the CUDA runtime finds a GPU (else exit 77: ctest reports Skipped, and gpu.sh stops, since
//     nothing else could run either);
//   - a kernel built for this build's architectures (CMAKE_CUDA_ARCHITECTURES, sm_90) runs on it
//     and writes the right values ("no kernel image is available" shows here);
//   - cuBLAS and cuDNN (and NCCL, when built) load and create their handles: the libraries
//     found at configure time are the ones found at run time (LD_LIBRARY_PATH).
// It links the CUDA libraries but not libduet, so it builds in seconds.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#ifdef DUET_HAS_NCCL
#include <nccl.h>
#endif

#include <cstdio>
#include <vector>

namespace {

constexpr int kSkip = 77;

__global__ void fill_index(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3 * i + 1;
}

bool cuda_ok(cudaError_t status, const char* step) {
  if (status == cudaSuccess) return true;
  std::printf("FAILED: %s: %s (%s)\n", step, cudaGetErrorName(status), cudaGetErrorString(status));
  return false;
}

// A kernel of this build on device 0, and its result read back.
bool kernel_runs() {
  constexpr int n = 1000;
  int* device = nullptr;
  if (!cuda_ok(cudaMalloc(&device, n * sizeof(int)), "cudaMalloc")) return false;
  fill_index<<<(n + 255) / 256, 256>>>(device, n);
  bool ok = cuda_ok(cudaGetLastError(), "launching a kernel built for this build's architectures") &&
            cuda_ok(cudaDeviceSynchronize(), "running that kernel");
  std::vector<int> host(n, -1);
  ok = ok && cuda_ok(cudaMemcpy(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost), "reading its result");
  cudaFree(device);
  for (int i = 0; ok && i < n; ++i) {
    if (host[i] != 3 * i + 1) {
      std::printf("FAILED: the kernel wrote %d at %d, expected %d\n", host[i], i, 3 * i + 1);
      ok = false;
    }
  }
  return ok;
}

bool libraries_load() {
  bool ok = true;
  cublasHandle_t blas = nullptr;
  if (const cublasStatus_t s = cublasCreate(&blas); s != CUBLAS_STATUS_SUCCESS) {
    std::printf("FAILED: cublasCreate: %s\n", cublasGetStatusString(s));
    ok = false;
  } else {
    int version = 0;
    cublasGetVersion(blas, &version);
    std::printf("cuBLAS %d\n", version);
    cublasDestroy(blas);
  }
  cudnnHandle_t dnn = nullptr;
  if (const cudnnStatus_t s = cudnnCreate(&dnn); s != CUDNN_STATUS_SUCCESS) {
    std::printf("FAILED: cudnnCreate: %s\n", cudnnGetErrorString(s));
    ok = false;
  } else {
    std::printf("cuDNN %zu at run time, %d at build time\n", cudnnGetVersion(), CUDNN_VERSION);
    cudnnDestroy(dnn);
  }
#ifdef DUET_HAS_NCCL
  int nccl = 0;
  if (const ncclResult_t s = ncclGetVersion(&nccl); s != ncclSuccess) {
    std::printf("FAILED: ncclGetVersion: %s\n", ncclGetErrorString(s));
    ok = false;
  } else {
    std::printf("NCCL %d\n", nccl);
  }
#else
  std::printf("NCCL: not built\n");
#endif
  return ok;
}

}  // namespace

int main() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("CUDA runtime %d, driver supports %d\n", runtime, driver);
  int count = 0;
  const cudaError_t found = cudaGetDeviceCount(&count);
  if (found != cudaSuccess || count == 0) {
    std::printf("skipped: no usable CUDA device (%s)\n",
                found != cudaSuccess ? cudaGetErrorString(found) : "cudaGetDeviceCount found none");
    return kSkip;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (!cuda_ok(cudaGetDeviceProperties(&p, d), "cudaGetDeviceProperties")) return 1;
    std::printf("GPU %d: %s, sm_%d%d, %.1f GiB\n", d, p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1 << 30));
  }
  const bool kernel = kernel_runs();
  const bool libraries = libraries_load();  // checked even after a failed kernel: the log says more
  const bool ok = kernel && libraries;
  std::printf(ok ? "preflight: ok\n" : "preflight: FAILED\n");
  return ok ? 0 : 1;
}
