// Test stub of CANN register/register_error_codes.h, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/register/register_error_codes.h
#pragma once
#include <cstdint>
#define DECLARE_ERRORNO(sysid, modid, name, value)                                                         \
  constexpr domi::Status name = ((static_cast<uint32_t>(0xFFU & (static_cast<uint32_t>(sysid)))) << 24U) | \
                                ((static_cast<uint32_t>(0xFFU & (static_cast<uint32_t>(modid)))) << 16U) | \
                                (static_cast<uint32_t>((0xFFFFU & (static_cast<uint32_t>(value)))));
namespace domi {
using Status = uint32_t;
DECLARE_ERRORNO(0U, 0U, SUCCESS, 0U);
DECLARE_ERRORNO(0xFFU, 0xFFU, FAILED, 0xFFFFFFFFU);
}  // namespace domi
