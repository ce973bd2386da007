// ResizeBilinearV2Grad: aten::upsample_bilinear2d_backward (align_corners, half-pixel) and
// TensorFlow's ResizeBilinearGrad legacy mode (both flags 0).
#include <cmath>

#include "kernels.h"
#include "separable.h"

namespace rg {
namespace {

enum class Mode { kAlignCorners, kHalfPixel, kLegacy };

template <typename A>
AxisMap<A> BilinearAxis(int64_t in, int64_t out, Mode mode, float scale_attr) {
  AxisMap<A> axis(in, out);
  const bool copy = mode != Mode::kLegacy && in == out;  // aten copies when the sizes agree, whatever the scale
  if (mode == Mode::kLegacy) {
    // TensorFlow: float32 coordinates; top = floor, bottom = min(ceil, in - 1), lerp = src - floor(src).
    const float ratio = scale_attr > 0 ? static_cast<float>(1.0 / static_cast<double>(scale_attr))
                                       : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      const float src = static_cast<float>(o) * ratio;
      const float low = std::floor(src);
      axis.top[o] = FloorIndex(low, in);  // TF leaves the top index unclamped; a given scale could overrun
      axis.bottom[o] = FloorIndex(std::ceil(src), in);
      const A lerp = static_cast<A>(src - low);
      axis.w_top[o] = A(1) - lerp;
      axis.w_bottom[o] = lerp;
    }
  } else {
    // aten area_pixel_compute_scale / area_pixel_compute_source_index / guard_index_and_lambda, in opmath A.
    A ratio;
    if (mode == Mode::kAlignCorners) ratio = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
    else ratio = scale_attr > 0 ? static_cast<A>(1.0 / static_cast<double>(scale_attr)) : static_cast<A>(in) / static_cast<A>(out);
    for (int64_t o = 0; o < out; ++o) {
      if (copy) {
        axis.top[o] = axis.bottom[o] = o;
        axis.w_top[o] = A(1);
        axis.w_bottom[o] = A(0);
        continue;
      }
      A src = mode == Mode::kAlignCorners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
      if (mode == Mode::kHalfPixel && src < 0) src = 0;
      const int64_t top = FloorIndex(std::floor(static_cast<float>(src)), in);  // floorf, as aten
      const A lambda = std::min(std::max(src - static_cast<A>(top), A(0)), A(1));
      axis.top[o] = top;
      axis.bottom[o] = top + (top < in - 1 ? 1 : 0);
      axis.w_top[o] = A(1) - lambda;
      axis.w_bottom[o] = lambda;
    }
  }
  axis.Finish();
  return axis;
}

struct ResizeBilinearV2Grad {
  static constexpr const char* kName = "ResizeBilinearV2Grad";
  static constexpr size_t kInputs = 2;
  static constexpr size_t kOutputs = 1;
  static constexpr bool kOptionalOutputs = false;

  const OrtApi* api;
  std::string prefix;
  Mode mode = Mode::kLegacy;
  float scales[2] = {0.f, 0.f};

  ResizeBilinearV2Grad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    const int64_t align_corners = attrs.Int("align_corners", 0);
    const int64_t half_pixel = attrs.Int("half_pixel_centers", 0);
    for (auto [name, value] : {std::pair<const char*, int64_t>{"align_corners", align_corners}, {"half_pixel_centers", half_pixel}})
      if (value != 0 && value != 1)
        throw OpError(prefix + "attribute '" + name + "' must be 0 or 1, got " + std::to_string(value));
    if (align_corners && half_pixel)
      throw OpError(prefix + "attributes 'align_corners' and 'half_pixel_centers' cannot both be 1");
    mode = align_corners ? Mode::kAlignCorners : half_pixel ? Mode::kHalfPixel : Mode::kLegacy;
    std::vector<float> values;
    if (attrs.Floats("scales", &values)) {
      if (values.size() != 2) {
        throw OpError(prefix + "attribute 'scales' must have 2 values [scale_h, scale_w], got " +
                      std::to_string(values.size()) + " values");
      }
      for (int axis = 0; axis < 2; ++axis) {
        CheckScale(prefix, axis == 0 ? "scales[0]" : "scales[1]", values[axis]);
        scales[axis] = values[axis];
      }
    }
  }

  void Compute(OrtKernelContext* context) {
    Tensor grads = Input(api, context, 0);
    Tensor image = Input(api, context, 1);
    if (grads.dims.size() != 4)
      throw OpError(prefix + "input 'grads' must be 4-D [N, C, H_out, W_out], got shape " + ShapeString(grads.dims));
    if (image.dims.size() != 4)
      throw OpError(prefix + "input 'original_image' must be 4-D [N, C, H_in, W_in], got shape " + ShapeString(image.dims));
    if (grads.type != image.type)
      throw OpError(prefix + "input 'original_image' has dtype " + TypeName(image.type) + " but 'grads' has " +
                    TypeName(grads.type) + "; all inputs must share one dtype");
    for (int axis = 0; axis < 2; ++axis)
      if (grads.dims[axis] != image.dims[axis])
        throw OpError(prefix + "dimension " + std::to_string(axis) + " of 'grads' (" + std::to_string(grads.dims[axis]) +
                      ") must equal dimension " + std::to_string(axis) + " of 'original_image' (" +
                      std::to_string(image.dims[axis]) + ")");
    for (int axis = 2; axis < 4; ++axis) {
      if (grads.dims[axis] <= 0)
        throw OpError(prefix + "input 'grads' must have a positive " + (axis == 2 ? "H_out" : "W_out") + " (dimension " +
                      std::to_string(axis) + "), got shape " + ShapeString(grads.dims));
      if (image.dims[axis] <= 0)
        throw OpError(prefix + "input 'original_image' must have a positive " + (axis == 2 ? "H_in" : "W_in") +
                      " (dimension " + std::to_string(axis) + "), got shape " + ShapeString(image.dims));
    }
    DispatchFloat(grads.type, prefix, "grads", [&](auto tag) {
      using T = decltype(tag);
      using A = AccT<T>;
      T* out = static_cast<T*>(Output(api, context, 0, image.dims));
      AxisMap<A> rows = BilinearAxis<A>(image.dims[2], grads.dims[2], mode, scales[0]);
      AxisMap<A> cols = BilinearAxis<A>(image.dims[3], grads.dims[3], mode, scales[1]);
      SeparableBackward<T>(api, context, static_cast<const T*>(grads.data), out, grads.dims[0] * grads.dims[1], rows, cols);
    });
  }
};

}  // namespace

TypedOps ResizeBilinearV2GradOps() { return MakeTypedOps<ResizeBilinearV2Grad>(); }

}  // namespace rg
