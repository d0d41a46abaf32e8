// PyTorch-style printing (as torch/_tensor_str.py in github.com/pytorch/pytorch does it): one number format for the
// whole tensor, chosen from the values shown; rows wrapped at 80 columns; edge items around "..." beyond 1000 elements;
// suffixes for a non-default device or dtype and for autograd state.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "duet/autograd/node.h"
#include "duet/core/tensor.h"

namespace duet {
namespace {

constexpr int64_t kSummarizeThreshold = 1000;  // more elements than this are summarised
constexpr int64_t kEdgeItems = 3;              // shown at each end of a summarised dim
constexpr int64_t kLineWidth = 80;

template <class... Args> std::string printf_str(const char* format, Args... args) {
  int length = std::snprintf(nullptr, 0, format, args...);
  std::string out(static_cast<size_t>(std::max(length, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, args...);
  out.pop_back();
  return out;
}

// The tensor's elements in row-major order on the host: doubles for floating dtypes,
// int64 for the integer ones.
struct HostValues {
  bool floating;
  std::vector<double> reals;
  std::vector<int64_t> integers;
};

HostValues host_values(const Tensor& t) {
  if (is_floating(t.dtype())) return {true, t.to_vector<double>(), {}};
  return {false, {}, t.to_vector<int64_t>()};
}

// Indices shown along a dim of `size`: all, or the edge items of a summarised dim (-1 marks "...").
std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
  std::vector<int64_t> out;
  if (summarize && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(-1);
    for (int64_t i = size - kEdgeItems; i < size; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) out.push_back(i);
  }
  return out;
}

// Flat indices of every element that will be printed.
void collect_shown(const Shape& sizes, const Shape& strides, size_t dim, int64_t base, bool summarize,
                   std::vector<int64_t>& out) {
  if (dim == sizes.size()) {
    out.push_back(base);
    return;
  }
  for (int64_t i : shown_indices(sizes[dim], summarize)) {
    if (i >= 0) collect_shown(sizes, strides, dim + 1, base + i * strides[dim], summarize, out);
  }
}

// Chooses one format for all values, as torch's _Formatter does: integers as "%lld"; floats
// as "1." when all are integral, "%.4f" otherwise, and "%.4e" when the magnitudes span more
// than 1000x, exceed 1e8, or (non-integral) fall below 1e-4. All are padded to one width.
class Formatter {
 public:
  Formatter(const HostValues& values, const std::vector<int64_t>& shown) : values_(values) {
    if (!values.floating) {
      for (int64_t i : shown) width_ = std::max(width_, raw(i).size());
      return;
    }
    std::vector<double> finite_nonzero;
    for (int64_t i : shown) {
      double v = values.reals[static_cast<size_t>(i)];
      if (std::isfinite(v) && v != 0) finite_nonzero.push_back(v);
    }
    if (finite_nonzero.empty()) return;
    double lo = INFINITY, hi = 0;
    for (double v : finite_nonzero) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : finite_nonzero) width_ = std::max(width_, format_real(v).size());
  }

  size_t width() const { return width_; }

  std::string format(int64_t index) const {
    std::string s = raw(index);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  std::string raw(int64_t index) const {
    if (!values_.floating)
      return printf_str("%lld", static_cast<long long>(values_.integers[static_cast<size_t>(index)]));
    return format_real(values_.reals[static_cast<size_t>(index)]);
  }
  std::string format_real(double v) const {
    if (sci_mode_) return printf_str("%.4e", v);
    if (int_mode_) return printf_str("%.0f", v) + (std::isfinite(v) ? "." : "");
    return printf_str("%.4f", v);
  }

  const HostValues& values_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

// Built with append rather than operator+, which trips GCC 12's false -Wrestrict warning.
std::string join(const std::vector<std::string>& parts, const std::string& separator, const std::string& open = "",
                 const std::string& close = "") {
  std::string out = open;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  out += close;
  return out;
}

// A separator: `before`, then `newlines` newlines, then `spaces` spaces.
std::string separator(const char* before, size_t newlines, int64_t spaces) {
  std::string out = before;
  out.append(newlines, '\n');
  out.append(static_cast<size_t>(spaces), ' ');
  return out;
}

struct Printer {
  const Shape& sizes;
  const Shape& strides;
  const Formatter& formatter;
  bool summarize;

  // The bracketed text of the sub-tensor at `dim` starting at flat index `base`.
  std::string print(size_t dim, int64_t base, int64_t indent) const {
    const bool innermost = dim + 1 == sizes.size();
    std::vector<std::string> parts;
    for (int64_t i : shown_indices(sizes[dim], summarize)) {
      if (i < 0) {
        parts.push_back(innermost ? " ..." : "...");
      } else if (innermost) {
        parts.push_back(formatter.format(base + i * strides[dim]));
      } else {
        parts.push_back(print(dim + 1, base + i * strides[dim], indent + 1));
      }
    }
    if (!innermost) {
      return join(parts, separator(",", sizes.size() - dim - 1, indent + 1), "[", "]");
    }
    const auto per_line =
        static_cast<size_t>(std::max<int64_t>(1, (kLineWidth - indent) / static_cast<int64_t>(formatter.width() + 2)));
    std::vector<std::string> lines;
    for (size_t start = 0; start < parts.size(); start += per_line) {
      auto first = parts.begin() + static_cast<std::ptrdiff_t>(start);
      auto last = parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), start + per_line));
      lines.push_back(join(std::vector<std::string>(first, last), ", "));
    }
    return join(lines, separator(",", 1, indent + 1), "[", "]");
  }
};

std::string values_str(const Tensor& t, int64_t indent) {
  if (t.numel() == 0) return "[]";
  const bool summarize = t.numel() > kSummarizeThreshold;
  HostValues values = host_values(t);
  Shape strides = contiguous_strides(t.sizes());
  std::vector<int64_t> shown;
  collect_shown(t.sizes(), strides, 0, 0, summarize, shown);
  Formatter formatter(values, shown);
  if (t.dim() == 0) return formatter.format(0);
  return Printer{t.sizes(), strides, formatter, summarize}.print(0, 0, indent);
}

// Appends ", suffix" to the text, or starts a new line when it would pass 80 columns
// (torch's _add_suffixes, including its way of measuring the last line).
std::string add_suffixes(const std::string& text, const std::vector<std::string>& suffixes, int64_t indent) {
  std::string out = text;
  size_t newline = text.rfind('\n');
  auto last_line =
      static_cast<int64_t>(text.size()) - (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    const auto length = static_cast<int64_t>(suffix.size());
    if (last_line + length + 2 > kLineWidth) {
      out += separator(",", 1, indent);
      out += suffix;
      last_line = indent + length;
    } else {
      out += ", ";
      out += suffix;
      last_line += length + 2;
    }
  }
  out += ")";
  return out;
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const auto indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (device() != cpu(0)) suffixes.push_back("device='" + device().str() + "'");
  if (numel() == 0) {
    if (dim() != 1) {
      std::vector<std::string> dims;
      for (int64_t s : sizes()) dims.push_back(std::to_string(s));
      suffixes.push_back(join(dims, ", ", "size=(", dims.size() == 1 ? ",)" : ")"));
    }
    // No values to tell an integer tensor by: name every dtype but the default.
    if (dtype() != DType::f32) suffixes.push_back(std::string("dtype=") + dtype_name(dtype()));
  } else if (dtype() != DType::f32 && dtype() != DType::i64) {
    suffixes.push_back(std::string("dtype=") + dtype_name(dtype()));
  }
  if (grad_fn()) {
    suffixes.push_back("grad_fn=<" + grad_fn()->name() + ">");
  } else if (requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  return add_suffixes(prefix + values_str(*this, indent), suffixes, indent);
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.str(); }

}  // namespace duet
