// The gradient of ONNX Resize, shared by resample_grad::ResizeGrad (resize_grad.cc: inputs dY, X, roi, scales,
// sizes) and com.microsoft::ResizeGrad (microsoft_resize_grad.cc: inputs dY, X, roi, scales; onnxruntime-training's
// contrib op, whose gradient builder emits it for every Resize): the Resize attributes, read and checked once;
// the per-axis plan (output length, the scale the coordinate transform uses, the roi) from roi / scales / sizes as
// onnxruntime's forward computes it; and the backward through the shared separable engine (separable.h).
#pragma once

#include <string>
#include <vector>

#include "kernel_common.h"
#include "taps.h"

namespace rg {

class ResizeGradPlan {
 public:
  // keep_aspect_ratio_policy: its values (kPolicies, in this order).
  enum Policy { kStretch, kNotLarger, kNotSmaller };
  static const char* const kPolicies[3];  // "stretch", "not_larger", "not_smaller"

  // Reads and checks the attributes of Resize; op_type names the op in every message.
  ResizeGradPlan(const OrtApi* api, const OrtKernelInfo* info, const char* op_type);

  // "OpType (node 'name'): ", the start of every message.
  const std::string& Prefix() const { return prefix; }
  // The keep_aspect_ratio_policy.
  Policy AspectPolicy() const { return policy; }
  // The axes roi / scales / sizes refer to, normalised and checked against the rank; 0..rank-1 without `axes`.
  std::vector<int64_t> ListedAxes(int64_t rank) const;
  // "entry of axes" with the `axes` attribute, else "axis": what one value of roi / scales / sizes is for.
  const char* PerEntry() const { return has_axes ? "entry of axes" : "axis"; }

  // dY and X: one dtype, X of rank >= 1, dY of X's rank.
  void CheckInputs(const Tensor& dy, const Tensor& x) const;
  // The per-axis plan from exactly one of scales / sizes (nullptr or empty: not given), and roi.
  std::vector<ResizeAxis> Plan(const std::vector<int64_t>& x_dims, const Tensor* roi, const Tensor* scales,
                               const Tensor* sizes) const;
  // Checks dY's shape against the plan (`given` says what the plan came from, for the message) and writes
  // output 0, dX of X's shape.
  void Backward(const OrtApi* api, OrtKernelContext* context, const Tensor& dy, const Tensor& x,
                const std::vector<ResizeAxis>& plan, const char* given) const;

 private:
  std::string prefix;
  ResizeMode mode;
  Policy policy = kStretch;
  bool has_axes = false;
  std::vector<int64_t> axes;
};

// What both ResizeGrad kernels are: one output; dY and X of type T, the other inputs optional (roi of any float
// type, scales float, sizes int64: checked by the plan); the attributes read once into the plan.
struct ResizeGradKernel {
  static constexpr size_t kOutputs = 1;
  static constexpr bool kOptionalOutputs = false;
  static InputSpec InputSpecAt(size_t index) { return InputSpec{index < 2, index >= 2}; }

  const OrtApi* api;
  ResizeGradPlan plan;

  ResizeGradKernel(const OrtApi* api_, const OrtKernelInfo* info, const char* op_type)
      : api(api_), plan(api_, info, op_type) {}
};

}  // namespace rg
