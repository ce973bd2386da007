// Test stub of CANN graph/operator.h: only what the generated files use, copied from
// from: hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/graph_metadef/external/graph/operator.h
// Deprecated overloads that compete with the ones used are kept, deprecated as in CANN, so that
// overload resolution and deprecation warnings are the same as with the real header.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/tensor.h"
#include "graph/types.h"
namespace recording {
struct Access;  // stand-in: the test's recording implementation (recording.cc) reads the private state
}  // namespace recording
namespace ge {
class Operator {
 public:
  using OpInt = int64_t;
  using OpFloat = float32_t;
  using OpString = std::string;
  using OpBool = bool;
  using OpListInt = std::vector<int64_t>;
  using OpListFloat = std::vector<float32_t>;
  using OpTensor = Tensor;
  Operator() {}
  explicit Operator(const std::string &type);
  explicit Operator(const char_t *type);
  Operator(const std::string &name, const std::string &type);
  Operator(const AscendString &name, const AscendString &type);
  Operator(const char_t *name, const char_t *type);
  virtual ~Operator() = default;
  ATTRIBUTED_DEPRECATED(graphStatus GetName(AscendString &) const)
  std::string GetName() const;
  graphStatus GetName(AscendString &name) const;
  ATTRIBUTED_DEPRECATED(TensorDesc GetInputDescByName(const char_t *) const)
  TensorDesc GetInputDesc(const std::string &name) const;
  TensorDesc GetInputDescByName(const char_t *name) const;
  TensorDesc GetInputDesc(uint32_t index) const;
  ATTRIBUTED_DEPRECATED(graphStatus UpdateInputDesc(const char_t *, const TensorDesc &))
  graphStatus UpdateInputDesc(const std::string &name, const TensorDesc &tensor_desc);
  graphStatus UpdateInputDesc(const char_t *name, const TensorDesc &tensor_desc);
  ATTRIBUTED_DEPRECATED(TensorDesc GetOutputDescByName(const char_t *) const)
  TensorDesc GetOutputDesc(const std::string &name) const;
  TensorDesc GetOutputDescByName(const char_t *name) const;
  TensorDesc GetOutputDesc(uint32_t index) const;
  ATTRIBUTED_DEPRECATED(graphStatus UpdateOutputDesc(const char_t *, const TensorDesc &tensor_desc))
  graphStatus UpdateOutputDesc(const std::string &name, const TensorDesc &tensor_desc);
  graphStatus UpdateOutputDesc(const char_t *name, const TensorDesc &tensor_desc);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, int64_t))
  Operator &SetAttr(const std::string &name, int64_t attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, int32_t))
  Operator &SetAttr(const std::string &name, int32_t attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, uint32_t))
  Operator &SetAttr(const std::string &name, uint32_t attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, const std::vector<int64_t> &))
  Operator &SetAttr(const std::string &name, const std::vector<int64_t> &attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, float32_t attr_value))
  Operator &SetAttr(const std::string &name, float32_t attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, const std::vector<float32_t> &))
  Operator &SetAttr(const std::string &name, const std::vector<float32_t> &attr_value);
  Operator &SetAttr(const std::string &name, const std::string &attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, bool))
  Operator &SetAttr(const std::string &name, bool attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetAttr(const char_t *, const Tensor &))
  Operator &SetAttr(const std::string &name, const Tensor &attr_value);
  Operator &SetAttr(const char_t *name, int64_t attr_value);
  Operator &SetAttr(const char_t *name, int32_t attr_value);
  Operator &SetAttr(const char_t *name, uint32_t attr_value);
  Operator &SetAttr(const char_t *name, const std::vector<int64_t> &attr_value);
  Operator &SetAttr(const char_t *name, float32_t attr_value);
  Operator &SetAttr(const char_t *name, const std::vector<float32_t> &attr_value);
  Operator &SetAttr(const char_t *name, const char_t *attr_value);
  Operator &SetAttr(const char_t *name, const AscendString &attr_value);
  Operator &SetAttr(const char_t *name, bool attr_value);
  Operator &SetAttr(const char_t *name, const Tensor &attr_value);
  ATTRIBUTED_DEPRECATED(Operator &SetInput(const char_t *, const Operator &))
  Operator &SetInput(const std::string &dst_name, const Operator &src_oprt);
  Operator &SetInput(const char_t *dst_name, const Operator &src_oprt);
  ATTRIBUTED_DEPRECATED(Operator &SetInput(const char_t *, const Operator &, const char_t *))
  Operator &SetInput(const std::string &dst_name, const Operator &src_oprt, const std::string &name);
  Operator &SetInput(const char_t *dst_name, const Operator &src_oprt, const char_t *name);
  ATTRIBUTED_DEPRECATED(Operator &SetInput(const char_t *, const Operator &, uint32_t))
  Operator &SetInput(const std::string &dst_name, const Operator &src_oprt, uint32_t index);
  Operator &SetInput(const char_t *dst_name, const Operator &src_oprt, uint32_t index);
 private:
  friend struct recording::Access;  // stand-in
  std::shared_ptr<void> operator_impl_;  // stand-in for std::shared_ptr<OperatorImpl>
};
}  // namespace ge
