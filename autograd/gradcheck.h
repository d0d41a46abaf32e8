// gradcheck: compares the analytic gradient from backward with central finite differences.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "duet/core/tensor.h"

namespace duet {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch: which input, which element, both values
};

// `fn` maps the inputs (f64 leaves requiring grad) to one output of any shape; it is
// differentiated through sum(output * w) for a fixed random w, so every output element counts.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace duet
