// Tensor factories: allocate on the target device, then fill through kernels::.
#include "duet/autograd/factory.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "duet/core/allocator.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

// Marks the finished tensor as a leaf requiring grad when asked (after it was filled, since
// in-place writes refuse tensors that require grad).
Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad) t.requires_grad_();
  return t;
}

// The options of the tensor before it is filled: everything but requires_grad.
TensorOptions before_finish(TensorOptions options) {
  options.requires_grad = false;
  return options;
}

Tensor filled(Shape sizes, double value, const TensorOptions& options) {
  Tensor t = empty(std::move(sizes), before_finish(options));
  if (t.numel() > 0) kernels::fill(t, value);
  return finish(std::move(t), options);
}

Generator& generator_or_default(Generator* generator) { return generator ? *generator : default_generator(); }

// Also refuses to draw on a device whose work a CUDA graph is recording: the numbers would be
// baked into the graph, and every replay would reuse them.
void check_random(const char* op, const TensorOptions& options) {
  DUET_CHECK(is_floating(options.dtype), op, ": expected a floating dtype (f32 or f64), got ",
             dtype_name(options.dtype));
  DUET_CHECK(!cuda::capturing(options.device), op, " on ", options.device,
             ": random numbers cannot be recorded in a CUDA graph (every replay would reuse them); "
             "train models with dropout without --cuda-graph");
}

// from_vector<int> stores i64, so from_vector<int>({1, 2}) gives an index tensor.
template <class T> using stored_t = std::conditional_t<std::is_same_v<T, int>, int64_t, T>;

}  // namespace

Tensor empty(Shape sizes, TensorOptions options) {
  for (int64_t s : sizes) DUET_CHECK(s >= 0, "empty: negative size in shape ", shape_str(sizes));
  DUET_CHECK(!options.pin_memory || options.device.is_cpu(), "empty: pin_memory applies to host memory, not to ",
             options.device);
  const size_t bytes = static_cast<size_t>(numel(sizes)) * element_size(options.dtype);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = options.pin_memory ? std::make_shared<Storage>(bytes, options.device, pinned_allocator())
                                     : std::make_shared<Storage>(bytes, options.device);
  impl->strides = contiguous_strides(sizes);
  impl->sizes = std::move(sizes);
  impl->dtype = options.dtype;
  return finish(Tensor(std::move(impl)), options);
}

Tensor zeros(Shape sizes, TensorOptions options) { return filled(std::move(sizes), 0.0, options); }
Tensor ones(Shape sizes, TensorOptions options) { return filled(std::move(sizes), 1.0, options); }
Tensor full(Shape sizes, double value, TensorOptions options) { return filled(std::move(sizes), value, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  DUET_CHECK(step != 0, "arange: step must be non-zero");
  DUET_CHECK(std::isfinite(start) && std::isfinite(end), "arange: start ", start, " and end ", end, " must be finite");
  auto n = static_cast<int64_t>(std::max(0.0, std::ceil((end - start) / step)));
  Tensor t = empty({n}, before_finish(options));
  if (n > 0) kernels::arange(t, start, step);
  return finish(std::move(t), options);
}

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor rand(Shape sizes, TensorOptions options, Generator* generator) {
  check_random("rand", options);
  Tensor t = empty(std::move(sizes), before_finish(options));
  Generator& gen = generator_or_default(generator);
  // One 32-bit number per element.
  uint64_t first_block = gen.reserve(static_cast<uint64_t>(t.numel()));
  if (t.numel() > 0) kernels::uniform(t, gen.seed(), first_block, 0.0, 1.0);
  return finish(std::move(t), options);
}

Tensor randn(Shape sizes, TensorOptions options, Generator* generator) {
  check_random("randn", options);
  Tensor t = empty(std::move(sizes), before_finish(options));
  Generator& gen = generator_or_default(generator);
  // Box-Muller turns each pair of numbers into two normals: reserve an even count.
  auto count = static_cast<uint64_t>(t.numel());
  uint64_t first_block = gen.reserve(count + count % 2);
  if (t.numel() > 0) kernels::normal(t, gen.seed(), first_block, 0.0, 1.0);
  return finish(std::move(t), options);
}

// The element type decides the dtype (float -> f32, double -> f64, int/int64_t -> i64,
// uint8_t -> u8). TensorOptions cannot say "unset", so a dtype other than the default f32
// in `options` is taken as a request to convert.
template <class T> Tensor from_vector(const std::vector<T>& values, Shape sizes, TensorOptions options) {
  using S = stored_t<T>;
  if (sizes.empty()) sizes = {static_cast<int64_t>(values.size())};
  DUET_CHECK(numel(sizes) == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
             " values do not fill shape ", shape_str(sizes), " (", numel(sizes), " elements)");
  Tensor host = empty(sizes, {.dtype = dtype_of<S>(), .device = cpu()});
  S* dst = host.template data<S>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<S>(values[i]);
  DType dtype = options.dtype == DType::f32 ? dtype_of<S>() : options.dtype;
  if (dtype == host.dtype() && options.device == host.device() && !options.pin_memory)
    return finish(std::move(host), options);
  Tensor out = empty(std::move(sizes), {.dtype = dtype, .device = options.device, .pin_memory = options.pin_memory});
  kernels::copy(host, out);
  return finish(std::move(out), options);
}

template Tensor from_vector<float>(const std::vector<float>&, Shape, TensorOptions);
template Tensor from_vector<double>(const std::vector<double>&, Shape, TensorOptions);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, Shape, TensorOptions);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, Shape, TensorOptions);
template Tensor from_vector<int>(const std::vector<int>&, Shape, TensorOptions);

Tensor empty_like(const Tensor& t) { return empty(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }

}  // namespace duet
