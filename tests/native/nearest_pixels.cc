// Exhaustive check of NearestPixels16 (the AVX-512 pixels of nearest's 2-D float grid points) against the scalar
// NearestIndex, for every float32 bit pattern (NaN, inf, huge, subnormal, -0 included) as the x and as the y of a
// point, each padding, both align_corners and a set of image sizes. Needs an AVX-512 CPU. tests/native/test_isa.py
// builds it (the g++ line there, from the repository root) and runs every 4099th pattern; the full sweep is step 1:
//   nearest_pixels [step [other_step [only]]]
// step (default 1) checks every step-th pattern only, for a quick run; other_step (default: step) the same for zeros
// and border padding; only (default all) the indices of the sizes to check. Exits 1 on the first difference.
#define RG_ISA_NAMESPACE avx512_check
#define RG_ISA_LEVEL 2
#include "grid_kernels.cc"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace rg::avx512_check {
namespace {

template <Padding P>
int64_t ScalarFlat(float x, float y, const int64_t* sizes, bool align_corners, int64_t plane) {
  const int64_t row = NearestIndex<P>(y, sizes[0], align_corners), column = NearestIndex<P>(x, sizes[1], align_corners);
  return row >= 0 && column >= 0 ? row * sizes[1] + column : plane;
}

template <Padding P>
bool Sweep(const int64_t* sizes, bool align_corners, uint64_t step) {
  const int64_t plane = sizes[0] * sizes[1];
  const float inside = 0.25f;  // a point's other coordinate: inside for every size and padding
  alignas(64) float xy[32];
  alignas(64) int32_t out[16];
  float value[8];
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += 8 * step) {
    for (int l = 0; l < 8; ++l) {
      const uint32_t bits = static_cast<uint32_t>(base + l * step);
      std::memcpy(&value[l], &bits, sizeof bits);
      xy[2 * l] = value[l], xy[2 * l + 1] = inside;           // lanes 0-7: the pattern as x
      xy[16 + 2 * l] = inside, xy[16 + 2 * l + 1] = value[l];  // lanes 8-15: as y
    }
    NearestPixels16<P>(xy, sizes, align_corners, plane, out);
    for (int l = 0; l < 16; ++l) {
      const float x = xy[2 * l], y = xy[2 * l + 1];
      const int64_t want = ScalarFlat<P>(x, y, sizes, align_corners, plane);
      if (out[l] != want) {
        uint32_t xb, yb;
        std::memcpy(&xb, &x, 4), std::memcpy(&yb, &y, 4);
        std::printf("DIFF padding %d align %d sizes %lld x %lld: x %08x (%g) y %08x (%g): vector %d scalar %lld\n",
                    static_cast<int>(P), align_corners, (long long)sizes[0], (long long)sizes[1], xb, x, yb, y,
                    out[l], (long long)want);
        return false;
      }
    }
  }
  return true;
}

}  // namespace
}  // namespace rg::avx512_check

int main(int argc, char** argv) {
  using namespace rg;
  using namespace rg::avx512_check;
  const uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const uint64_t other_step = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : step;
  const char* only = argc > 3 ? argv[3] : nullptr;  // the sizes to check, as indices into `sizes` ("45": 4 and 5)
  // (H, W): 1 (reflection with align_corners reflects everything to 0), small odd and even, the benchmark's 64,
  // and sizes whose float conversions round (2^24 + 1) or whose reflection period passes 2^24
  const int64_t sizes[][2] = {{1, 2}, {3, 64}, {5, 100}, {7, 1000}, {16777217, 1}, {33554433, 3}};
  for (int k = 0; k < static_cast<int>(std::size(sizes)); ++k)
    for (int align = 0; align < 2; ++align) {
      if (only != nullptr && std::strchr(only, '0' + k) == nullptr) continue;
      const auto& s = sizes[k];
      const bool ok = Sweep<Padding::kReflection>(s, align, step) && Sweep<Padding::kBorder>(s, align, other_step) &&
                      Sweep<Padding::kZeros>(s, align, other_step);
      std::printf("sizes %lld x %lld align %d: %s\n", (long long)s[0], (long long)s[1], align, ok ? "same" : "DIFF");
      std::fflush(stdout);
      if (!ok) return 1;
    }
  return 0;
}
