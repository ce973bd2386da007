// Test stub of CANN graph/operator.h: only what the generated code uses.
#pragma once
#include <cstdint>
#include <vector>
#include "graph/types.h"
namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
class AscendString {
 public:
  AscendString() = default;
  AscendString(const char* name);  // NOLINT: implicit, as in CANN
  const char* GetString() const;
  bool operator<(const AscendString& other) const;
};
class Operator {
 public:
  Operator() = default;
  explicit Operator(const char* type);
  Operator(const char* name, const char* type);
  virtual ~Operator() = default;
  graphStatus GetAttr(const char* name, AscendString& value) const;
  graphStatus GetAttr(const char* name, int64_t& value) const;
  graphStatus GetAttr(const char* name, bool& value) const;
  graphStatus GetAttr(const char* name, float& value) const;
  graphStatus GetAttr(const char* name, std::vector<int64_t>& value) const;
  graphStatus GetAttr(const char* name, std::vector<float>& value) const;
  Operator& SetAttr(const char* name, const AscendString& value);
  Operator& SetAttr(const char* name, int64_t value);
  Operator& SetAttr(const char* name, bool value);
  Operator& SetAttr(const char* name, float value);
  Operator& SetAttr(const char* name, const std::vector<int64_t>& value);
  Operator& SetAttr(const char* name, const std::vector<float>& value);
};
}  // namespace ge
