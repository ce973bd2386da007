// The CANN Resize*V2Grad / ResizeLinearGrad family: one row of kResizeV2Rows per op, one kernel for all of them.
//
// grads [N, C, *out] and the forward input's shape (the tensor original_image, or an int tensor
// `size` [H, W]) -> y [N, C, *in]; coordinate modes are align_corners / half_pixel_centers flags
// and `scales` forward scales (used when align_corners is 0). The checks and their messages are
// those of opset/_resize_v2.py.
#include <cstring>
#include <iterator>

#include "kernels.h"
#include "separable.h"

namespace rg {
namespace {

// What an op takes beyond grads, align_corners and a list of forward scales (ResizeV2Row::options, or-ed).
enum ResizeV2Option : unsigned {
  kHalfPixelCenters = 1u << 0,  // has the half_pixel_centers attribute
  kSingleScale = 1u << 1,       // one float `scale` instead of the list `scales`
  kSizeInput = 1u << 2,         // input 1 is `size` [H, W] (int32 or int64) instead of original_image
};

struct ResizeV2Row {
  const char* name;
  int since_version;
  TapKind kind;
  int spatial;       // 2 (NCHW) or 1 (NCL)
  unsigned options;  // ResizeV2Option
  constexpr bool Has(ResizeV2Option option) const { return (options & option) != 0; }
};

// The ops: a row each (registered by ResizeV2GradOps), written from the Python spec rows (opset/_native_rows.py).
constexpr ResizeV2Row kResizeV2Rows[] = {
#include "resize_v2_rows.inc"
};

template <size_t I>
struct ResizeV2Grad {
  static constexpr const ResizeV2Row& kRow = kResizeV2Rows[I];
  static constexpr const char* kName = kRow.name;
  static constexpr int kSinceVersion = kRow.since_version;
  static constexpr size_t kInputs = 2;
  static constexpr size_t kOutputs = 1;
  static constexpr bool kOptionalOutputs = false;
  static InputSpec InputSpecAt(size_t index) { return InputSpec{!(kRow.Has(kSizeInput) && index == 1), false}; }

  const OrtApi* api;
  std::string prefix;
  TapOptions options;
  float scales[2] = {0.f, 0.f};

  ResizeV2Grad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    const int64_t corners = attrs.Int("align_corners", 0);
    const int64_t half = kRow.Has(kHalfPixelCenters) ? attrs.Int("half_pixel_centers", 0) : 0;
    for (auto [name, value] : {std::pair<const char*, int64_t>{"align_corners", corners}, {"half_pixel_centers", half}})
      if (value != 0 && value != 1)
        throw OpError(prefix + "attribute '" + name + "' must be 0 or 1, got " + std::to_string(value));
    if (corners && half) throw OpError(prefix + "attributes 'align_corners' and 'half_pixel_centers' cannot both be 1");
    options.align_corners = corners == 1;
    options.half_pixel_centers = half == 1;
    if (kRow.Has(kSingleScale)) {
      scales[0] = attrs.Float("scale", 0.f);
      CheckScale(prefix, "scale", scales[0]);
      return;
    }
    std::vector<float> values;
    if (attrs.Floats("scales", &values)) {
      if (static_cast<int>(values.size()) != kRow.spatial)
        throw OpError(prefix + "attribute 'scales' must have " + std::to_string(kRow.spatial) + " values " +
                      (kRow.spatial == 2 ? "[scale_h, scale_w]" : "[scale_l]") + ", got " +
                      std::to_string(values.size()) + " values");
      for (int axis = 0; axis < kRow.spatial; ++axis) {
        CheckScale(prefix, axis == 0 ? "scales[0]" : "scales[1]", values[axis]);
        scales[axis] = values[axis];
      }
    }
  }

  static const char* Name(int axis) { return kRow.spatial == 1 ? "L" : axis == 0 ? "H" : "W"; }
  static std::string Layout(const char* suffix) {
    std::string s = "[N, C";
    for (int a = 0; a < kRow.spatial; ++a) s += std::string(", ") + Name(a) + suffix;
    return s + "]";
  }

  // The forward input's spatial sizes from `size` (int32 or int64 [H, W]).
  std::vector<int64_t> SizeValues(const Tensor& size) const {
    if (size.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 && size.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      throw OpError(prefix + "input 'size' has dtype " + TypeName(size.type) + "; expected int32 or int64");
    std::vector<int64_t> values(size.Count());
    for (size_t k = 0; k < values.size(); ++k)
      values[k] = size.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 ? static_cast<const int32_t*>(size.data)[k]
                                                                   : static_cast<const int64_t*>(size.data)[k];
    if (static_cast<int>(values.size()) != kRow.spatial)
      throw OpError(prefix + "input 'size' must hold " + std::to_string(kRow.spatial) + " values [H_in, W_in], got " +
                    ListString(values));
    for (int a = 0; a < kRow.spatial; ++a)
      if (values[a] <= 0)
        throw OpError(prefix + "input 'size' must hold a positive " + Name(a) + "_in, got " + ListString(values));
    return values;
  }

  void Compute(OrtKernelContext* context) {
    const Tensor grads = Input(api, context, 0), shape_input = Input(api, context, 1);
    const size_t rank = 2 + kRow.spatial;
    if (grads.dims.size() != rank)
      throw OpError(prefix + "input 'grads' must be " + std::to_string(rank) + "-D " + Layout("_out") + ", got shape " +
                    ShapeString(grads.dims));
    for (int a = 0; a < kRow.spatial; ++a)
      if (grads.dims[2 + a] <= 0)
        throw OpError(prefix + "input 'grads' must have a positive " + Name(a) + "_out (dimension " +
                      std::to_string(2 + a) + "), got shape " + ShapeString(grads.dims));
    std::vector<int64_t> in_dims(grads.dims.begin(), grads.dims.begin() + 2);
    if (kRow.Has(kSizeInput)) {
      for (int64_t v : SizeValues(shape_input)) in_dims.push_back(v);
    } else {
      const Tensor& image = shape_input;
      if (image.dims.size() != rank)
        throw OpError(prefix + "input 'original_image' must be " + std::to_string(rank) + "-D " + Layout("_in") +
                      ", got shape " + ShapeString(image.dims));
      if (grads.type != image.type)
        throw OpError(prefix + "input 'original_image' has dtype " + TypeName(image.type) + " but 'grads' has " +
                      TypeName(grads.type) + "; all inputs must share one dtype");
      for (int axis = 0; axis < 2; ++axis)
        if (grads.dims[axis] != image.dims[axis])
          throw OpError(prefix + "dimension " + std::to_string(axis) + " of 'grads' (" +
                        std::to_string(grads.dims[axis]) +
                        ") must equal dimension " + std::to_string(axis) + " of 'original_image' (" +
                        std::to_string(image.dims[axis]) + ")");
      for (int a = 0; a < kRow.spatial; ++a)
        if (image.dims[2 + a] <= 0)
          throw OpError(prefix + "input 'original_image' must have a positive " + Name(a) + "_in (dimension " +
                        std::to_string(2 + a) + "), got shape " + ShapeString(image.dims));
      in_dims = image.dims;
    }
    DispatchFloat(grads.type, prefix, "grads", [&](auto tag) {
      SpatialBackward<decltype(tag)>(api, context, kRow.kind, grads, in_dims, scales, options);
    });
  }
};

}  // namespace

OpList ResizeV2GradOps() { return FamilyOps<ResizeV2Grad, std::size(kResizeV2Rows)>(); }

}  // namespace rg
