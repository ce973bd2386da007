// UpsampleNearestExact1dGrad and UpsampleNearestExact2dGrad: aten::_upsample_nearest_exact{1,2}d_backward.
// The 1d op is the 2d one with a single row.
#include <cmath>

#include "kernels.h"
#include "separable.h"

namespace rg {
namespace {

// aten nearest_neighbor_exact_compute_source_index: min(floorf((o + 0.5) * scale), in - 1), where the
// product is formed in double and rounded to float by floorf; scale is compute_scales_value<float>.
template <typename A>
AxisMap<A> NearestExactAxis(int64_t in, int64_t out, float scale_attr) {
  const float scale = scale_attr > 0 ? static_cast<float>(1.0 / static_cast<double>(scale_attr))
                                     : static_cast<float>(in) / static_cast<float>(out);
  AxisMap<A> axis(in, out);
  for (int64_t o = 0; o < out; ++o) {
    const float product = static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(scale));
    axis.top[o] = axis.bottom[o] = FloorIndex(product, in);
    axis.w_top[o] = A(1);
    axis.w_bottom[o] = A(0);
  }
  axis.Finish();
  return axis;
}

template <int kSpatial>
struct UpsampleNearestExactGrad {
  static constexpr const char* kName = kSpatial == 1 ? "UpsampleNearestExact1dGrad" : "UpsampleNearestExact2dGrad";
  static constexpr size_t kInputs = 1;
  static constexpr size_t kOutputs = 1;
  static constexpr bool kOptionalOutputs = false;

  const OrtApi* api;
  std::string prefix;
  std::vector<int64_t> input_size, output_size;
  bool has_output_size = false;
  float scales[2] = {0.f, 0.f};

  UpsampleNearestExactGrad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    const std::string layout = kSpatial == 1 ? "[N, C, L]" : "[N, C, H, W]";
    if (!attrs.Ints("input_size", &input_size))
      throw OpError(prefix + "attribute 'input_size' is required: " + std::to_string(2 + kSpatial) + " ints " + layout);
    if (input_size.size() != 2 + kSpatial)
      throw OpError(prefix + "attribute 'input_size' must have " + std::to_string(2 + kSpatial) + " values " + layout +
                    ", got " + ListString(input_size));
    for (int axis = 0; axis < 2; ++axis)
      if (input_size[axis] < -1)
        throw OpError(prefix + "attribute 'input_size'[" + std::to_string(axis) + "] must be >= 0 or -1, got " +
                      std::to_string(input_size[axis]));
    for (int axis = 2; axis < 2 + kSpatial; ++axis)
      if (input_size[axis] <= 0)
        throw OpError(prefix + "attribute 'input_size' must have a positive " + SpatialName(axis - 2) + ", got " +
                      ListString(input_size));
    has_output_size = attrs.Ints("output_size", &output_size) && !output_size.empty();
    if (has_output_size && output_size.size() != kSpatial)
      throw OpError(prefix + "attribute 'output_size' must have " + std::to_string(kSpatial) + " values, got " +
                    ListString(output_size));
    if (kSpatial == 1) {
      scales[0] = attrs.Float("scales", 0.f);
      CheckScale(prefix, "scales", scales[0]);
    } else {
      scales[0] = attrs.Float("scales_h", 0.f);
      scales[1] = attrs.Float("scales_w", 0.f);
      CheckScale(prefix, "scales_h", scales[0]);
      CheckScale(prefix, "scales_w", scales[1]);
    }
  }

  static std::string SpatialName(int axis) { return kSpatial == 1 ? "L" : (axis == 0 ? "H" : "W"); }

  void Compute(OrtKernelContext* context) {
    Tensor grad = Input(api, context, 0);
    if (grad.dims.size() != 2 + kSpatial)
      throw OpError(prefix + "input 'grad_output' must be " + std::to_string(2 + kSpatial) + "-D, got shape " +
                    ShapeString(grad.dims));
    std::vector<int64_t> out_dims = input_size;
    for (int axis = 0; axis < 2; ++axis) {
      if (input_size[axis] == -1) out_dims[axis] = grad.dims[axis];
      else if (input_size[axis] != grad.dims[axis])
        throw OpError(prefix + "attribute 'input_size'[" + std::to_string(axis) + "] is " +
                      std::to_string(input_size[axis]) + " but grad_output has " + std::to_string(grad.dims[axis]) +
                      " at dimension " + std::to_string(axis));
    }
    for (int axis = 0; axis < kSpatial; ++axis) {
      if (grad.dims[2 + axis] <= 0)
        throw OpError(prefix + "grad_output must have a positive " + SpatialName(axis) + " (dimension " +
                      std::to_string(2 + axis) + "), got shape " + ShapeString(grad.dims));
      if (has_output_size && output_size[axis] != grad.dims[2 + axis])
        throw OpError(prefix + "attribute 'output_size' is " + ListString(output_size) + " but grad_output has " +
                      SpatialName(axis) + " = " + std::to_string(grad.dims[2 + axis]) + " at dimension " +
                      std::to_string(2 + axis));
    }
    DispatchFloat(grad.type, prefix, "grad_output", [&](auto tag) {
      using T = decltype(tag);
      using A = AccT<T>;
      T* out = static_cast<T*>(Output(api, context, 0, out_dims));
      const int64_t planes = out_dims[0] * out_dims[1];
      const int64_t h_in = kSpatial == 2 ? out_dims[2] : 1, h_out = kSpatial == 2 ? grad.dims[2] : 1;
      AxisMap<A> rows = kSpatial == 2 ? NearestExactAxis<A>(h_in, h_out, scales[0]) : NearestExactAxis<A>(1, 1, 1.f);
      AxisMap<A> cols = NearestExactAxis<A>(out_dims.back(), grad.dims.back(), scales[kSpatial - 1]);
      SeparableBackward<T>(api, context, static_cast<const T*>(grad.data), out, planes, rows, cols);
    });
  }
};

}  // namespace

TypedOps UpsampleNearestExact1dGradOps() { return MakeTypedOps<UpsampleNearestExactGrad<1>>(); }
TypedOps UpsampleNearestExact2dGradOps() { return MakeTypedOps<UpsampleNearestExactGrad<2>>(); }

}  // namespace rg
