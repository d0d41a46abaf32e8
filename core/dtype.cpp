#include "duet/core/dtype.h"

namespace duet {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, DType t) { return out << dtype_name(t); }

}  // namespace duet
