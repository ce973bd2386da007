// ResizeGrad: the adjoint of ONNX Resize (opsets 11 to 19) as onnxruntime computes the forward; ResizeGradPlan
// (resize_grad.h) is shared with com.microsoft::ResizeGrad (microsoft_resize_grad.cc).
//
// The per-axis plan (output length, the scale the coordinate transform uses, the roi) follows
// onnxruntime's upsamplebase.h (ComputeOutputShape, ParseSizesData, AdjustOutputSizeAsPolicy,
// ComputeROIWithAxes); the taps are taps.cc MakeResizeTaps; the checks and their messages are
// those of opset/_onnx_resize.py and opset/resize_grad.py.
#include <cmath>
#include <set>

#include "kernels.h"
#include "resize_grad.h"
#include "separable.h"

namespace rg {
namespace {

const char* const kModes[] = {"nearest", "linear", "cubic"};
const char* const kCoordinates[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
const char* const kRoundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

// The position of `value` in `choices`, or an error listing them.
template <size_t N>
int Choice(const std::string& prefix, const char* name, const std::string& value, const char* const (&choices)[N]) {
  for (size_t k = 0; k < N; ++k)
    if (value == choices[k]) return static_cast<int>(k);
  std::string list;
  for (size_t k = 0; k < N; ++k) list += (k ? ", '" : "'") + std::string(choices[k]) + "'";
  throw OpError(prefix + "attribute '" + name + "' must be one of " + list + ", got '" + value + "'");
}

std::string FloatList(const std::vector<float>& values) {
  std::string s = "[";
  for (size_t k = 0; k < values.size(); ++k) s += (k ? ", " : "") + std::to_string(values[k]);
  return s + "]";
}

// The float values of a float16 / bfloat16 / float / double tensor (roi).
std::vector<float> FloatValues(const Tensor& t, const std::string& prefix, const char* name) {
  std::vector<float> values(t.Count());
  for (size_t k = 0; k < values.size(); ++k) {
    switch (t.type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: values[k] = static_cast<const float*>(t.data)[k]; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
        values[k] = static_cast<float>(static_cast<const double*>(t.data)[k]);
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: values[k] = ToFloat(static_cast<const Float16*>(t.data)[k]); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: values[k] = ToFloat(static_cast<const BFloat16*>(t.data)[k]); break;
      default:
        throw OpError(prefix + "input '" + name + "' has dtype " + TypeName(t.type) + "; expected a float type");
    }
  }
  return values;
}

}  // namespace

const char* const ResizeGradPlan::kPolicies[3] = {"stretch", "not_larger", "not_smaller"};

ResizeGradPlan::ResizeGradPlan(const OrtApi* api, const OrtKernelInfo* info, const char* op_type) {
  Attributes attrs(api, info, op_type);
  prefix = attrs.Prefix();
  mode.mode = static_cast<ResizeMode::Mode>(Choice(prefix, "mode", attrs.String("mode", "nearest"), kModes));
  mode.coordinate = static_cast<ResizeMode::Coordinate>(Choice(
      prefix, "coordinate_transformation_mode", attrs.String("coordinate_transformation_mode", "half_pixel"),
      kCoordinates));
  mode.rounding = static_cast<ResizeMode::Rounding>(
      Choice(prefix, "nearest_mode", attrs.String("nearest_mode", "round_prefer_floor"), kRoundings));
  policy = static_cast<Policy>(
      Choice(prefix, "keep_aspect_ratio_policy", attrs.String("keep_aspect_ratio_policy", "stretch"), kPolicies));
  for (const char* name : {"exclude_outside", "antialias"}) {
    const int64_t value = attrs.Int(name, 0);
    if (value != 0 && value != 1)
      throw OpError(prefix + "attribute '" + name + "' must be 0 or 1, got " + std::to_string(value));
  }
  mode.exclude_outside = attrs.Int("exclude_outside", 0) == 1;
  mode.antialias = attrs.Int("antialias", 0) == 1;
  if (mode.antialias && mode.mode == ResizeMode::kNearest)
    throw OpError(prefix + "attribute 'antialias' = 1 needs mode 'linear' or 'cubic' (as Resize), got mode 'nearest'");
  mode.cubic_coeff_a = attrs.Float("cubic_coeff_a", -0.75f);
  if (!std::isfinite(mode.cubic_coeff_a))
    throw OpError(prefix + "attribute 'cubic_coeff_a' must be finite, got " + std::to_string(mode.cubic_coeff_a));
  has_axes = attrs.Ints("axes", &axes) && !axes.empty();
}

std::vector<int64_t> ResizeGradPlan::ListedAxes(int64_t rank) const {
  std::vector<int64_t> listed;
  if (!has_axes) {
    for (int64_t a = 0; a < rank; ++a) listed.push_back(a);
    return listed;
  }
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      throw OpError(prefix + "attribute 'axes' has " + std::to_string(a) + ", outside [-" + std::to_string(rank) +
                    ", " +
                    std::to_string(rank - 1) + "] for the rank-" + std::to_string(rank) + " X");
    const int64_t axis = (a + rank) % rank;
    if (!seen.insert(axis).second) throw OpError(prefix + "attribute 'axes' repeats an axis: " + ListString(axes));
    listed.push_back(axis);
  }
  return listed;
}

void ResizeGradPlan::CheckInputs(const Tensor& dy, const Tensor& x) const {
  if (dy.type != x.type)
    throw OpError(prefix + "input 'X' has dtype " + TypeName(x.type) + " but 'dY' has " + TypeName(dy.type) +
                  "; all inputs must share one dtype");
  if (x.dims.empty()) throw OpError(prefix + "input 'X' must have rank >= 1 (as Resize), got a scalar");
  if (dy.dims.size() != x.dims.size())
    throw OpError(prefix + "input 'dY' must have the rank of X (" + std::to_string(x.dims.size()) + "), got shape " +
                  ShapeString(dy.dims));
}

std::vector<ResizeAxis> ResizeGradPlan::Plan(const std::vector<int64_t>& x_dims, const Tensor* roi,
                                             const Tensor* scales,
                                             const Tensor* sizes) const {
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  const std::vector<int64_t> listed = ListedAxes(rank);
  const std::string per = PerEntry();
  const bool with_scales = scales && scales->Count() > 0, with_sizes = sizes && sizes->Count() > 0;
  if (with_scales == with_sizes)
    throw OpError(prefix + "give exactly one of the inputs 'scales' and 'sizes' (as Resize), got " +
                  (with_scales ? "scales and sizes" : "neither"));
  const Tensor& given = with_scales ? *scales : *sizes;
  if (given.Count() != static_cast<int64_t>(listed.size()))
    throw OpError(prefix + "input '" + (with_scales ? "scales" : "sizes") + "' must have " +
                  std::to_string(listed.size()) + " values (one per " + per + "), got " +
                  std::to_string(given.Count()));
  std::vector<ResizeAxis> plan(rank);
  for (int64_t a = 0; a < rank; ++a) plan[a].input_size = plan[a].output_size = x_dims[a];
  if (with_scales) {
    if (scales->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
      throw OpError(prefix + "input 'scales' has dtype " + TypeName(scales->type) + "; expected float");
    if (policy != kStretch)
      throw OpError(prefix + "input 'scales' cannot be used with keep_aspect_ratio_policy '" + kPolicies[policy] +
                    "' (as Resize): give sizes");
    const float* values = static_cast<const float*>(scales->data);
    for (size_t k = 0; k < listed.size(); ++k) {
      if (!(std::isfinite(values[k]) && values[k] > 0))
        throw OpError(prefix + "input 'scales' must hold finite values > 0, got " +
                      FloatList(std::vector<float>(values, values + listed.size())));
      ResizeAxis& axis = plan[listed[k]];
      axis.scale = values[k];
      axis.output_size = static_cast<int64_t>(values[k] * static_cast<float>(axis.input_size));  // a float product
    }
  } else {
    if (sizes->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      throw OpError(prefix + "input 'sizes' has dtype " + TypeName(sizes->type) + "; expected int64");
    const int64_t* values = static_cast<const int64_t*>(sizes->data);
    std::vector<float> ratios;
    for (size_t k = 0; k < listed.size(); ++k) {
      if (values[k] <= 0)
        throw OpError(prefix + "input 'sizes' must hold values > 0, got " +
                      ListString(std::vector<int64_t>(values, values + listed.size())));
      const int64_t in = plan[listed[k]].input_size;
      ratios.push_back(in == 0 ? 1.f : static_cast<float>(values[k]) / static_cast<float>(in));
    }
    float joint = ratios.empty() ? 1.f : ratios[0];
    for (float r : ratios) joint = policy == kNotLarger ? std::min(joint, r) : std::max(joint, r);
    for (size_t k = 0; k < listed.size(); ++k) {
      ResizeAxis& axis = plan[listed[k]];
      if (policy == kStretch) {
        if (axis.input_size == 0)  // onnxruntime: "Input dim is zero but required output dim is non-zero"
          throw OpError(prefix + "input 'sizes' asks for length " + std::to_string(values[k]) + " at dimension " +
                        std::to_string(listed[k]) + ", where X has length 0 (as Resize: an empty axis cannot be "
                        "resized to a non-empty one)");
        axis.scale = ratios[k];
        axis.output_size = values[k];
      } else {  // AdjustOutputSizeAsPolicy
        axis.scale = joint;
        axis.output_size = static_cast<int64_t>(std::round(joint * static_cast<float>(axis.input_size)));
      }
    }
  }
  if (mode.coordinate == ResizeMode::kTfCropAndResize && roi && roi->Count() > 0) {
    const std::vector<float> values = FloatValues(*roi, prefix, "roi");
    if (values.size() != 2 * listed.size())
      throw OpError(prefix + "input 'roi' must have " + std::to_string(2 * listed.size()) +
                    " values (starts then ends, "
                    "one per " + per + "), got " + std::to_string(values.size()));
    for (size_t k = 0; k < listed.size(); ++k) {
      plan[listed[k]].roi_start = values[k];
      plan[listed[k]].roi_end = values[listed.size() + k];
    }
  }
  return plan;
}

void ResizeGradPlan::Backward(const OrtApi* api, OrtKernelContext* context, const Tensor& dy, const Tensor& x,
                              const std::vector<ResizeAxis>& plan, const char* given) const {
  std::vector<int64_t> expected;
  for (const ResizeAxis& axis : plan) expected.push_back(axis.output_size);
  if (expected != dy.dims)
    throw OpError(prefix + "input 'dY' has shape " + ShapeString(dy.dims) + " but Resize of X " + ShapeString(x.dims) +
                  " with " + given + " gives " + ShapeString(expected));
  DispatchFloat(dy.type, prefix, "dY", [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    T* out = static_cast<T*>(Output(api, context, 0, x.dims));
    std::vector<TapMatrix<A>> taps;
    taps.reserve(plan.size());
    std::vector<const TapMatrix<A>*> axes(plan.size(), nullptr);
    if (dy.dims != x.dims) {  // Resize copies when the shape does not change
      for (size_t a = 0; a < plan.size(); ++a) {
        if (IsIdentityAxis(mode, plan[a])) continue;
        taps.push_back(MakeResizeTaps<A>(mode, plan[a]));
        axes[a] = &taps.back();
      }
    }
    SeparableBackward<T>(api, context, static_cast<const T*>(dy.data), out, dy.dims, x.dims, axes);
  });
}

namespace {

struct ResizeGrad : ResizeGradKernel {
  static constexpr const char* kName = "ResizeGrad";
  static constexpr int kSinceVersion = 2;
  static constexpr size_t kInputs = 5;  // dY, X, roi, scales, sizes

  ResizeGrad(const OrtApi* api_, const OrtKernelInfo* info) : ResizeGradKernel(api_, info, kName) {}

  void Compute(OrtKernelContext* context) {
    const Tensor dy = Input(api, context, 0), x = Input(api, context, 1);
    Tensor roi, scales, sizes;
    const bool has_roi = OptionalInput(api, context, 2, &roi);
    const bool has_scales = OptionalInput(api, context, 3, &scales);
    const bool has_sizes = OptionalInput(api, context, 4, &sizes);
    plan.CheckInputs(dy, x);
    plan.Backward(api, context, dy, x,
                  plan.Plan(x.dims, has_roi ? &roi : nullptr, has_scales ? &scales : nullptr,
                            has_sizes ? &sizes : nullptr),
                  "these scales/sizes");
  }
};

}  // namespace

OpList ResizeGradOps() { return JoinOps({MakeTypedOps<ResizeGrad>()}); }

}  // namespace rg
