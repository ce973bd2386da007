// Test stub of CANN ge/ge_ir_build.h: only what the generated code uses.
#pragma once
#include <map>
#include "graph/graph.h"
namespace ge {
namespace ir_option {
static const char* const SOC_VERSION = "ge.socVersion";
}
struct ModelBufferData {};
graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString> global_options);
graphStatus aclgrphBuildModel(const Graph& graph, const std::map<AscendString, AscendString>& build_options,
                              ModelBufferData& model);
graphStatus aclgrphSaveModel(const char* output_file, const ModelBufferData& model);
void aclgrphBuildFinalize();
}  // namespace ge
