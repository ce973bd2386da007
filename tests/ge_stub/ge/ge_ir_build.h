// Test stub of CANN ge/ge_ir_build.h: only what the generated files use, copied from
// from: hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/external/ge/ge_ir_build.h
// It does not include ge/ge_api_types.h (which declares ge::ir_option), as the real header does not.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include "graph/graph.h"
#include "graph/error_codes.h"
namespace ge {
struct ModelBufferData {
  std::shared_ptr<uint8_t> data = nullptr;
  uint64_t length;
};
ATTRIBUTED_DEPRECATED(GE_FUNC_VISIBILITY graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString> &))
graphStatus aclgrphBuildInitialize(std::map<std::string, std::string> global_options);
graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString> &global_options);
void aclgrphBuildFinalize();
ATTRIBUTED_DEPRECATED(GE_FUNC_VISIBILITY graphStatus aclgrphBuildModel(const ge::Graph &,
                                                                       const std::map<AscendString, AscendString> &,
                                                                       ModelBufferData &))
graphStatus aclgrphBuildModel(const ge::Graph &graph, const std::map<std::string, std::string> &build_options,
                              ModelBufferData &model);
graphStatus aclgrphBuildModel(const ge::Graph &graph, const std::map<AscendString, AscendString> &build_options,
                              ModelBufferData &model);
ATTRIBUTED_DEPRECATED(GE_FUNC_VISIBILITY graphStatus aclgrphSaveModel(const char_t *, const ModelBufferData &))
graphStatus aclgrphSaveModel(const std::string &output_file, const ModelBufferData &model);
graphStatus aclgrphSaveModel(const char_t *output_file, const ModelBufferData &model);
}  // namespace ge
