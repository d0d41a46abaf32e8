// Umbrella header for duet::parallel: strategies and the training loop.
#pragma once

#include "duet/parallel/strategy.h"
#include "duet/parallel/trainer.h"
