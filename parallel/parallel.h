// Umbrella header for duet::parallel: strategies, communication ops and the training loop.
#pragma once

#include "duet/parallel/comm_counter.h"
#include "duet/parallel/comm_ops.h"
#include "duet/parallel/strategy.h"
#include "duet/parallel/trainer.h"
