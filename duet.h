// The umbrella header: everything a duet user needs.
#pragma once

#include "duet/core/core.h"
#include "duet/kernels/kernels.h"
#include "duet/autograd/autograd.h"
