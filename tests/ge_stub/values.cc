// The enumerator and constant values the stub headers state, as compile-time checks. Compiled against the stub
// headers by tests/converters/test_ge_stub.py, and against CANN's real headers by check_against_cann.py (and by
// that test when RESAMPLE_GRAD_CANN_INCLUDE is set): there the values are CANN's own. Angle-bracket includes: the
// -I folders only, not this folder.
#include <type_traits>

#include <ge/ge_api_types.h>
#include <graph/error_codes.h>
#include <graph/types.h>
#include <register/register.h>

static_assert(ge::FORMAT_NCHW == 0 && ge::FORMAT_NHWC == 1 && ge::FORMAT_ND == 2, "formats");
static_assert(ge::FORMAT_NDHWC == 27 && ge::FORMAT_NCDHW == 30, "5-D formats");
static_assert(ge::DT_FLOAT == 0 && ge::DT_FLOAT16 == 1 && ge::DT_INT32 == 3 && ge::DT_INT64 == 9, "dtypes");
static_assert(ge::DT_DOUBLE == 11 && ge::DT_BF16 == 27, "dtypes");
static_assert(ge::GRAPH_SUCCESS == 0 && ge::GRAPH_FAILED == 0xFFFFFFFF, "graphStatus");
static_assert(domi::SUCCESS == 0 && domi::FAILED == 0xFFFFFFFF, "domi::Status");
static_assert(domi::ONNX == 5, "FrameworkType");
static_assert(static_cast<unsigned>(domi::ImplyType::TVM) == 1, "ImplyType");
static_assert(std::is_same<ge::char_t, char>::value && std::is_same<ge::float32_t, float>::value, "types");
static_assert(std::is_same<domi::Status, uint32_t>::value && std::is_same<ge::graphStatus, uint32_t>::value,
              "status types");
static_assert(std::is_same<decltype(ge::ir_option::SOC_VERSION), const char* const>::value, "SOC_VERSION");
