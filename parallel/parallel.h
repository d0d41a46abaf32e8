// Umbrella header for duet::parallel: strategies, communicators, communication ops, the
// training loop, and the experiment runner and cost model behind `duet compare`.
#pragma once

#include "duet/parallel/comm/comm_counter.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm_ops.h"
#include "duet/parallel/cost_model.h"
#include "duet/parallel/data_parallel.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/experiment.h"
#include "duet/parallel/graphed_single_device.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy.h"
#include "duet/parallel/sync_batch_norm.h"
#include "duet/parallel/trainer.h"
