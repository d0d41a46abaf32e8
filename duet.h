// The umbrella header: everything a duet user needs.
#pragma once

#include "duet/autograd/autograd.h"
#include "duet/core/core.h"
#include "duet/data/data.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/nn.h"
#include "duet/optim/optim.h"
#include "duet/parallel/lab/lab.h"
#include "duet/parallel/parallel.h"
