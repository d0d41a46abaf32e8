// Umbrella header for duet::parallel: the strategies, their communicators and communication ops,
// and the training loop. The instruments that measure and predict them (`duet compare`'s
// experiment runner, per-step check and cost model) are in parallel/lab/ (lab.h), which depends
// on this layer and never the other way round.
#pragma once

#include "duet/parallel/comm/comm_counter.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/comm_ops.h"
#include "duet/parallel/data_parallel.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/graphed_single_device.h"
#include "duet/parallel/loss_fn.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy.h"
#include "duet/parallel/sync_batch_norm.h"
#include "duet/parallel/trainer.h"
