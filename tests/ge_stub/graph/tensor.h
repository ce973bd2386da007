// Test stub of CANN graph/tensor.h: only what the generated files use, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/graph/tensor.h
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>
#include "graph/types.h"
namespace ge {
class Shape {
 public:
  Shape();
  explicit Shape(const std::vector<int64_t> &dims);
  std::vector<int64_t> GetDims() const;
 private:
  std::shared_ptr<void> impl_;  // stand-in for std::shared_ptr<ShapeImpl>
};
class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc() = default;
  explicit TensorDesc(Shape shape, Format format = FORMAT_ND, DataType dt = DT_FLOAT);
  TensorDesc(const TensorDesc &desc);
  TensorDesc(TensorDesc &&desc);
  TensorDesc &operator=(const TensorDesc &desc);
  TensorDesc &operator=(TensorDesc &&desc);
  Format GetFormat() const;
  void SetFormat(Format format);
  Format GetOriginFormat() const;
  void SetOriginFormat(Format origin_format);
 private:
  std::shared_ptr<void> impl;  // stand-in for the Impl class
};
class Tensor {
 public:
  Tensor();
  Tensor(const TensorDesc &tensor_desc, const uint8_t *data, size_t size);
 private:
  std::shared_ptr<void> impl;  // stand-in for the Impl class
};
}  // namespace ge
