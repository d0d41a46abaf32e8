#include "duet/parallel/comm/comm_counter.h"

namespace duet::parallel {

CommCounter& comm_counter() {
  static CommCounter counter;
  return counter;
}

}  // namespace duet::parallel
