// cast_value now lives in kernels/cast.h, shared with the CUDA kernels (DUET_HD); it is found
// from namespace kernels::cpu by ordinary lookup.
#pragma once

#include "duet/kernels/cast.h"
