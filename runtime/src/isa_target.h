// The instruction set of a kernel file built once per set (separable_kernels.cc, grid_kernels.cc): CMakeLists.txt
// compiles each file once per set with RG_ISA_NAMESPACE (baseline, avx2, avx512: the namespace its code goes into)
// and RG_ISA_LEVEL (0: plain C++, also the build for other architectures; 1: AVX2 + FMA + F16C; 2: AVX-512
// F/BW/DQ/VL), and isa.cc picks one set's tables at load time (simd.h).
//
// Include this header after every other one. From here on the including file's own functions are compiled for the
// set, through `#pragma GCC target` rather than a compiler flag: the inline functions and templates of the headers
// above it (std::vector, kernel_common.h, ...) stay baseline code, so the linker's one copy of each is safe on every
// CPU. The file's code goes into an anonymous namespace inside rg::RG_ISA_NAMESPACE.
#pragma once

#include <cstdint>

#ifndef RG_ISA_NAMESPACE
#define RG_ISA_NAMESPACE baseline
#endif
#ifndef RG_ISA_LEVEL
#define RG_ISA_LEVEL 0
#endif
#if RG_ISA_LEVEL == 2
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")
#elif RG_ISA_LEVEL == 1
#pragma GCC target("avx2,fma,f16c")
#endif
#if RG_ISA_LEVEL >= 1
#include <immintrin.h>
#endif

namespace rg {
namespace RG_ISA_NAMESPACE {
namespace {

// Asks for the `bytes` from `p` ahead of use, to read (kWrite false) or to write: for short or indirect runs the
// hardware prefetcher does not follow far enough to keep a core busy.
template <bool kWrite = false>
inline void Prefetch(const void* p, int64_t bytes) {
#if defined(__GNUC__)
  for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(static_cast<const char*>(p) + at, kWrite ? 1 : 0);
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace
}  // namespace RG_ISA_NAMESPACE
}  // namespace rg
