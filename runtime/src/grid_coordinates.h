// The coordinates of the grid samplers: aten's GridSampler.h rules per axis (the twin of opset/_coords.py),
// and the taps of a run of grid points. Included by the kernels of every instruction set (grid_kernels.cc).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel_common.h"
#include "taps.h"

namespace rg {

enum class Interpolation { kBilinear = 0, kNearest = 1, kBicubic = 2 };

enum class Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

// ----------------------------------------------------------------------------- coordinates (aten GridSampler.h)

template <typename A>
A Unnormalize(A coord, int64_t size, bool align_corners, A* mult) {
  if (align_corners) {
    *mult = static_cast<A>(size - 1) / 2;
    return (coord + 1) / 2 * static_cast<A>(size - 1);
  }
  *mult = static_cast<A>(size) / 2;
  return ((coord + 1) * static_cast<A>(size) - 1) / 2;
}

// Borders count as outside for the gradient; NaN passes through (comparisons are false).
template <typename A>
A Clip(A coord, int64_t size, A* grad) {
  const A limit = static_cast<A>(size - 1);
  if (coord <= 0) { *grad = 0; return 0; }
  if (coord >= limit) { *grad = 0; return limit; }
  *grad = 1;
  return coord;
}

// Flip parity from fmod(x, 2 span): exact for any x (aten's int(floor(x / span)) overflows).
// Beyond +-2^23 pixels float32 has no fraction bits and float and double would reflect to
// different pixels: the result is NaN, a point that reads nothing (as in opset/_coords.py).
template <typename A>
A Reflect(A coord, int64_t twice_low, int64_t twice_high, A* grad) {
  if (twice_low == twice_high) { *grad = 0; return 0; }
  if (!(std::fabs(coord) <= A(8388608))) { *grad = 0; return std::numeric_limits<A>::quiet_NaN(); }
  const A low = static_cast<A>(twice_low) / 2;
  const A span = static_cast<A>(twice_high - twice_low) / 2;
  A shifted = coord - low;
  A sign = 1;
  if (shifted < 0) { sign = -1; shifted = -shifted; }
  const A rest = std::fmod(shifted, 2 * span);
  if (rest >= span) { *grad = -sign; return 2 * span - rest + low; }
  *grad = sign;
  return rest + low;
}

// safe_downgrade_to_int_range: NaN, inf and values outside int32 become -100, out of bounds.
template <typename A>
A SafeDowngrade(A coord) {
  if (!std::isfinite(coord) || coord >= A(2147483647.0) || coord < A(-2147483648.0)) return A(-100);
  return coord;
}

template <typename A>
[[gnu::always_inline]] inline A Pad(A coord, int64_t size, Padding padding, bool align_corners, A* grad) {
  *grad = 1;
  if (padding == Padding::kBorder) {
    coord = Clip(coord, size, grad);
  } else if (padding == Padding::kReflection) {
    A reflect_grad, clip_grad;
    coord = align_corners ? Reflect(coord, 0, 2 * (size - 1), &reflect_grad)
                          : Reflect(coord, -1, 2 * size - 1, &reflect_grad);
    coord = Clip(coord, size, &clip_grad);
    *grad = reflect_grad * clip_grad;
  }
  return SafeDowngrade(coord);
}

// A pixel index for an in-range coordinate (already safe-downgraded), or -1 outside [0, size).
template <typename A>
int64_t PixelIndex(A coord, int64_t size) {
  // both comparisons and the conversion (safe: the coordinate is in int32 range) unconditionally, then a select:
  // for a random grid, short-circuit branches mispredict on every point near an edge
  const bool inside = (coord >= 0) & (coord <= static_cast<A>(size - 1));
  const int64_t index = static_cast<int64_t>(coord);
  return inside ? index : -1;
}

// Nearest's pixel along one axis (round half to even), -1 outside: ComputeAxisTaps's index without the gradient
// factors, which nearest's grad_input does not need. The padding is a constant and Pad is inlined, so a loop over
// points keeps only its own padding's few branches (a call to Pad per axis was a third of the taps' time).
template <Padding P, typename A>
inline int64_t NearestIndex(A grid_coord, int64_t size, bool align_corners) {
  A mult, pad_grad;
  const A pixel = Pad(Unnormalize(grid_coord, size, align_corners, &mult), size, P, align_corners, &pad_grad);
  return PixelIndex(std::nearbyint(pixel), size);
}

// Bicubic's weights of the taps at -1, 0, 1, 2 for the fraction t (taps.h CubicWeights, aten
// get_cubic_upsample_coefficients) and their derivatives in t (aten get_cubic_coefficients_grad), A = -0.75.
template <typename A>
void CubicWeightsAndGrads(A t, A coeffs[4], A grads[4]) {
  const A a = A(-0.75);
  CubicWeights(t, a, coeffs);
  A x = -1 - t;
  grads[0] = (-3 * a * x - 10 * a) * x - 8 * a;
  x = -t;
  grads[1] = (-3 * (a + 2) * x - 2 * (a + 3)) * x;
  x = 1 - t;
  grads[2] = (3 * (a + 2) * x - 2 * (a + 3)) * x;
  x = 2 - t;
  grads[3] = (3 * a * x - 10 * a) * x + 8 * a;
}

// Unsigned integer of A's width, to mask a value's bits without branches.
template <typename A> using Bits = std::conditional_t<sizeof(A) == 8, uint64_t, uint32_t>;

template <typename A>
inline A Masked(A value, Bits<A> mask) {
  Bits<A> bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= mask;
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

// The taps of one axis for one grid coordinate: up to 4 entries, index -1 outside the image.
template <typename A>
struct CoordinateTaps {
  int64_t index[4];
  A weight[4];
  A slope[4];  // d weight / d pixel coordinate
  A mult = 0;  // d pixel coordinate / d grid coordinate
};

template <typename A>
[[gnu::always_inline]] inline void ComputeAxisTaps(A grid_coord, int64_t size, Interpolation mode, Padding padding,
                                                   bool align_corners, CoordinateTaps<A>* t) {
  A pixel = Unnormalize(grid_coord, size, align_corners, &t->mult);
  if (mode == Interpolation::kBicubic) {
    if (!std::isfinite(pixel)) {  // a non-finite point reads nothing
      for (int i = 0; i < 4; ++i) t->index[i] = -1, t->weight[i] = 0, t->slope[i] = 0;
      return;
    }
    const A base = std::floor(pixel);
    A grads[4], ignored;
    CubicWeightsAndGrads(pixel - base, t->weight, grads);
    for (int i = 0; i < 4; ++i) {
      t->index[i] = PixelIndex(Pad(base - 1 + i, size, padding, align_corners, &ignored), size);
      t->slope[i] = -grads[i];
    }
    return;
  }
  A pad_grad;
  pixel = Pad(pixel, size, padding, align_corners, &pad_grad);
  t->mult *= pad_grad;
  if (mode == Interpolation::kNearest) {
    t->index[0] = PixelIndex(std::nearbyint(pixel), size);  // round half to even
    t->weight[0] = 1;
    t->slope[0] = 0;
    return;
  }
  const A low = std::floor(pixel), high = low + 1;
  t->index[0] = PixelIndex(low, size);
  t->index[1] = PixelIndex(high, size);
  t->weight[0] = high - pixel;
  t->weight[1] = pixel - low;
  t->slope[0] = -1;
  t->slope[1] = 1;
}

// The K taps of every point of a run of consecutive grid points, as arrays (K = taps per axis ^ D). A tap outside
// the image has flat index `plane` (one past the last pixel) and is left out of `inside`.
template <typename A, int D>
struct PointTaps {
  std::vector<int64_t> flat;
  std::vector<A> weight;
  std::array<std::vector<A>, D> slope;  // d weight / d coordinate of each axis (spatial order)
  std::array<std::vector<A>, D> mult;   // d coordinate / d grid of each axis, per point
  // The taps inside the image (p * K + k, in point and tap order), the first inside_count entries: the loops
  // skip the outside ones (zeros padding: ~20% of a random grid's taps) without a branch per tap.
  std::vector<int32_t> inside;
  int64_t inside_count = 0;
};

// PointTaps as scratch (kernel_common.h ScratchScope)
template <typename A, int D>
size_t ScratchBytes(const PointTaps<A, D>& taps) {
  size_t bytes = ScratchBytes(taps.flat) + ScratchBytes(taps.weight) + ScratchBytes(taps.inside);
  for (int a = 0; a < D; ++a) bytes += ScratchBytes(taps.slope[a]) + ScratchBytes(taps.mult[a]);
  return bytes;
}
template <typename A, int D>
void ReleaseScratch(PointTaps<A, D>& taps) { taps = PointTaps<A, D>(); }

// sizes: the spatial sizes (D, H, W order); the grid holds (x, y[, z]): the last axis first. The mode follows from
// D and K; the padding becomes a constant of the loop, so ComputeAxisTaps inlines with only its own branches (a call
// per axis with both as variables was half the taps' time).
template <typename T, int D, int K>
void ComputePointTaps(const T* grid_points, int64_t count, const int64_t* sizes, Padding padding, bool align_corners,
                      PointTaps<AccT<T>, D>* taps) {
  using A = AccT<T>;
  constexpr Interpolation kMode =
      K == 1 ? Interpolation::kNearest : (D == 2 && K == 16 ? Interpolation::kBicubic : Interpolation::kBilinear);
  int64_t plane = 1;
  for (int a = 0; a < D; ++a) plane *= sizes[a];
  taps->flat.resize(count * K);
  taps->weight.resize(count * K);
  taps->inside.resize(count * K);
  for (int a = 0; a < D; ++a) taps->slope[a].resize(count * K), taps->mult[a].resize(count);
  int64_t* flat_of = taps->flat.data();
  A* weight_of = taps->weight.data();
  int32_t* inside_of = taps->inside.data();
  A* slope_of[D];
  A* mult_of[D];
  for (int a = 0; a < D; ++a) slope_of[a] = taps->slope[a].data(), mult_of[a] = taps->mult[a].data();
  constexpr int kAxis = K == 1 ? 1 : (D == 2 ? (K == 4 ? 2 : 4) : 2);
  // aten's tap order: bilinear the first spatial axis outermost (nw, ne, sw, se; tnw .. bse);
  // bicubic (2-D) x outer, y inner.
  constexpr bool kXOuter = D == 2 && K == 16;
  int64_t inside_count = 0;
  auto walk = [&](auto pad) {
    CoordinateTaps<A> axis[D];
    for (int64_t p = 0; p < count; ++p) {
      for (int a = 0; a < D; ++a) {
        ComputeAxisTaps(Load<A>(grid_points[D * p + (D - 1 - a)]), sizes[a], kMode, decltype(pad)::value,
                        align_corners, &axis[a]);
        mult_of[a][p] = axis[a].mult;
      }
      for (int k = 0; k < K; ++k) {
        int digit[D];  // the tap of each axis for combination k
        int rest = k;
        for (int a = D - 1; a >= 0; --a) digit[a] = rest % kAxis, rest /= kAxis;
        if (kXOuter) std::swap(digit[0], digit[1]);
        bool inside = true;
        int64_t flat = 0;
        A weight = 1;
        for (int a = 0; a < D; ++a) {
          inside = inside & (axis[a].index[digit[a]] >= 0);
          flat = flat * sizes[a] + axis[a].index[digit[a]];
          weight *= axis[a].weight[digit[a]];
        }
        flat_of[p * K + k] = inside ? flat : plane;
        inside_of[inside_count] = static_cast<int32_t>(p * K + k);  // appended without a branch
        inside_count += inside;
        weight_of[p * K + k] = weight;
        for (int a = 0; a < D; ++a) {
          A slope = axis[a].slope[digit[a]];
          for (int b = 0; b < D; ++b)
            if (b != a) slope *= axis[b].weight[digit[b]];
          slope_of[a][p * K + k] = slope;
        }
      }
    }
  };
  switch (padding) {
    case Padding::kZeros: walk(std::integral_constant<Padding, Padding::kZeros>()); break;
    case Padding::kBorder: walk(std::integral_constant<Padding, Padding::kBorder>()); break;
    case Padding::kReflection: walk(std::integral_constant<Padding, Padding::kReflection>()); break;
  }
  taps->inside_count = inside_count;
}

}  // namespace rg
