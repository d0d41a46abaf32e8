// The MPI communicator's entry points in a build without MPI (parallel/comm/mpi_communicator.cpp
// is compiled only when CMake finds MPI).
#ifndef DUET_HAS_MPI

#include "duet/core/error.h"
#include "duet/parallel/comm/mpi_communicator.h"

namespace duet::parallel {

bool mpi_is_built() noexcept { return false; }

std::shared_ptr<Communicator> make_mpi_communicator(MpiOptions) {
  DUET_FAIL("make_mpi_communicator: duet was built without MPI (install libopenmpi-dev and reconfigure)");
}

MpiLocality mpi_locality() {
  DUET_FAIL("mpi_locality: duet was built without MPI (install libopenmpi-dev and reconfigure)");
}

}  // namespace duet::parallel

#endif  // DUET_HAS_MPI
