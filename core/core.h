// Umbrella header for duet::core.
#pragma once

#include "duet/core/allocator.h"
#include "duet/core/device.h"
#include "duet/core/dtype.h"
#include "duet/core/error.h"
#include "duet/core/generator.h"
#include "duet/core/per_axis.h"
#include "duet/core/shape.h"
#include "duet/core/storage.h"
#include "duet/core/tensor.h"
