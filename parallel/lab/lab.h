// Umbrella header for duet::parallel's lab: what `duet compare` uses to measure the strategies
// and predict them. The experiment runner (experiment.h) with its per-step check against
// single-device training (step_check.h) and its scaling sweep (scaling_sweep.h); the cost model
// (cost_model.h), its event simulation of one step (step_simulation.h), the links calibrated for
// it (link_calibration.h) and the predictions made from them (step_prediction.h); and the regime
// map's winners (regime_map.h).
#pragma once

#include "duet/parallel/lab/cost_model.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/link_calibration.h"
#include "duet/parallel/lab/regime_map.h"
#include "duet/parallel/lab/scaling_sweep.h"
#include "duet/parallel/lab/step_check.h"
#include "duet/parallel/lab/step_prediction.h"
#include "duet/parallel/lab/step_simulation.h"
