// The choice of instruction set for the hot loops (simd.h): RESAMPLE_GRAD_ISA, checked against the CPU.
#include <cstdlib>

#include "simd.h"

namespace rg {
namespace {

// What this CPU (and this build) can run.
bool Supports(Isa isa) {
#if defined(RG_HAVE_ISA_VARIANTS) && (defined(__x86_64__) || defined(_M_X64))
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kBaseline: return true;
    case Isa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::kBaseline;  // a portable build has the scalar loops only
#endif
}

Isa g_isa = Isa::kBaseline;
bool g_selected = false;

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kBaseline: break;
  }
  return "baseline";
}

bool SelectIsa(std::string* error) {
  if (g_selected) return true;
  const char* forced = std::getenv("RESAMPLE_GRAD_ISA");
  if (forced != nullptr && *forced != '\0') {
    const std::string name = forced;
    Isa isa;
    if (name == "baseline") isa = Isa::kBaseline;
    else if (name == "avx2") isa = Isa::kAvx2;
    else if (name == "avx512") isa = Isa::kAvx512;
    else {
      *error = "resample_grad: RESAMPLE_GRAD_ISA='" + name + "' is not one of baseline, avx2, avx512";
      return false;
    }
    if (!Supports(isa)) {
      *error = "resample_grad: RESAMPLE_GRAD_ISA=" + name + " but this " +
               (isa == Isa::kAvx512 ? "CPU lacks AVX-512 F/BW/DQ/VL" : "CPU lacks AVX2 and FMA") +
               " (or the library was built without it); use baseline";
      return false;
    }
    g_isa = isa;
  } else {
    g_isa = Supports(Isa::kAvx512) ? Isa::kAvx512 : Supports(Isa::kAvx2) ? Isa::kAvx2 : Isa::kBaseline;
  }
  g_selected = true;
  return true;
}

Isa ActiveIsa() { return g_isa; }

const SeparableKernels& SeparableSimd() {
#if defined(RG_HAVE_ISA_VARIANTS)
  switch (g_isa) {
    case Isa::kAvx2: return avx2::SeparableTable();
    case Isa::kAvx512: return avx512::SeparableTable();
    case Isa::kBaseline: break;
  }
#endif
  return baseline::SeparableTable();
}

const GridKernels& GridSimd() {
#if defined(RG_HAVE_ISA_VARIANTS)
  switch (g_isa) {
    case Isa::kAvx2: return avx2::GridTable();
    case Isa::kAvx512: return avx512::GridTable();
    case Isa::kBaseline: break;
  }
#endif
  return baseline::GridTable();
}

}  // namespace rg
