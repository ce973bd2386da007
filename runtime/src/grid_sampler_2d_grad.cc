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
#include <vector>

#include "kernel_common.h"
#include "kernels.h"

namespace rg {
namespace {

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
template <typename A>
A Reflect(A coord, int64_t twice_low, int64_t twice_high, A* grad) {
  if (twice_low == twice_high) { *grad = 0; return 0; }
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

// The taps of one axis for one grid coordinate.
template <typename A>
struct AxisTaps {
  int count = 0;
  int64_t index[4];  // -1: outside the image
  A weight[4];
  A slope[4];        // d weight / d pixel coordinate
  A mult = 0;        // d pixel coordinate / d grid coordinate
};

template <typename A>
void ComputeAxisTaps(A grid_coord, int64_t size, Interpolation mode, Padding padding, bool align_corners, AxisTaps<A>* t) {
  A pixel = Unnormalize(grid_coord, size, align_corners, &t->mult);
  if (mode == Interpolation::kBicubic) {
    if (!std::isfinite(pixel)) { t->count = 0; return; }  // a non-finite point reads nothing
    const A base = std::floor(pixel);
    A grads[4], ignored;
    Cubic(pixel - base, t->weight, grads);
    t->count = 4;
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
    t->count = 1;
    t->index[0] = PixelIndex(std::nearbyint(pixel), size);  // round half to even
    t->weight[0] = 1;
    t->slope[0] = 0;
    return;
  }
  const A low = std::floor(pixel), high = low + 1;
  t->count = 2;
  t->index[0] = PixelIndex(low, size);
  t->index[1] = PixelIndex(high, size);
  t->weight[0] = high - pixel;
  t->weight[1] = pixel - low;
  t->slope[0] = -1;
  t->slope[1] = 1;
}

// One tap of a grid point inside the image: flat pixel index, weight, d weight / d x, d weight / d y.
template <typename A>
struct Tap {
  int64_t flat;
  A weight, slope_x, slope_y;
};

// The taps inside the image of every point of one output row, and each point's d pixel / d grid.
template <typename A>
struct RowTaps {
  std::vector<Tap<A>> taps;
  std::vector<int64_t> start;  // taps of point p: [start[p], start[p + 1])
  std::vector<A> mult_x, mult_y;
};

template <typename T>
void ComputeRowTaps(const T* grid_row, int64_t width_out, int64_t h_in, int64_t w_in, Interpolation mode, Padding padding,
                    bool align_corners, RowTaps<AccT<T>>* row) {
  using A = AccT<T>;
  row->taps.clear();
  row->start.resize(width_out + 1);
  row->mult_x.resize(width_out);
  row->mult_y.resize(width_out);
  AxisTaps<A> tx, ty;
  for (int64_t p = 0; p < width_out; ++p) {
    row->start[p] = static_cast<int64_t>(row->taps.size());
    ComputeAxisTaps(Load<A>(grid_row[2 * p]), w_in, mode, padding, align_corners, &tx);
    ComputeAxisTaps(Load<A>(grid_row[2 * p + 1]), h_in, mode, padding, align_corners, &ty);
    row->mult_x[p] = tx.mult;
    row->mult_y[p] = ty.mult;
    // aten's tap order: bilinear nw, ne, sw, se (y outer); bicubic x outer, y inner.
    const bool x_outer = mode == Interpolation::kBicubic;
    const int outer = x_outer ? tx.count : ty.count, inner = x_outer ? ty.count : tx.count;
    for (int a = 0; a < outer; ++a) {
      for (int b = 0; b < inner; ++b) {
        const int i = x_outer ? a : b, j = x_outer ? b : a;
        if (tx.index[i] < 0 || ty.index[j] < 0) continue;
        row->taps.push_back({ty.index[j] * w_in + tx.index[i], tx.weight[i] * ty.weight[j], tx.slope[i] * ty.weight[j],
                             tx.weight[i] * ty.slope[j]});
      }
    }
  }
  row->start[width_out] = static_cast<int64_t>(row->taps.size());
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
      if (grad_input) ScatterInputGrad<T>(context, go, coords, input.dims, grid.dims, grad_input);
      if (grad_grid) GatherGridGrad<T>(context, go, image, coords, input.dims, grid.dims, grad_grid);
    });
  }

  template <typename T>
  void ScatterInputGrad(OrtKernelContext* context, const T* go, const T* coords, const std::vector<int64_t>& in_dims,
                        const std::vector<int64_t>& grid_dims, T* grad_input) const {
    using A = AccT<T>;
    const int64_t n = in_dims[0], c = in_dims[1], h_in = in_dims[2], w_in = in_dims[3];
    const int64_t h_out = grid_dims[1], w_out = grid_dims[2], plane = h_in * w_in, points = h_out * w_out;
    // Channel blocks: enough tasks to spread over the pool, while sharing each row's taps among the block.
    const int64_t block = std::max<int64_t>(1, std::min<int64_t>(c, n * c / 32));
    const int64_t blocks = (c + block - 1) / block;
    auto task = [&](size_t index) {
      thread_local RowTaps<A> row;
      thread_local std::vector<A> half_acc;  // float32 accumulation planes for the half types
      const int64_t b = static_cast<int64_t>(index) / blocks;
      const int64_t c0 = (static_cast<int64_t>(index) % blocks) * block, c1 = std::min(c, c0 + block);
      A* acc;
      if constexpr (std::is_same_v<T, A>) {
        acc = grad_input + (b * c + c0) * plane;
      } else {
        half_acc.resize((c1 - c0) * plane);
        acc = half_acc.data();
      }
      std::fill(acc, acc + (c1 - c0) * plane, A(0));
      for (int64_t y = 0; y < h_out; ++y) {
        ComputeRowTaps<T>(coords + (b * points + y * w_out) * 2, w_out, h_in, w_in, mode, padding, align_corners, &row);
        const Tap<A>* taps = row.taps.data();
        const int64_t* start = row.start.data();
        for (int64_t ch = c0; ch < c1; ++ch) {
          const T* g = go + (b * c + ch) * points + y * w_out;
          A* dst = acc + (ch - c0) * plane;
          for (int64_t p = 0; p < w_out; ++p) {
            const A value = Load<A>(g[p]);
            for (int64_t k = start[p]; k < start[p + 1]; ++k) dst[taps[k].flat] += taps[k].weight * value;
          }
        }
      }
      if constexpr (!std::is_same_v<T, A>) {
        T* out = grad_input + (b * c + c0) * plane;
        for (int64_t i = 0; i < (c1 - c0) * plane; ++i) out[i] = Store<T>(acc[i]);
      }
    };
    ParallelFor(api, context, static_cast<size_t>(n * blocks), task);
  }

  template <typename T>
  void GatherGridGrad(OrtKernelContext* context, const T* go, const T* image, const T* coords,
                      const std::vector<int64_t>& in_dims, const std::vector<int64_t>& grid_dims, T* grad_grid) const {
    using A = AccT<T>;
    const int64_t n = in_dims[0], c = in_dims[1], h_in = in_dims[2], w_in = in_dims[3];
    const int64_t h_out = grid_dims[1], w_out = grid_dims[2], plane = h_in * w_in, points = h_out * w_out;
    if (mode == Interpolation::kNearest) {  // piecewise constant: the grid gradient is zero
      std::fill(grad_grid, grad_grid + n * points * 2, Store<T>(A(0)));
      return;
    }
    auto task = [&](size_t index) {
      thread_local RowTaps<A> row;
      thread_local std::vector<A> gx, gy;
      const int64_t b = static_cast<int64_t>(index) / h_out, y = static_cast<int64_t>(index) % h_out;
      const int64_t offset = b * points + y * w_out;
      ComputeRowTaps<T>(coords + offset * 2, w_out, h_in, w_in, mode, padding, align_corners, &row);
      gx.assign(w_out, A(0));
      gy.assign(w_out, A(0));
      const Tap<A>* taps = row.taps.data();
      const int64_t* start = row.start.data();
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* g = go + (b * c + ch) * points + y * w_out;
        const T* src = image + (b * c + ch) * plane;
        for (int64_t p = 0; p < w_out; ++p) {
          const A value = Load<A>(g[p]);
          A sx = gx[p], sy = gy[p];
          for (int64_t k = start[p]; k < start[p + 1]; ++k) {
            const A pixel = Load<A>(src[taps[k].flat]);
            sx += pixel * taps[k].slope_x * value;
            sy += pixel * taps[k].slope_y * value;
          }
          gx[p] = sx;
          gy[p] = sy;
        }
      }
      T* out = grad_grid + offset * 2;
      for (int64_t p = 0; p < w_out; ++p) {
        out[2 * p] = Store<T>(row.mult_x[p] * gx[p]);
        out[2 * p + 1] = Store<T>(row.mult_y[p] * gy[p]);
      }
    };
    ParallelFor(api, context, static_cast<size_t>(n * h_out), task);
  }
};

}  // namespace

TypedOps GridSampler2DGradOps() { return MakeTypedOps<GridSampler2DGrad>(); }

}  // namespace rg
