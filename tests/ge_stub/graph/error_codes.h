// Test stub of CANN graph/error_codes.h, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/graph/error_codes.h
#pragma once
#include <cstdint>
#ifdef __GNUC__
#define ATTRIBUTED_DEPRECATED(replacement) __attribute__((deprecated("Please use " #replacement " instead.")))
#endif
namespace ge {
using graphStatus = uint32_t;
const graphStatus GRAPH_FAILED = 0xFFFFFFFF;
const graphStatus GRAPH_SUCCESS = 0;
}  // namespace ge
