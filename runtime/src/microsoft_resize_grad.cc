// com.microsoft::ResizeGrad on the CPU: the op onnxruntime-training's gradient builder emits for every Resize
// (orttraining's training_op_defs.cc: inputs dY, X, optional roi, optional scales; output dX; the forward's
// attributes copied), for which onnxruntime ships CUDA and ROCm kernels only. Computed by ResizeGradPlan
// (resize_grad.h), the engine of resample_grad::ResizeGrad.
//
// The op has no `sizes` input. The builder passes the forward's roi and scales inputs verbatim, so:
// - scales given (a tensor of length rank, or len(axes) with `axes`): the forward's scales, exactly as Resize
//   used them (output length floor(scale * input) in float);
// - scales absent or empty (the forward took sizes): the output lengths are dY's, and each resized axis's scale
//   is the float ratio dY / X, as Resize computes it from sizes with keep_aspect_ratio_policy 'stretch'.
//   'not_larger' / 'not_smaller' scale every axis by one ratio that the shapes do not determine: refused.
//
// Built into the separate library libresample_grad_training_ops (register_training.cc), never into
// libresample_grad_ops: a library that registers a custom com.microsoft domain breaks onnxruntime's fusions
// (FusedConv, ...) in every session whose model does not import com.microsoft.
#include <string>
#include <vector>

#include "resize_grad.h"

namespace rg {
namespace {

struct MicrosoftResizeGrad : ResizeGradKernel {
  static constexpr const char* kName = "ResizeGrad";
  static constexpr int kSinceVersion = 1;
  static constexpr size_t kInputs = 4;  // dY, X, roi, scales

  MicrosoftResizeGrad(const OrtApi* api_, const OrtKernelInfo* info)
      : ResizeGradKernel(api_, info, "com.microsoft::ResizeGrad") {}

  void Compute(OrtKernelContext* context) {
    const Tensor dy = Input(api, context, 0), x = Input(api, context, 1);
    Tensor roi, scales;
    const bool has_roi = OptionalInput(api, context, 2, &roi);
    const bool has_scales = OptionalInput(api, context, 3, &scales) && scales.Count() > 0;
    plan.CheckInputs(dy, x);
    const Tensor* roi_given = has_roi ? &roi : nullptr;
    if (has_scales) {
      plan.Backward(api, context, dy, x, plan.Plan(x.dims, roi_given, &scales, nullptr), "these scales");
      return;
    }
    // No scales: the forward took sizes, and they are dY's lengths along the resized axes.
    const std::string& prefix = plan.Prefix();
    if (plan.AspectPolicy() != ResizeGradPlan::kStretch)
      throw OpError(prefix + "keep_aspect_ratio_policy '" + ResizeGradPlan::kPolicies[plan.AspectPolicy()] +
                    "' needs input 'scales': without it the forward's scale comes from the shapes of dY and X "
                    "(dY / X per axis, as Resize computes it from sizes with 'stretch'), which do not determine the "
                    "one scale '" + ResizeGradPlan::kPolicies[plan.AspectPolicy()] + "' applies to every axis");
    std::vector<int64_t> sizes;
    for (int64_t axis : plan.ListedAxes(static_cast<int64_t>(x.dims.size()))) {
      if (dy.dims[axis] <= 0)
        throw OpError(prefix + "input 'dY' has shape " + ShapeString(dy.dims) + ": without input 'scales' its lengths "
                      "along the resized axes are the forward's sizes, which Resize needs > 0");
      sizes.push_back(dy.dims[axis]);
    }
    Tensor sizes_tensor;
    sizes_tensor.type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    sizes_tensor.dims = {static_cast<int64_t>(sizes.size())};
    sizes_tensor.data = sizes.data();
    plan.Backward(api, context, dy, x, plan.Plan(x.dims, roi_given, nullptr, &sizes_tensor),
                  "sizes = dY's lengths along the resized axes (no scales given)");
  }
};

}  // namespace

TypedOps MicrosoftResizeGradOps() { return MakeTypedOps<MicrosoftResizeGrad>(); }

}  // namespace rg
