// The torch-style Upsample*Grad family: one row of kUpsampleRows per op, one kernel for all of them.
//
// Each op is the backward of an aten upsample: grad_output [N, C, *out] -> grad_input [N, C, *in]
// with one tap function (taps.h) per spatial axis and the shared separable backward. A row of
// kUpsampleRows holds what differs between the ops: the tap function, the spatial ranks the op takes
// (the 2-D ops also serve aten's 1-D op with a 3-D grad_output, the axis then being W), the GE
// attribute names of the forward scales and which attributes it has. The rows are written from the
// Python spec rows (upsample_rows.inc, by opset/_native_rows.py): a new op of the family is its SPEC.
// The checks and their messages are those of opset/_upsample.py.
#include <cmath>
#include <iterator>

#include "kernels.h"
#include "separable.h"

namespace rg {
namespace {

// What an op takes beyond its main form's grad_output and input_size (UpsampleRow::options, or-ed).
enum UpsampleOption : unsigned {
  kAlso1d = 1u << 0,              // also takes a 3-D grad_output (the 1-D form of a 2-D op: its W axis)
  kAlignCorners = 1u << 1,        // has the align_corners attribute
  kOutputSizeRequired = 1u << 2,  // output_size must be given
  kOutputSizeOrScales = 1u << 3,  // GE: give output_size or scales, not both
};

struct UpsampleRow {
  const char* name;
  int since_version;
  TapKind kind;
  int spatial;                // spatial axes of the main form
  unsigned options;           // UpsampleOption
  const char* axis_names[3];  // the main form's spatial axes
  const char* scales[3];      // one float attribute per spatial axis, last axis last (nullptr: none)
  const char* scales_list;    // or one list attribute holding them (nullptr: none)
  constexpr bool Has(UpsampleOption option) const { return (options & option) != 0; }
};

// The ops: a row each (registered by UpsampleGradOps), written from the Python spec rows (opset/_native_rows.py).
constexpr UpsampleRow kUpsampleRows[] = {
#include "upsample_rows.inc"
};

template <size_t I>
struct UpsampleGrad {
  static constexpr const UpsampleRow& kRow = kUpsampleRows[I];
  static constexpr const char* kName = kRow.name;
  static constexpr int kSinceVersion = kRow.since_version;
  static constexpr size_t kInputs = 1;
  static constexpr size_t kOutputs = 1;
  static constexpr bool kOptionalOutputs = false;

  const OrtApi* api;
  std::string prefix;
  std::vector<int64_t> input_size, output_size;
  std::vector<float> scales;  // one per axis of the main form, last axis last
  bool align_corners = false;

  UpsampleGrad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    if (kRow.Has(kAlignCorners)) {
      const int64_t corners = attrs.Int("align_corners", 0);
      if (corners != 0 && corners != 1)
        throw OpError(prefix + "attribute 'align_corners' must be 0 or 1, got " + std::to_string(corners));
      align_corners = corners == 1;
    }
    scales.assign(kRow.spatial, 0.f);
    if (kRow.scales_list) {
      std::vector<float> values;
      if (attrs.Floats(kRow.scales_list, &values) && !values.empty()) {
        if (static_cast<int>(values.size()) != kRow.spatial)
          throw OpError(prefix + "attribute '" + kRow.scales_list + "' must have " + std::to_string(kRow.spatial) +
                        " values " + SpatialList(kRow.spatial) + ", got " + std::to_string(values.size()) + " values");
        scales = values;
      }
      for (int k = 0; k < kRow.spatial; ++k)
        CheckScale(prefix, (std::string(kRow.scales_list) + "[" + std::to_string(k) + "]").c_str(), scales[k]);
    } else {
      for (int k = 0; k < kRow.spatial; ++k) {
        scales[k] = attrs.Float(kRow.scales[k], 0.f);
        CheckScale(prefix, kRow.scales[k], scales[k]);
      }
    }
    if (!attrs.Ints("input_size", &input_size))
      throw OpError(prefix + "attribute 'input_size' is required: " + std::to_string(2 + kRow.spatial) + " ints " +
                    Layout(kRow.spatial, ""));
    const bool has_output_size = attrs.Ints("output_size", &output_size) && !output_size.empty();
    if (kRow.Has(kOutputSizeRequired) && !has_output_size)
      throw OpError(prefix + "attribute 'output_size' is required: " + std::to_string(kRow.spatial) + " ints " +
                    SpatialList(kRow.spatial));
    if (kRow.Has(kOutputSizeOrScales) && has_output_size) {
      for (float s : scales)
        if (s != 0.f)
          throw OpError(prefix + "give exactly one of the attributes 'output_size' and '" + kRow.scales_list +
                        "', got both");
    }
  }

  static std::string Name(int spatial, int axis) {
    return spatial == kRow.spatial ? kRow.axis_names[axis] : "W";  // the 1-D form of a 2-D op is its W axis
  }
  static std::string SpatialList(int spatial) {
    std::string s = "[";
    for (int a = 0; a < spatial; ++a) s += (a ? ", " : "") + Name(spatial, a);
    return s + "]";
  }
  static std::string Layout(int spatial, const char* suffix) {
    std::string s = "[N, C";
    for (int a = 0; a < spatial; ++a) s += ", " + Name(spatial, a) + suffix;
    return s + "]";
  }

  void Compute(OrtKernelContext* context) {
    Tensor grad = Input(api, context, 0);
    const int spatial = static_cast<int>(grad.dims.size()) - 2;
    if (spatial != kRow.spatial && !(kRow.Has(kAlso1d) && spatial == 1)) {
      std::string forms = std::to_string(2 + kRow.spatial) + "-D " + Layout(kRow.spatial, "_out");
      if (kRow.Has(kAlso1d)) forms += " or 3-D " + Layout(1, "_out");
      throw OpError(prefix + "input 'grad_output' must be " + forms + ", got shape " + ShapeString(grad.dims));
    }
    if (static_cast<int>(input_size.size()) != 2 + spatial)
      throw OpError(prefix + "attribute 'input_size' must have " + std::to_string(2 + spatial) + " values " +
                    Layout(spatial, "") + ", got " + ListString(input_size));
    std::vector<int64_t> in_dims = input_size;
    for (int axis = 0; axis < 2; ++axis) {
      if (input_size[axis] == -1) in_dims[axis] = grad.dims[axis];
      else if (input_size[axis] < 0)
        throw OpError(prefix + "attribute 'input_size'[" + std::to_string(axis) + "] must be >= 0 or -1, got " +
                      std::to_string(input_size[axis]));
      else if (input_size[axis] != grad.dims[axis])
        throw OpError(prefix + "attribute 'input_size'[" + std::to_string(axis) + "] is " +
                      std::to_string(input_size[axis]) + " but grad_output has " + std::to_string(grad.dims[axis]) +
                      " at dimension " + std::to_string(axis));
    }
    if (!output_size.empty() && static_cast<int>(output_size.size()) != spatial)
      throw OpError(prefix + "attribute 'output_size' must have " + std::to_string(spatial) + " values " +
                    SpatialList(spatial) + ", got " + ListString(output_size));
    for (int a = 0; a < spatial; ++a) {
      if (grad.dims[2 + a] <= 0)
        throw OpError(prefix + "grad_output must have a positive " + Name(spatial, a) + " (dimension " +
                      std::to_string(2 + a) + "), got shape " + ShapeString(grad.dims));
      if (!output_size.empty() && output_size[a] != grad.dims[2 + a])
        throw OpError(prefix + "attribute 'output_size' is " + ListString(output_size) + " but grad_output has " +
                      Name(spatial, a) + " = " + std::to_string(grad.dims[2 + a]) + " at dimension " +
                      std::to_string(2 + a));
      if (input_size[2 + a] <= 0)
        throw OpError(prefix + "attribute 'input_size' must have a positive " + Name(spatial, a) + ", got " +
                      ListString(input_size));
    }
    TapOptions options;
    options.align_corners = align_corners;
    DispatchFloat(grad.type, prefix, "grad_output", [&](auto tag) {  // (the 1-D form of a 2-D op: its last scale)
      SpatialBackward<decltype(tag)>(api, context, kRow.kind, grad, in_dims, &scales[kRow.spatial - spatial], options);
    });
  }
};

}  // namespace

OpList UpsampleGradOps() { return FamilyOps<UpsampleGrad, std::size(kUpsampleRows)>(); }

}  // namespace rg
