// Umbrella header for duet::data: IDX files, datasets, the DataLoader and samplers.
#pragma once

#include "duet/data/dataloader.h"
#include "duet/data/dataset.h"
#include "duet/data/fashion_mnist.h"
#include "duet/data/idx.h"
#include "duet/data/sampler.h"
