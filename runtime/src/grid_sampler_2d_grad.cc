// GridSampler2DGrad: aten::grid_sampler_2d_backward.
//
// Two passes, neither with atomics:
//  - grad_input scatters: a task owns a block of channel planes of one batch item
//    and walks every grid point in order, so each plane element is summed in the
//    same order as aten's loop, whatever the thread count;
//  - grad_grid gathers: a task owns one output row of grid points.
// Tap positions and weights of one output row are computed into a per-thread
// buffer (O(threads x row)); coordinates follow opset/_coords.py.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel_common.h"
#include "kernels.h"

namespace rg {
namespace {

enum class Interpolation { kBilinear = 0, kNearest = 1, kBicubic = 2 };

// Grid points handled together: their taps are computed once, then every channel plane is
// visited once for all of them (the plane stays in L1). A few output rows' worth.
constexpr int64_t kChunk = 512;
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
A Pad(A coord, int64_t size, Padding padding, bool align_corners, A* grad) {
  *grad = 1;
  if (padding == Padding::kBorder) {
    coord = Clip(coord, size, grad);
  } else if (padding == Padding::kReflection) {
    A reflect_grad, clip_grad;
    coord = align_corners ? Reflect(coord, 0, 2 * (size - 1), &reflect_grad) : Reflect(coord, -1, 2 * size - 1, &reflect_grad);
    coord = Clip(coord, size, &clip_grad);
    *grad = reflect_grad * clip_grad;
  }
  return SafeDowngrade(coord);
}

// A pixel index for an in-range coordinate (already safe-downgraded), or -1 outside [0, size).
template <typename A>
int64_t PixelIndex(A coord, int64_t size) {
  return (coord >= 0 && coord <= static_cast<A>(size - 1)) ? static_cast<int64_t>(coord) : -1;
}

// get_cubic_upsample_coefficients and get_cubic_coefficients_grad, A = -0.75.
template <typename A>
void Cubic(A t, A coeffs[4], A grads[4]) {
  const A a = A(-0.75);
  auto near = [a](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [a](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  coeffs[0] = far(t + 1);
  coeffs[1] = near(t);
  coeffs[2] = near(1 - t);
  coeffs[3] = far(2 - t);
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

// The taps of one axis for one grid coordinate: kAxisTaps(mode) entries, index -1 outside the image.
template <typename A>
struct AxisTaps {
  int64_t index[4];
  A weight[4];
  A slope[4];  // d weight / d pixel coordinate
  A mult = 0;  // d pixel coordinate / d grid coordinate
};

constexpr int AxisTapCount(Interpolation mode) {
  return mode == Interpolation::kNearest ? 1 : mode == Interpolation::kBilinear ? 2 : 4;
}

template <typename A>
void ComputeAxisTaps(A grid_coord, int64_t size, Interpolation mode, Padding padding, bool align_corners, AxisTaps<A>* t) {
  A pixel = Unnormalize(grid_coord, size, align_corners, &t->mult);
  if (mode == Interpolation::kBicubic) {
    if (!std::isfinite(pixel)) {  // a non-finite point reads nothing
      for (int i = 0; i < 4; ++i) t->index[i] = -1, t->weight[i] = 0, t->slope[i] = 0;
      return;
    }
    const A base = std::floor(pixel);
    A grads[4], ignored;
    Cubic(pixel - base, t->weight, grads);
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

// The K taps of every point of a run of consecutive grid points, as arrays (K = 1, 4 or 16 by mode). A tap outside
// the image points at `sink` (one past the plane): the scatter adds it to a spare slot and the
// gather reads zero for it, so the inner loops have no branches on the tap count.
template <typename A>
struct PointTaps {
  std::vector<int64_t> flat;
  std::vector<A> weight, slope_x, slope_y;
  std::vector<A> mult_x, mult_y;
};

template <typename T, int K>
void ComputePointTaps(const T* grid_points, int64_t count, int64_t h_in, int64_t w_in, Interpolation mode, Padding padding,
                      bool align_corners, PointTaps<AccT<T>>* row) {
  using A = AccT<T>;
  const int64_t sink = h_in * w_in;
  row->flat.resize(count * K);
  row->weight.resize(count * K);
  row->slope_x.resize(count * K);
  row->slope_y.resize(count * K);
  row->mult_x.resize(count);
  row->mult_y.resize(count);
  constexpr int kAxis = K == 1 ? 1 : K == 4 ? 2 : 4;
  // aten's tap order: bilinear nw, ne, sw, se (y outer); bicubic x outer, y inner.
  constexpr bool kXOuter = K == 16;
  AxisTaps<A> tx, ty;
  for (int64_t p = 0; p < count; ++p) {
    ComputeAxisTaps(Load<A>(grid_points[2 * p]), w_in, mode, padding, align_corners, &tx);
    ComputeAxisTaps(Load<A>(grid_points[2 * p + 1]), h_in, mode, padding, align_corners, &ty);
    row->mult_x[p] = tx.mult;
    row->mult_y[p] = ty.mult;
    int64_t k = p * K;
    for (int a = 0; a < kAxis; ++a) {
      for (int b = 0; b < kAxis; ++b, ++k) {
        const int i = kXOuter ? a : b, j = kXOuter ? b : a;
        const bool inside = tx.index[i] >= 0 && ty.index[j] >= 0;
        row->flat[k] = inside ? ty.index[j] * w_in + tx.index[i] : sink;
        row->weight[k] = tx.weight[i] * ty.weight[j];
        row->slope_x[k] = tx.slope[i] * ty.weight[j];
        row->slope_y[k] = tx.weight[i] * ty.slope[j];
      }
    }
  }
}

// ----------------------------------------------------------------------------- kernel

struct GridSampler2DGrad {
  static constexpr const char* kName = "GridSampler2DGrad";
  static constexpr size_t kInputs = 3;
  static constexpr size_t kOutputs = 2;
  static constexpr bool kOptionalOutputs = true;

  const OrtApi* api;
  std::string prefix;
  Interpolation mode = Interpolation::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;

  GridSampler2DGrad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    const std::string interpolation = attrs.String("interpolation_mode", "bilinear");
    if (interpolation == "bilinear") mode = Interpolation::kBilinear;
    else if (interpolation == "nearest") mode = Interpolation::kNearest;
    else if (interpolation == "bicubic") mode = Interpolation::kBicubic;
    else throw OpError(prefix + "attribute 'interpolation_mode' must be one of 'bilinear', 'nearest', 'bicubic', got '" +
                       interpolation + "'");
    const std::string pad = attrs.String("padding_mode", "zeros");
    if (pad == "zeros") padding = Padding::kZeros;
    else if (pad == "border") padding = Padding::kBorder;
    else if (pad == "reflection") padding = Padding::kReflection;
    else throw OpError(prefix + "attribute 'padding_mode' must be one of 'zeros', 'border', 'reflection', got '" + pad + "'");
    const int64_t corners = attrs.Int("align_corners", 0);
    if (corners != 0 && corners != 1)
      throw OpError(prefix + "attribute 'align_corners' must be 0 or 1, got " + std::to_string(corners));
    align_corners = corners == 1;
  }

  void CheckDim(const char* a_name, const Tensor& a, int a_axis, const char* b_name, const Tensor& b, int b_axis) const {
    if (a.dims[a_axis] != b.dims[b_axis])
      throw OpError(prefix + "dimension " + std::to_string(a_axis) + " of '" + a_name + "' (" + std::to_string(a.dims[a_axis]) +
                    ") must equal dimension " + std::to_string(b_axis) + " of '" + b_name + "' (" +
                    std::to_string(b.dims[b_axis]) + ")");
  }

  // The aclnn 161002 list.
  void Validate(const Tensor& grad_output, const Tensor& input, const Tensor& grid) const {
    const std::pair<const char*, const Tensor*> named[] = {{"grad_output", &grad_output}, {"input", &input}, {"grid", &grid}};
    const char* layouts[] = {"[N, C, H_out, W_out]", "[N, C, H_in, W_in]", "[N, H_out, W_out, 2]"};
    for (int k = 0; k < 3; ++k) {
      if (named[k].second->dims.size() != 4)
        throw OpError(prefix + "input '" + named[k].first + "' must be 4-D " + layouts[k] + ", got shape " +
                      ShapeString(named[k].second->dims));
      if (named[k].second->type != grad_output.type)
        throw OpError(prefix + "input '" + named[k].first + "' has dtype " + TypeName(named[k].second->type) +
                      " but 'grad_output' has " + TypeName(grad_output.type) + "; all inputs must share one dtype");
    }
    if (input.dims[2] <= 0 || input.dims[3] <= 0)
      throw OpError(prefix + "input 'input' must have a positive " + (input.dims[2] <= 0 ? "H_in (dimension 2)" : "W_in (dimension 3)") +
                    ", got shape " + ShapeString(input.dims));
    if (grid.dims[3] != 2)
      throw OpError(prefix + "input 'grid' must have last dimension 2 (x, y), got shape " + ShapeString(grid.dims));
    CheckDim("grid", grid, 0, "input", input, 0);
    CheckDim("grad_output", grad_output, 0, "input", input, 0);
    CheckDim("grad_output", grad_output, 1, "input", input, 1);
    CheckDim("grad_output", grad_output, 2, "grid", grid, 1);
    CheckDim("grad_output", grad_output, 3, "grid", grid, 2);
  }

  void Compute(OrtKernelContext* context) {
    const Tensor grad_output = Input(api, context, 0), input = Input(api, context, 1), grid = Input(api, context, 2);
    Validate(grad_output, input, grid);
    DispatchFloat(grad_output.type, prefix, "grad_output", [&](auto tag) {
      using T = decltype(tag);
      T* grad_input = static_cast<T*>(Output(api, context, 0, input.dims));
      T* grad_grid = static_cast<T*>(Output(api, context, 1, grid.dims));
      const T* go = static_cast<const T*>(grad_output.data);
      const T* image = static_cast<const T*>(input.data);
      const T* coords = static_cast<const T*>(grid.data);
      if (input.dims[0] == 0 || input.dims[1] == 0) {  // nothing to scatter; the grid gradient sums no channels
        if (grad_grid) std::fill(grad_grid, grad_grid + grid.Count(), Store<T>(AccT<T>(0)));
        return;
      }
      auto run = [&](auto taps) {
        constexpr int K = decltype(taps)::value;
        if (grad_grid && mode == Interpolation::kNearest) {  // piecewise constant: the grid gradient is zero
          std::fill(grad_grid, grad_grid + grid.Count(), Store<T>(AccT<T>(0)));
          grad_grid = nullptr;
        }
        // Two passes (one fused pass measured slower: register pressure with 16 bicubic taps).
        if (grad_input) Backward<T, K, true>(context, go, image, coords, input.dims, grid.dims, grad_input);
        if (grad_grid) Backward<T, K, false>(context, go, image, coords, input.dims, grid.dims, grad_grid);
      };
      if (mode == Interpolation::kNearest) run(std::integral_constant<int, 1>{});
      else if (mode == Interpolation::kBilinear) run(std::integral_constant<int, 4>{});
      else run(std::integral_constant<int, 16>{});
    });
  }

  // One pass of the backward, for grad_input (kInput) or for grad_grid. Both walk the grid in chunks:
  // a chunk's taps are computed once, then each channel plane is visited once for the whole chunk
  // (it stays in L1).
  //  - grad_input: a task owns (batch item, block of channels) and scatters grad_output into its
  //    planes: no atomics, and every plane element sums in aten's order whatever the thread count;
  //  - grad_grid: a task owns (batch item, chunk) and gathers over all channels.
  template <typename T, int K, bool kInput>
  void Backward(OrtKernelContext* context, const T* go, const T* image, const T* coords, const std::vector<int64_t>& in_dims,
                const std::vector<int64_t>& grid_dims, T* out) const {
    using A = AccT<T>;
    constexpr bool kGrid = !kInput;
    const int64_t n = in_dims[0], c = in_dims[1], h_in = in_dims[2], w_in = in_dims[3];
    const int64_t plane = h_in * w_in, points = grid_dims[1] * grid_dims[2];
    const int64_t chunks = (points + kChunk - 1) / kChunk;
    // grad_input: about 16 tasks, each sharing its chunks' taps among a block of channels.
    const int64_t block = kInput ? std::max<int64_t>(1, std::min<int64_t>(c, n * c / 16)) : c;
    const int64_t blocks = (c + block - 1) / block;
    T* grad_input = kInput ? out : nullptr;
    T* grad_grid = kGrid ? out : nullptr;
    auto task = [&](size_t index) {
      thread_local PointTaps<A> taps;
      thread_local std::vector<A> planes;      // the block's planes, each with a spare slot for taps outside
      thread_local std::vector<int64_t> safe;  // tap indices with the spare slot replaced by 0 (a readable pixel)
      thread_local std::vector<Bits<A>> keep;  // all ones inside the image, zero for the spare slot
      thread_local std::vector<A> gx, gy;
      const int64_t per_item = kInput ? blocks : chunks;
      const int64_t b = static_cast<int64_t>(index) / per_item, part = static_cast<int64_t>(index) % per_item;
      const int64_t c0 = kInput ? part * block : 0, c1 = kInput ? std::min(c, c0 + block) : c, stride = plane + 1;
      const int64_t first = kInput ? 0 : part * kChunk, last = kInput ? points : std::min(points, first + kChunk);
      A* acc = nullptr;  // plain pointers: thread_local objects in a shared library cost a TLS lookup per access
      if (kInput) {
        planes.assign((c1 - c0) * stride, A(0));
        acc = planes.data();
      }
      for (int64_t p0 = first; p0 < last; p0 += kChunk) {
        const int64_t count = std::min(kChunk, last - p0);
        ComputePointTaps<T, K>(coords + (b * points + p0) * 2, count, h_in, w_in, mode, padding, align_corners, &taps);
        const int64_t* flat = taps.flat.data();
        const A* weight = taps.weight.data();
        const A* slope_x = taps.slope_x.data();
        const A* slope_y = taps.slope_y.data();
        const int64_t* tap = flat;
        const Bits<A>* mask = nullptr;
        A *sum_x = nullptr, *sum_y = nullptr;
        if (kGrid) {
          safe.resize(count * K);
          keep.resize(count * K);
          for (int64_t k = 0; k < count * K; ++k) {
            const bool in = flat[k] < plane;
            safe[k] = in ? flat[k] : 0;
            keep[k] = in ? ~Bits<A>(0) : Bits<A>(0);
          }
          tap = safe.data();
          mask = keep.data();
          gx.assign(count, A(0));
          gy.assign(count, A(0));
          sum_x = gx.data();
          sum_y = gy.data();
        }
        for (int64_t ch = c0; ch < c1; ++ch) {  // one plane at a time: it stays in L1 for the whole chunk
          const T* g = go + (b * c + ch) * points + p0;
          const T* src = image + (b * c + ch) * plane;
          A* dst = kInput ? acc + (ch - c0) * stride : nullptr;
          for (int64_t p = 0; p < count; ++p) {
            const A value = Load<A>(g[p]);
            A sx = 0, sy = 0;
            for (int k = 0; k < K; ++k) {
              if (kInput) dst[flat[p * K + k]] += weight[p * K + k] * value;
              if (kGrid) {
                // a tap outside reads +0: the bits are masked (0 * an inf pixel would leak in as NaN)
                const A pixel = Masked(Load<A>(src[tap[p * K + k]]), mask[p * K + k]);
                sx += pixel * slope_x[p * K + k];
                sy += pixel * slope_y[p * K + k];
              }
            }
            if (kGrid) {
              sum_x[p] += sx * value;
              sum_y[p] += sy * value;
            }
          }
        }
        if (kGrid) {
          const A* mult_x = taps.mult_x.data();
          const A* mult_y = taps.mult_y.data();
          T* dst_grid = grad_grid + (b * points + p0) * 2;
          for (int64_t p = 0; p < count; ++p) {
            dst_grid[2 * p] = Store<T>(mult_x[p] * sum_x[p]);
            dst_grid[2 * p + 1] = Store<T>(mult_y[p] * sum_y[p]);
          }
        }
      }
      if (kInput) {
        for (int64_t ch = c0; ch < c1; ++ch) {
          const A* src = acc + (ch - c0) * stride;
          T* dst_plane = grad_input + (b * c + ch) * plane;
          for (int64_t i = 0; i < plane; ++i) dst_plane[i] = Store<T>(src[i]);
        }
      }
    };
    ParallelFor(api, context, static_cast<size_t>(n * (kInput ? blocks : chunks)), task);
  }
};

}  // namespace

TypedOps GridSampler2DGradOps() { return MakeTypedOps<GridSampler2DGrad>(); }

}  // namespace rg
