// The tap functions (twins of opset/_taps.py; see there for the sources each follows) and the inversion.
//
// Built with -ffp-contract=off: each product and sum rounds where the framework rounds it, and
// std::fma marks the one place aten's kernels fuse (the linear half-pixel source index).
#include "taps.h"

#include <algorithm>
#include <cmath>

namespace rg {

template <typename A>
void TapMatrix<A>::Invert() {
  inverse_start.assign(input_size + 1, 0);
  for (int64_t k = 0; k < static_cast<int64_t>(index.size()); ++k)
    if (weight[k] != A(0)) ++inverse_start[index[k] + 1];
  for (int64_t i = 0; i < input_size; ++i) inverse_start[i + 1] += inverse_start[i];
  source.resize(inverse_start[input_size]);
  inverse_weight.resize(inverse_start[input_size]);
  std::vector<int64_t> next(inverse_start.begin(), inverse_start.end() - 1);
  for (int64_t o = 0; o < output_size; ++o) {  // outputs ascending, so each input's list is ascending
    for (int64_t k = start[o]; k < start[o + 1]; ++k) {
      if (weight[k] == A(0)) continue;
      const int64_t slot = next[index[k]]++;
      source[slot] = o;
      inverse_weight[slot] = weight[k];
    }
  }
}

template <typename A>
bool TapMatrix<A>::IsIdentity() const {
  if (input_size != output_size) return false;
  for (int64_t o = 0; o < output_size; ++o) {
    for (int64_t k = start[o]; k < start[o + 1]; ++k)
      if (weight[k] != A(0) && (index[k] != o || weight[k] != A(1) || k != start[o])) return false;
    if (start[o + 1] == start[o] || weight[start[o]] != A(1)) return false;
  }
  return true;
}

namespace {

// min(floor(x), size - 1) for a float coordinate that may be negative (aten's guard keeps negatives).
inline int64_t FloorBelow(float x, int64_t size) { return std::min(static_cast<int64_t>(std::floor(x)), size - 1); }

// An index a coordinate floors to, clamped to [0, size - 1] without casting inf or NaN.
inline int64_t FloorClamped(double coordinate, int64_t size) {
  if (!(coordinate > 0)) return 0;
  if (coordinate >= static_cast<double>(size - 1)) return size - 1;
  return static_cast<int64_t>(std::floor(coordinate));
}

// aten area_pixel_compute_scale / compute_scales_value, in opmath A.
template <typename A>
A AtenScale(int64_t in, int64_t out, float scale, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  if (scale > 0) return static_cast<A>(1.0 / static_cast<double>(scale));
  return static_cast<A>(in) / static_cast<A>(out);
}

template <typename A>
void Identity(TapMatrix<A>* taps) {
  for (int64_t o = 0; o < taps->output_size; ++o) taps->Add(o, A(1)), taps->NextOutput();
}

template <typename A>
void Nearest(TapMatrix<A>* taps, float scale) {
  const int64_t in = taps->input_size, out = taps->output_size;
  const float ratio = AtenScale<float>(in, out, scale, false);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = o;
    if (out == 2 * in) i = o >> 1;
    else if (out != in) i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * ratio)), in - 1);
    taps->Add(i, A(1)), taps->NextOutput();
  }
}

template <typename A>
void NearestExact(TapMatrix<A>* taps, float scale) {
  const int64_t in = taps->input_size, out = taps->output_size;
  const float ratio = AtenScale<float>(in, out, scale, false);
  for (int64_t o = 0; o < out; ++o) {
    // floorf((o + 0.5) * scale): the product in double, rounded to float by floorf's argument
    const float product = static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(ratio));
    taps->Add(FloorClamped(product, in), A(1)), taps->NextOutput();
  }
}

template <typename A>
void Linear(TapMatrix<A>* taps, float scale, bool align_corners) {
  const int64_t in = taps->input_size, out = taps->output_size;
  if (in == out) return Identity(taps);  // aten copies when the sizes agree, whatever the scale
  const A ratio = AtenScale<A>(in, out, scale, align_corners);
  for (int64_t o = 0; o < out; ++o) {
    A src = align_corners ? ratio * static_cast<A>(o) : std::fma(ratio, static_cast<A>(o) + A(0.5), A(-0.5));
    if (!align_corners && src < 0) src = 0;
    const int64_t top = FloorClamped(std::floor(static_cast<float>(src)), in);  // floorf, as aten
    const A lambda = std::min(std::max(src - static_cast<A>(top), A(0)), A(1));
    taps->Add(top, A(1) - lambda);
    taps->Add(top + (top < in - 1 ? 1 : 0), lambda);
    taps->NextOutput();
  }
}

template <typename A>
void Cubic(TapMatrix<A>* taps, float scale, bool align_corners) {
  const int64_t in = taps->input_size, out = taps->output_size;
  if (in == out && !(scale > 0)) return Identity(taps);  // a ratio of 1: the taps of a copy
  const A ratio = AtenScale<A>(in, out, scale, align_corners);
  for (int64_t o = 0; o < out; ++o) {
    const A src = align_corners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
    const int64_t base = FloorBelow(static_cast<float>(src), in);
    const A t = std::min(std::max(src - static_cast<A>(base), A(0)), A(1));
    A w[4];
    CubicWeights<A>(t, A(-0.75), w);
    for (int k = 0; k < 4; ++k) taps->Add(std::min(std::max(base - 1 + k, int64_t{0}), in - 1), w[k]);
    taps->NextOutput();
  }
}

// The antialias windows' filter at a signed distance x: the triangle, or Keys' cubic with parameter a.
template <typename A>
A AntialiasFilter(A x, bool cubic, A a) {
  if (cubic) return KeysFilter(x, a);
  x = std::fabs(x);
  return x < 1 ? 1 - x : A(0);
}

template <typename A>
void Antialias(TapMatrix<A>* taps, float scale, bool align_corners, bool cubic) {
  const int64_t in = taps->input_size, out = taps->output_size;
  const A ratio = AtenScale<A>(in, out, scale, align_corners);
  const A half_size = cubic ? A(2) : A(1);
  const A support = ratio >= A(1) ? half_size * ratio : half_size;
  const int64_t max_size = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const A invscale = ratio >= A(1) ? A(1) / ratio : A(1);
  std::vector<A> w(max_size);
  for (int64_t o = 0; o < out; ++o) {
    const A center = ratio * (static_cast<A>(o) + A(0.5));
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + A(0.5)), int64_t{0});
    const int64_t xsize =
        std::clamp(std::min(static_cast<int64_t>(center + support + A(0.5)), in) - xmin, int64_t{0}, max_size);
    A total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = AntialiasFilter<A>((static_cast<A>(j + xmin) - center + A(0.5)) * invscale, cubic, A(-0.5));
      total += w[j];
    }
    for (int64_t j = 0; j < xsize; ++j) taps->Add(xmin + j, total != A(0) ? w[j] / total : w[j]);
    taps->NextOutput();
  }
}

float TfScale(int64_t in, int64_t out, float scale, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
  if (scale > 0) return 1.f / scale;
  return static_cast<float>(in) / static_cast<float>(out);
}

template <typename A>
void TfNearest(TapMatrix<A>* taps, const TapOptions& options) {
  const int64_t in = taps->input_size, out = taps->output_size;
  const float s = TfScale(in, out, options.scale, options.align_corners);
  for (int64_t o = 0; o < out; ++o) {
    const float i = static_cast<float>(o);
    const float at = options.align_corners ? std::round(i * s)  // roundf: half away from zero
                     : options.half_pixel_centers ? std::floor((i + 0.5f) * s) : std::floor(i * s);
    taps->Add(FloorClamped(at, in), A(1)), taps->NextOutput();
  }
}

template <typename A>
void TfLegacyLinear(TapMatrix<A>* taps, float scale) {
  const int64_t in = taps->input_size, out = taps->output_size;
  const float ratio = scale > 0 ? static_cast<float>(1.0 / static_cast<double>(scale))
                                : static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    const float src = static_cast<float>(o) * ratio;
    const float low = std::floor(src);
    const A lerp = static_cast<A>(src - low);
    taps->Add(FloorClamped(low, in), A(1) - lerp);  // TF leaves the top index unclamped; a given scale could overrun
    taps->Add(FloorClamped(std::ceil(src), in), lerp);
    taps->NextOutput();
  }
}

// --------------------------------------------------------------------------- ONNX Resize (onnxruntime)

// GetOriginalCoordinateFromResizedCoordinate (upsamplebase.h), float32; two modes end in double as there.
float OriginalCoordinate(const ResizeMode& mode, const ResizeAxis& axis, int64_t o) {
  const float x = static_cast<float>(o), s = axis.scale;
  const float big_r = static_cast<float>(axis.output_size), big_l = static_cast<float>(axis.input_size);
  switch (mode.coordinate) {
    case ResizeMode::kAsymmetric: return x / s;
    case ResizeMode::kPytorchHalfPixel: return axis.output_size > 1 ? (x + 0.5f) / s - 0.5f : 0.f;
    case ResizeMode::kTfHalfPixelForNn: return (x + 0.5f) / s;
    case ResizeMode::kAlignCorners: return axis.output_size == 1 ? 0.f : x * (big_l - 1) / (big_r - 1);
    case ResizeMode::kTfCropAndResize:
      if (axis.output_size > 1)
        return axis.roi_start * (big_l - 1) + (x * (axis.roi_end - axis.roi_start) * (big_l - 1)) / (big_r - 1);
      return static_cast<float>(0.5 * static_cast<double>(axis.roi_start + axis.roi_end) *
                                static_cast<double>(big_l - 1));
    case ResizeMode::kHalfPixelSymmetric: {
      const float output_width = s * big_l;
      const float adjustment = big_r / output_width;
      const float center = big_l / 2;
      const float offset = center * (1 - adjustment);
      return static_cast<float>(static_cast<double>(offset) + (static_cast<double>(x) + 0.5) / static_cast<double>(s) -
                                0.5);
    }
    case ResizeMode::kHalfPixel: break;
  }
  return (x + 0.5f) / s - 0.5f;
}

// GetNearestPixelFromOriginal; round_prefer_* treat a fraction within 1e-6 of one half as a tie (onnxruntime 1.32).
int64_t NearestPixel(float x, ResizeMode::Rounding rounding) {
  const float floor = std::floor(x);
  if (rounding == ResizeMode::kFloor) return static_cast<int64_t>(floor);
  if (rounding == ResizeMode::kCeil) return static_cast<int64_t>(std::ceil(x));
  if (std::fabs((x - floor) - 0.5f) <= 1e-6f)
    return static_cast<int64_t>(floor) + (rounding == ResizeMode::kRoundPreferCeil);
  return static_cast<int64_t>(std::round(x));
}

}  // namespace

bool IsIdentityAxis(const ResizeMode& mode, const ResizeAxis& axis) {
  return mode.antialias ? axis.output_size == axis.input_size : axis.scale == 1.f;
}

template <typename A>
TapMatrix<A> MakeResizeTaps(const ResizeMode& mode, const ResizeAxis& axis) {
  const int64_t in = axis.input_size, out = axis.output_size;
  TapMatrix<A> taps(in, out);
  const float last = static_cast<float>(in - 1);
  // SetupUpsampleFilterAntiAlias (upsample_antialias.h): the window and filter of this axis
  const bool cubic = mode.mode == ResizeMode::kCubic;
  const float inverse = 1.f / axis.scale, size = cubic ? 4.f : 2.f;
  const float support = inverse >= 1.f ? (size * 0.5f) * inverse : size * 0.5f;
  const int64_t window = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const float inv_scale = inverse >= 1.f ? 1.f / inverse : 1.f;
  std::vector<float> w(window);
  for (int64_t o = 0; o < out; ++o) {
    const float c = OriginalCoordinate(mode, axis, o);
    if (mode.coordinate == ResizeMode::kTfCropAndResize && (c < 0 || c > last)) {  // extrapolated: no gradient
      taps.NextOutput();
      continue;
    }
    if (mode.antialias) {
      const float center = 0.5f + c;
      int64_t lo = static_cast<int64_t>(std::floor(center - support + 0.5f));
      int64_t hi = static_cast<int64_t>(std::floor(center + support + 0.5f));
      hi = lo + std::clamp(hi - lo, int64_t{0}, window);
      const int64_t lo_cut = std::clamp(lo, int64_t{0}, in), hi_cut = std::clamp(hi, int64_t{0}, in);
      if (mode.exclude_outside) lo = lo_cut, hi = hi_cut;
      if (lo_cut < hi_cut) {  // a window wholly outside reads nothing
        float total = 0;
        for (int64_t j = lo; j < hi; ++j) {
          w[j - lo] = AntialiasFilter<float>((static_cast<float>(j) - center + 0.5f) * inv_scale, cubic,
                                            mode.cubic_coeff_a);
          total += w[j - lo];
        }
        // taps outside fold onto the edge pixel in onnxruntime's order: the edge weight first, then k ascending
        float* kept = w.data() + (lo_cut - lo);
        for (int64_t k = 0; k < lo_cut - lo; ++k) kept[0] += w[k];
        for (int64_t k = hi_cut - lo; k < hi - lo; ++k) kept[hi_cut - lo_cut - 1] += w[k];
        const float normaliser = total == 0 ? 1.f : 1.f / total;
        for (int64_t j = lo_cut; j < hi_cut; ++j) taps.Add(j, static_cast<A>(kept[j - lo_cut] * normaliser));
      }
    } else if (mode.mode == ResizeMode::kNearest) {
      taps.Add(std::clamp(NearestPixel(c, mode.rounding), int64_t{0}, in - 1), A(1));
    } else if (mode.mode == ResizeMode::kLinear) {  // SetupUpsampleBilinear
      const float x = std::max(0.f, std::min(c, last));
      const int64_t x1 = std::min(static_cast<int64_t>(x), in - 1), x2 = std::min(x1 + 1, in - 1);
      float d1 = std::fabs(x - static_cast<float>(x1)), d2 = std::fabs(x - static_cast<float>(x2));
      if (x1 == x2) d1 = d2 = 0.5f;
      taps.Add(x1, static_cast<A>(d2));
      taps.Add(x2, static_cast<A>(d1));
    } else {  // ResizeBiCubic: taps floor - 1 .. + 2 clamped to the edge; exclude_outside renormalises
      const float base = std::floor(c);
      const float s = std::fabs(c - base), a = mode.cubic_coeff_a;
      float coeffs[4];
      CubicWeights(s, a, coeffs);
      const int64_t first = static_cast<int64_t>(base) - 1;
      if (mode.exclude_outside) {
        float sum = 0;
        for (int k = 0; k < 4; ++k) {
          if (first + k < 0 || first + k >= in) coeffs[k] = 0;
          sum += coeffs[k];
        }
        for (float& coeff : coeffs) coeff /= sum;
      }
      // taps clamped onto one index add up in float32 in tap order, as onnxruntime's forward sums them
      int64_t index[4];
      int count = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = std::clamp(first + k, int64_t{0}, in - 1);
        if (count > 0 && index[count - 1] == i) coeffs[count - 1] += coeffs[k];
        else index[count] = i, coeffs[count++] = coeffs[k];
      }
      for (int k = 0; k < count; ++k) taps.Add(index[k], static_cast<A>(coeffs[k]));
    }
    taps.NextOutput();
  }
  taps.Invert();
  return taps;
}

template <typename A>
TapMatrix<A> MakeTaps(TapKind kind, int64_t input_size, int64_t output_size, const TapOptions& options) {
  TapMatrix<A> taps(input_size, output_size);
  switch (kind) {
    case TapKind::kNearest: Nearest(&taps, options.scale); break;
    case TapKind::kNearestExact: NearestExact(&taps, options.scale); break;
    case TapKind::kLinear: Linear(&taps, options.scale, options.align_corners); break;
    case TapKind::kCubic: Cubic(&taps, options.scale, options.align_corners); break;
    case TapKind::kAntialiasLinear: Antialias(&taps, options.scale, options.align_corners, false); break;
    case TapKind::kAntialiasCubic: Antialias(&taps, options.scale, options.align_corners, true); break;
    case TapKind::kTfNearest: TfNearest(&taps, options); break;
    case TapKind::kTfLinear:
      if (options.align_corners || options.half_pixel_centers) Linear(&taps, options.scale, options.align_corners);
      else TfLegacyLinear(&taps, options.scale);
      break;
  }
  taps.Invert();
  return taps;
}

template struct TapMatrix<float>;
template struct TapMatrix<double>;
template TapMatrix<float> MakeTaps<float>(TapKind, int64_t, int64_t, const TapOptions&);
template TapMatrix<double> MakeTaps<double>(TapKind, int64_t, int64_t, const TapOptions&);
template TapMatrix<float> MakeResizeTaps<float>(const ResizeMode&, const ResizeAxis&);
template TapMatrix<double> MakeResizeTaps<double>(const ResizeMode&, const ResizeAxis&);

}  // namespace rg
