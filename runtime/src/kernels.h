// The op families, defined in the kernel files and registered by register.cc: each function returns the descriptors
// of every op of its family, every dtype of each. A new op of the separable families is a row of its file's table
// (kUpsampleRows, kResizeV2Rows); a new family is a line here and a line of register.cc's kFamilies.
#pragma once

#include "kernel_common.h"

namespace rg {
OpList GridSamplerGradOps();  // grid_sampler_grad.cc: GridSampler2DGrad, GridSampler3DGrad
OpList UpsampleGradOps();     // upsample_grad.cc: the torch-style Upsample*Grad ops, kUpsampleRows
OpList ResizeV2GradOps();     // resize_v2_grad.cc: CANN's Resize*V2Grad and ResizeLinearGrad, kResizeV2Rows
OpList ResizeGradOps();       // resize_grad.cc: ONNX Resize's gradient, ResizeGrad
}  // namespace rg
