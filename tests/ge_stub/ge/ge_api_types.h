// Test stub of CANN ge/ge_api_types.h: only what the generated files use. ge/ge_api_types.h
// (hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/external/ge/ge_api_types.h) includes
// external/ge_common/ge_common_api_types.h, which declares the option keys, copied from
// from: hicann/ge@ffdcbc9f7496c17a98c1d12762c61ed608ef3503 inc/graph_metadef/external/ge_common/ge_common_api_types.h
#pragma once
#include <string>
#include "graph/types.h"
namespace ge {
const std::string SOC_VERSION = "ge.socVersion";
namespace ir_option {
static const char_t *const SOC_VERSION = ge::SOC_VERSION.c_str();
}  // namespace ir_option
}  // namespace ge
