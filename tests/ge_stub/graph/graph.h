// Test stub of CANN graph/graph.h: only what the generated files use, copied from
// from: hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/graph_metadef/external/graph/graph.h
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "graph/operator.h"
namespace ge {
class Graph {
 public:
  ATTRIBUTED_DEPRECATED(Graph(const char_t *))
  explicit Graph(const std::string &name);
  explicit Graph(const char_t *name);
  Graph() = default;
  ~Graph() = default;
  Graph &SetInputs(const std::vector<Operator> &inputs);
  Graph &SetOutputs(const std::vector<Operator> &outputs);
  Graph &SetOutputs(const std::vector<std::pair<Operator, std::vector<size_t>>> &output_indexs);
 private:
  std::shared_ptr<void> impl_{nullptr};  // stand-in for GraphImplPtr
};
}  // namespace ge
