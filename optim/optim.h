// Umbrella header for duet::optim: optimizers, schedules and checkpoints.
#pragma once

#include "duet/optim/adam.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/optimizer.h"
#include "duet/optim/schedule.h"
#include "duet/optim/sgd.h"
