// Test stub of CANN graph/graph.h: only what the generated code uses.
#pragma once
#include <vector>
#include "graph/operator.h"
namespace ge {
class Graph {
 public:
  explicit Graph(const char* name);
  Graph& SetInputs(const std::vector<Operator>& inputs);
  Graph& SetOutputs(const std::vector<Operator>& outputs);
};
}  // namespace ge
