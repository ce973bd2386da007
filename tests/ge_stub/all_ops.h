// Test stub of the CANN op prototypes (REG_OP classes) the generated code uses, with the
// input, output and attribute names of ../../../shared/ge_ir_prototypes.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "graph/operator.h"
#include "graph/types.h"
namespace ge {
namespace op {
#define RG_INPUT(Op, name) \
  Op& set_input_##name(const Operator& v); \
  Op& set_input_##name(const Operator& v, const char* src_name);
#define RG_ATTR(Op, name, type) Op& set_attr_##name(const type& v);

class Data : public Operator {
 public:
  explicit Data(const char* name);
  RG_ATTR(Data, index, int64_t)
  Data& update_input_desc_x(const TensorDesc& desc);
  Data& update_output_desc_y(const TensorDesc& desc);
};
class GridSampler2DGrad : public Operator {
 public:
  explicit GridSampler2DGrad(const char* name);
  RG_INPUT(GridSampler2DGrad, grad) RG_INPUT(GridSampler2DGrad, x) RG_INPUT(GridSampler2DGrad, grid)
  RG_ATTR(GridSampler2DGrad, interpolation_mode, std::string) RG_ATTR(GridSampler2DGrad, padding_mode, std::string)
  RG_ATTR(GridSampler2DGrad, align_corners, bool)
};
class UpsampleNearestExact2dGrad : public Operator {
 public:
  explicit UpsampleNearestExact2dGrad(const char* name);
  RG_INPUT(UpsampleNearestExact2dGrad, grad_output)
  RG_ATTR(UpsampleNearestExact2dGrad, output_size, std::vector<int64_t>)
  RG_ATTR(UpsampleNearestExact2dGrad, input_size, std::vector<int64_t>)
  RG_ATTR(UpsampleNearestExact2dGrad, scales_h, float) RG_ATTR(UpsampleNearestExact2dGrad, scales_w, float)
};
class ResizeBilinearV2Grad : public Operator {
 public:
  explicit ResizeBilinearV2Grad(const char* name);
  RG_INPUT(ResizeBilinearV2Grad, grads) RG_INPUT(ResizeBilinearV2Grad, original_image)
  RG_ATTR(ResizeBilinearV2Grad, align_corners, bool) RG_ATTR(ResizeBilinearV2Grad, half_pixel_centers, bool)
  RG_ATTR(ResizeBilinearV2Grad, scales, std::vector<float>)
};
class Cast : public Operator {
 public:
  explicit Cast(const char* name);
  RG_INPUT(Cast, x)
  RG_ATTR(Cast, dst_type, int64_t)
};
class Unsqueeze : public Operator {
 public:
  explicit Unsqueeze(const char* name);
  RG_INPUT(Unsqueeze, x)
  RG_ATTR(Unsqueeze, axes, std::vector<int64_t>)
};
class Squeeze : public Operator {
 public:
  explicit Squeeze(const char* name);
  RG_INPUT(Squeeze, x)
  RG_ATTR(Squeeze, axis, std::vector<int64_t>)
};
#undef RG_INPUT
#undef RG_ATTR
}  // namespace op
}  // namespace ge
