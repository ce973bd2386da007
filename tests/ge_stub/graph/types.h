// Test stub of CANN graph/types.h: only what the generated files use, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/graph/types.h
// (enumerator values from inc/external/graph/c_types.h of the same commit).
#pragma once
#include <cstdint>
namespace ge {
using char_t = char;
using float32_t = float;
enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT32 = 3,
  DT_INT64 = 9,
  DT_DOUBLE = 11,
  DT_BF16 = 27,
};
enum Format {
  FORMAT_NCHW = 0,
  FORMAT_NHWC = 1,
  FORMAT_ND = 2,
  FORMAT_NDHWC = 27,
  FORMAT_NCDHW = 30,
};
}  // namespace ge
namespace domi {
enum class ImplyType : unsigned int {
  BUILTIN = 0,
  BUILDIN = BUILTIN,
  TVM,
  CUSTOM,
  AI_CPU,
};
using char_t = ge::char_t;
using float32_t = ge::float32_t;
}  // namespace domi
