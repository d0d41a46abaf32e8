// Umbrella header for the op layer: differentiable ops, factories, autograd and gradcheck.
#pragma once

#include "duet/autograd/engine.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/gradcheck.h"
#include "duet/autograd/ops.h"
