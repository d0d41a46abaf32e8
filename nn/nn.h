// Umbrella header for duet::nn: modules, layers, functional ops, init, models, safetensors.
#pragma once

#include "duet/nn/functional.h"
#include "duet/nn/fused_sequential.h"
#include "duet/nn/init.h"
#include "duet/nn/layers.h"
#include "duet/nn/models/models.h"
#include "duet/nn/module.h"
#include "duet/nn/safetensors.h"
