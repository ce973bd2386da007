// Test stub of CANN graph/operator_factory.h: only what the generated files use, copied from
// from: hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/graph_metadef/external/graph/operator_factory.h
#pragma once
#include <string>
#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/operator.h"
#include "graph/types.h"
namespace ge {
class OperatorFactory {
 public:
  ATTRIBUTED_DEPRECATED(static Operator CreateOperator(const char_t *, const char_t *))
  static Operator CreateOperator(const std::string &operator_name, const std::string &operator_type);
  static Operator CreateOperator(const char_t *const operator_name, const char_t *const operator_type);
};
}  // namespace ge
