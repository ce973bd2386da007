// Resampling along one axis as taps, and the tap functions of the domain (the twins of opset/_taps.py).
//
// For each output coordinate o along an axis, the forward reads a short list of (input index,
// weight) taps: 1 for nearest, 2 for linear, 4 for cubic, a window for antialias. Every
// separable op is a tap function per resized axis plus the one shared backward in separable.h,
// which needs the taps inverted: for each input index, the outputs that read it. A new
// resampling mode is a new tap function here, not a new kernel.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace rg {

// The taps of one axis as a sparse matrix [output][input], stored both ways: by output (the forward: the taps each
// output reads) and by input (the backward: the outputs each input gives to).
template <typename A>
struct TapMatrix {
  int64_t input_size = 0;
  int64_t output_size = 0;
  // Forward form, filled by Add in output order: output o reads index[k] with weight[k] for k in
  // [start[o], start[o + 1]).
  std::vector<int64_t> start{0}, index;
  std::vector<A> weight;
  // Inverted form (Invert): input i receives source[k] with inverse_weight[k] for k in [inverse_start[i],
  // inverse_start[i + 1]), outputs ascending and, for one output, its taps in order. Zero weights are dropped.
  std::vector<int64_t> inverse_start, source;
  std::vector<A> inverse_weight;

  TapMatrix(int64_t in, int64_t out) : input_size(in), output_size(out) { start.reserve(out + 1); }

  // The next tap of the current output.
  void Add(int64_t input, A w) { index.push_back(input), weight.push_back(w); }
  // Closes the current output; the next Add starts output start.size() - 1.
  void NextOutput() { start.push_back(static_cast<int64_t>(index.size())); }
  // Builds the inverted form; every output must be closed.
  void Invert();
  // Every output o reads input o alone with weight 1 (an axis the forward did not change).
  bool IsIdentity() const;
};

// The tap functions, one per kind; the numbering is that of opset/_taps.py TAP_KINDS (the onnxscript
// functions and the kernels take the kind as a number). `scale` is the forward scale (output / input) of
// the op's attribute, 0 when not given; A is aten's opmath type (float, or double for double tensors).
enum class TapKind : int {
  kNearest = 0,          // aten nearest_idx
  kNearestExact = 1,     // aten nearest_exact_idx
  kLinear = 2,           // aten compute_source_index_and_lambda (linear, bilinear, trilinear)
  kCubic = 3,            // aten upsample_bicubic2d_backward (border-clamped taps, A = -0.75)
  kAntialiasLinear = 4,  // aten _compute_indices_min_size_weights_aa, triangle filter
  kAntialiasCubic = 5,   // the same with Keys' cubic, a = -0.5
  kTfNearest = 6,        // TensorFlow ResizeNearestNeighborGrad (CANN ResizeNearestNeighborV2Grad)
  kTfLinear = 7,         // ResizeBilinearV2Grad: aten linear for align_corners / half-pixel, TF legacy otherwise
};

struct TapOptions {
  float scale = 0.f;
  bool align_corners = false;
  bool half_pixel_centers = false;
};

template <typename A>
TapMatrix<A> MakeTaps(TapKind kind, int64_t input_size, int64_t output_size, const TapOptions& options);

// ONNX Resize as onnxruntime's CPU kernel computes it (the twin of opset/_onnx_resize.py; every coordinate,
// scale and weight in float32 there, whatever the tensor dtype).
struct ResizeMode {
  enum Mode { kNearest, kLinear, kCubic } mode = kNearest;
  enum Coordinate {
    kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize
  } coordinate = kHalfPixel;
  enum Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil } rounding = kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;
};

// One axis of a Resize: lengths, the scale the coordinate transform uses, the roi (tf_crop_and_resize).
struct ResizeAxis {
  int64_t input_size = 0, output_size = 0;
  float scale = 1.f, roi_start = 0.f, roi_end = 1.f;
};

// An axis Resize passes through: scale exactly 1 (antialias: the length kept).
bool IsIdentityAxis(const ResizeMode& mode, const ResizeAxis& axis);

// The taps of one axis; an output Resize extrapolates (tf_crop_and_resize, outside the roi) has none.
template <typename A>
TapMatrix<A> MakeResizeTaps(const ResizeMode& mode, const ResizeAxis& axis);

// Keys' cubic convolution kernel W with parameter a (-0.75: aten's bicubic and onnxruntime's default cubic_coeff_a;
// -0.5: aten's antialias), the one definition of it in the C++ (the tap functions here, the grid samplers'
// grid_coordinates.h). Every caller's framework evaluates it with these operations in this order.
//
// W(x) for 0 <= x <= 1 and for 1 <= x <= 2 (aten cubic_convolution1 / cubic_convolution2, onnxruntime
// GetCubicCoeffs).
template <typename A>
inline A KeysNear(A x, A a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
template <typename A>
inline A KeysFar(A x, A a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

// The weights of the taps at -1, 0, 1, 2 for the fraction t in [0, 1] (aten get_cubic_upsample_coefficients,
// onnxruntime GetCubicCoeffs).
template <typename A>
inline void CubicWeights(A t, A a, A out[4]) {
  out[0] = KeysFar(t + 1, a);
  out[1] = KeysNear(t, a);
  out[2] = KeysNear(1 - t, a);
  out[3] = KeysFar(2 - t, a);
}

// W as a filter of a signed distance, 0 from 2 on: the antialias windows (aten's aa_filter, onnxruntime's
// antialias cubic filter). Both factor a out of the outer piece, which rounds differently from KeysFar.
template <typename A>
inline A KeysFilter(A x, A a) {
  x = std::fabs(x);
  if (x < 1) return KeysNear(x, a);
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return A(0);
}

}  // namespace rg
