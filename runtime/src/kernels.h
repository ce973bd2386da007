// The op descriptors, one per kernel file, gathered by register.cc.
#pragma once

#include "kernel_common.h"

namespace rg {
TypedOps GridSampler2DGradOps();
TypedOps UpsampleNearestExact1dGradOps();
TypedOps UpsampleNearestExact2dGradOps();
TypedOps ResizeBilinearV2GradOps();
}  // namespace rg
