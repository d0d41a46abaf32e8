// The first thing bench/gpu/gpu.sh runs on a GPU machine, in seconds, before the rest of duet is
// built: does this machine run what duet was built with? It prints the GPU, the driver and the
// library versions, then checks, each step named on failure, that
//   - the CUDA runtime finds a GPU (else exit 77: ctest reports Skipped, and gpu.sh stops, since
//     nothing else could run either);
//   - a kernel built for this build's architectures (CMAKE_CUDA_ARCHITECTURES, sm_90) runs on it
//     and writes the right values ("no kernel image is available" shows here);
//   - cuBLAS loads and creates its handle: the libraries found at configure time are the ones
//     found at run time (LD_LIBRARY_PATH);
//   - cuDNN (when built) was built for this CUDA runtime's major version (else it names the
//     package to use) and runs one small convolution with the right result;
//   - NCCL (when built) creates a one-rank communicator and all-reduces one element.
// Loading a library is not enough: a cuDNN for another CUDA major, or an NCCL that cannot set up
// its transport, loads and fails at its first real call.
// It links the CUDA libraries but not libduet, so it builds in seconds.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef DUET_HAS_CUDNN
#include <cudnn.h>
#endif
#ifdef DUET_HAS_NCCL
#include <nccl.h>
#endif

#include <cmath>
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

#ifdef DUET_HAS_CUDNN
bool cudnn_ok(cudnnStatus_t status, const char* step) {
  if (status == CUDNN_STATUS_SUCCESS) return true;
  std::printf("FAILED: cuDNN: %s: %s\n", step, cudnnGetErrorString(status));
  return false;
}

// cuDNN is built for one CUDA major version; with another runtime its kernels fail to load.
bool cudnn_matches_runtime() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const size_t built_for = cudnnGetCudartVersion();
  std::printf("cuDNN %zu at run time, %d at build time, built for CUDA %zu.%zu\n", cudnnGetVersion(), CUDNN_VERSION,
              built_for / 1000, built_for % 1000 / 10);
  if (static_cast<int>(built_for / 1000) == runtime / 1000) return true;
  std::printf(
      "FAILED: cuDNN was built for CUDA %zu but the runtime is CUDA %d: use the cuDNN package for CUDA %d "
      "(pip: nvidia-cudnn-cu%d; CUDNN_ROOT or bench/gpu/gpu_env.sh picks where it is)\n",
      built_for / 1000, runtime / 1000, runtime / 1000, runtime / 1000);
  return false;
}

// One 1 x 1 x 4 x 4 image of ones through a 1 x 1 x 3 x 3 filter of ones, no padding: every
// output is 9. Uses cuDNN's first heuristic algorithm, as duet does.
bool cudnn_convolution_runs() {
  cudnnHandle_t h = nullptr;
  if (!cudnn_ok(cudnnCreate(&h), "cudnnCreate")) return false;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  float *dx = nullptr, *dw = nullptr, *dy = nullptr;
  void* workspace = nullptr;
  std::vector<float> out(4, 0.0f);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  size_t bytes = 0;
  const float one = 1, zero = 0;
  const std::vector<float> ones(16, 1.0f);
  bool ok =
      cudnn_ok(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor") &&
      cudnn_ok(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor") &&
      cudnn_ok(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor") &&
      cudnn_ok(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor") &&
      cudnn_ok(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4), "x descriptor") &&
      cudnn_ok(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2), "y descriptor") &&
      cudnn_ok(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 3, 3), "w descriptor") &&
      cudnn_ok(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "convolution descriptor") &&
      cudnn_ok(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
               "cudnnGetConvolutionForwardAlgorithm_v7");
  ok = ok && found > 0 &&
       cudnn_ok(cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, perf[0].algo, &bytes), "workspace size") &&
       cuda_ok(cudaMalloc(&dx, 16 * sizeof(float)), "cudaMalloc") &&
       cuda_ok(cudaMalloc(&dw, 9 * sizeof(float)), "cudaMalloc") &&
       cuda_ok(cudaMalloc(&dy, 4 * sizeof(float)), "cudaMalloc") &&
       (bytes == 0 || cuda_ok(cudaMalloc(&workspace, bytes), "cudaMalloc (workspace)")) &&
       cuda_ok(cudaMemcpy(dx, ones.data(), 16 * sizeof(float), cudaMemcpyHostToDevice), "copy x") &&
       cuda_ok(cudaMemcpy(dw, ones.data(), 9 * sizeof(float), cudaMemcpyHostToDevice), "copy w") &&
       cudnn_ok(cudnnConvolutionForward(h, &one, x, dx, w, dw, conv, perf[0].algo, workspace, bytes, &zero, y, dy),
                "cudnnConvolutionForward") &&
       cuda_ok(cudaMemcpy(out.data(), dy, 4 * sizeof(float), cudaMemcpyDeviceToHost), "reading the convolution");
  for (size_t i = 0; ok && i < out.size(); ++i) {
    if (std::fabs(out[i] - 9.0f) > 1e-5f) {
      std::printf("FAILED: cuDNN's convolution wrote %g at %zu, expected 9\n", out[i], i);
      ok = false;
    }
  }
  if (ok) std::printf("cuDNN: a 3x3 convolution ran (algorithm %d)\n", static_cast<int>(perf[0].algo));
  cudaFree(workspace);
  cudaFree(dy);
  cudaFree(dw);
  cudaFree(dx);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (x) cudnnDestroyTensorDescriptor(x);
  cudnnDestroy(h);
  return ok;
}
#endif

#ifdef DUET_HAS_NCCL
bool nccl_ok(ncclResult_t status, const char* step) {
  if (status == ncclSuccess) return true;
  std::printf("FAILED: NCCL: %s: %s\n", step, ncclGetErrorString(status));
  return false;
}

// A one-rank communicator on GPU 0 and an all-reduce of one element: NCCL's setup (shared
// memory, its proxy thread) runs even with one rank, and is where a container's limits show.
bool nccl_all_reduce_runs() {
  int version = 0;
  if (!nccl_ok(ncclGetVersion(&version), "ncclGetVersion")) return false;
  std::printf("NCCL %d\n", version);
  ncclComm_t comm = nullptr;
  int device = 0;
  if (!nccl_ok(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll (one rank)")) return false;
  float* value = nullptr;
  float result = 0;
  const float three = 3;
  bool ok = cuda_ok(cudaMalloc(&value, sizeof(float)), "cudaMalloc") &&
            cuda_ok(cudaMemcpy(value, &three, sizeof(float), cudaMemcpyHostToDevice), "copy") &&
            nccl_ok(ncclAllReduce(value, value, 1, ncclFloat, ncclSum, comm, nullptr), "ncclAllReduce") &&
            cuda_ok(cudaDeviceSynchronize(), "waiting for the all-reduce") &&
            cuda_ok(cudaMemcpy(&result, value, sizeof(float), cudaMemcpyDeviceToHost), "reading the all-reduce");
  if (ok && result != 3) {
    std::printf("FAILED: NCCL's one-rank all-reduce gave %g, expected 3\n", result);
    ok = false;
  }
  if (ok) std::printf("NCCL: a one-rank all-reduce ran\n");
  cudaFree(value);
  ncclCommDestroy(comm);
  return ok;
}
#endif

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
#ifdef DUET_HAS_CUDNN
  // A cuDNN for another CUDA major would fail in the convolution with a less useful message.
  ok = cudnn_matches_runtime() && cudnn_convolution_runs() && ok;
#else
  std::printf("cuDNN: not built (DUET_CUDNN): convolution through im2col, batch norm on duet's kernels\n");
#endif
#ifdef DUET_HAS_NCCL
  ok = nccl_all_reduce_runs() && ok;
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
