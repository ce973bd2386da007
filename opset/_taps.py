"""Resampling along one axis as taps: for each output coordinate, the input indices it reads and their weights.

Every separable op of the domain is a tap function per resized axis plus one shared contraction
(`separable_backward`): the forward is y = x contracted with M_a along each axis a, where
M_a[o, i] = sum of the weights of output o's taps on input i, so the backward is dy contracted
with M_a^T. A new resampling mode is a new tap function here (and its twins in _separable_body.py and
runtime/src/taps.h), not a new kernel.

The arithmetic of each tap function follows its framework, dtype for dtype, because an index
can move when a product is rounded differently:
- aten (torch CPU): aten/src/ATen/native/UpSample.h (compute_scales_value,
  area_pixel_compute_scale, area_pixel_compute_source_index, guard_index_and_lambda,
  nearest_idx, nearest_exact_idx), UpSampleKernel.cpp (the antialias weights,
  HelperInterpBase::_compute_indices_min_size_weights_aa) and UpSampleBicubic2d.cpp;
- TensorFlow: tensorflow/core/kernels/image/image_resizer_state.h (CalculateResizeScale,
  LegacyScaler, HalfPixelScaler) and resize_*_op.cc;
- onnxruntime's Resize: see _onnx_resize.py.
`opmath` is aten's opmath_t: float32 for the half types and float, float64 for double.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ._common import compute_dtype


@dataclasses.dataclass
class Taps:
    """Output o reads input index[o, k] with weight[o, k]; padding taps have weight 0."""
    input_size: int
    index: np.ndarray   # [out, K] int64 in [0, input_size)
    weight: np.ndarray  # [out, K]

    @property
    def output_size(self) -> int:
        return self.index.shape[0]

    def matrix(self, dtype) -> np.ndarray:
        """M[out, in]: the forward's weight of input i in output o (taps on one index add up)."""
        m = np.zeros((self.output_size, self.input_size), dtype)
        rows = np.broadcast_to(np.arange(self.output_size)[:, None], self.index.shape)
        np.add.at(m, (rows, self.index), self.weight.astype(dtype))
        return m


def taps_from_columns(input_size: int, columns) -> Taps:
    """Taps from a list of K (index [out], weight [out]) pairs."""
    index = np.stack([np.asarray(i, np.int64) for i, _ in columns], axis=1)
    weight = np.stack([np.asarray(w) for _, w in columns], axis=1)
    return Taps(input_size, index, weight)


def separable_backward(grad: np.ndarray, taps: Sequence[Taps | None], input_shape: Sequence[int]) -> np.ndarray:
    """dx = dy contracted with M_a^T along every axis a that has taps (None: an axis the forward kept).

    Accumulates in float32 for the half types and float, float64 for double; rounds once.
    """
    acc = compute_dtype(grad.dtype)
    g = grad.astype(acc)
    for axis, axis_taps in enumerate(taps):
        if axis_taps is None:
            continue
        moved = np.moveaxis(g, axis, -1)
        g = np.moveaxis(moved @ axis_taps.matrix(acc), -1, axis)
    assert list(g.shape) == list(input_shape), (g.shape, input_shape)
    return g.astype(grad.dtype)


# --------------------------------------------------------------------------- aten (torch CPU)

def aten_scale(input_size: int, output_size: int, scale: float, align_corners: bool, opmath) -> np.generic:
    """area_pixel_compute_scale: (in-1)/(out-1) with align_corners (0 for out = 1), else
    compute_scales_value: 1/scale when a scale > 0 is given, else in/out; in opmath."""
    opmath = np.dtype(opmath).type
    if align_corners:
        return opmath(input_size - 1) / opmath(output_size - 1) if output_size > 1 else opmath(0)
    if scale > 0:
        return opmath(1.0 / float(np.float32(scale)))  # the attribute is float32; 1.0 / scale in double, as aten
    return opmath(input_size) / opmath(output_size)


def aten_source_index(ratio, output_size: int, align_corners: bool, cubic: bool, opmath) -> np.ndarray:
    """area_pixel_compute_source_index for every output index, in opmath.

    The linear kernels (aten/src/ATen/native/cpu, built for AVX2 and AVX-512 with FMA contraction)
    compute the half-pixel index as one fused multiply-add, fmaf(ratio, dst + 0.5, -0.5): emulated here
    by the exact float32 product in double, rounded once (CANN's linear kernels fuse it too). The
    bicubic kernel (aten/src/ATen/native, not contracted) rounds the product and the difference apart.
    """
    opmath = np.dtype(opmath).type
    dst = np.arange(output_size).astype(opmath)
    if align_corners:
        return ratio * dst
    if cubic:
        return ratio * (dst + opmath(0.5)) - opmath(0.5)
    src = (np.float64(ratio) * (dst + opmath(0.5)).astype(np.float64) - 0.5).astype(opmath)
    return np.where(src < 0, opmath(0), src)


def _guard_index(src: np.ndarray, input_size: int):
    """guard_index_and_lambda: index min(floorf(src), in - 1) (floorf: rounded to float32 first),
    lambda src - index clamped to [0, 1]."""
    index = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), input_size - 1)
    lam = np.clip(src - index.astype(src.dtype), 0, 1).astype(src.dtype)
    return index, lam


def aten_nearest(input_size: int, output_size: int, scale: float) -> Taps:
    """nearest_idx (upsample_nearest{1,2,3}d): out == in copies, out == 2 in halves the index,
    else min(floorf(dst * scale), in - 1) with the float32 index scale of compute_scales_value."""
    dst = np.arange(output_size)
    if output_size == input_size:
        index = dst
    elif output_size == 2 * input_size:
        index = dst >> 1
    else:
        ratio = aten_scale(input_size, output_size, scale, False, np.float32)
        index = np.minimum(np.floor(dst.astype(np.float32) * ratio).astype(np.int64), input_size - 1)
    return taps_from_columns(input_size, [(index, np.ones(output_size, np.float64))])


def aten_nearest_exact(input_size: int, output_size: int, scale: float) -> Taps:
    """nearest_exact_idx: min(floorf((dst + 0.5) * scale), in - 1); the product is formed in double
    and rounded to float32 by floorf."""
    ratio = aten_scale(input_size, output_size, scale, False, np.float32)
    product = (np.arange(output_size, dtype=np.float64) + 0.5) * np.float64(ratio)
    index = np.minimum(np.floor(product.astype(np.float32)).astype(np.int64), input_size - 1)
    return taps_from_columns(input_size, [(index, np.ones(output_size, np.float64))])


def aten_linear(input_size: int, output_size: int, align_corners: bool, scale: float, opmath) -> Taps:
    """compute_source_index_and_lambda (linear, bilinear, trilinear): out == in copies; else
    index0 = guarded floor, index1 = index0 + 1 below the last input, lambdas 1 - l and l."""
    opmath = np.dtype(opmath).type
    if output_size == input_size:
        dst = np.arange(output_size)
        return taps_from_columns(input_size,
                                 [(dst, np.ones(output_size, opmath)), (dst, np.zeros(output_size, opmath))])
    ratio = aten_scale(input_size, output_size, scale, align_corners, opmath)
    index0, lam1 = _guard_index(aten_source_index(ratio, output_size, align_corners, False, opmath), input_size)
    index1 = index0 + (index0 < input_size - 1)
    return taps_from_columns(input_size, [(index0, opmath(1) - lam1), (index1, lam1)])


def cubic_coefficients(t: np.ndarray, a: float) -> list:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for the fraction t
    (aten get_cubic_upsample_coefficients, TensorFlow's GetCoeffsTable, ORT's GetCubicCoeffs)."""
    a = t.dtype.type(a)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one, two = t.dtype.type(1), t.dtype.type(2)
    return [far(t + one), near(t), near(one - t), far(two - t)]


def aten_cubic(input_size: int, output_size: int, align_corners: bool, scale: float, opmath) -> Taps:
    """upsample_bicubic2d_backward along one axis (its copy of a tensor whose every axis keeps its size is
    cubic_scales'): the source index is not clamped at 0 (cubic=True), the four taps at floor - 1 .. floor + 2
    read the border pixel when outside (upsample_increment_value_bounded). out == in without a scale is a ratio
    of 1, whose taps are a copy: taken as one."""
    opmath = np.dtype(opmath).type
    if output_size == input_size and not scale > 0:
        return taps_from_columns(input_size, [(np.arange(output_size), np.ones(output_size, opmath))])
    ratio = aten_scale(input_size, output_size, scale, align_corners, opmath)
    index, t = _guard_index(aten_source_index(ratio, output_size, align_corners, True, opmath), input_size)
    coefficients = cubic_coefficients(t, -0.75)
    return taps_from_columns(input_size,
                             [(np.clip(index - 1 + k, 0, input_size - 1), coefficients[k]) for k in range(4)])


def _aa_linear_filter(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0).astype(x.dtype)


def _aa_cubic_filter(x):
    """aten's antialias bicubic filter: Keys with a = -0.5 (PIL's)."""
    a = x.dtype.type(-0.5)
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0)).astype(x.dtype)


AA_FILTERS = {"linear": (_aa_linear_filter, 2), "cubic": (_aa_cubic_filter, 4)}


def aten_antialias(input_size: int, output_size: int, align_corners: bool, scale: float, kind: str, opmath) -> Taps:
    """_compute_indices_min_size_weights_aa: a window of the filter's support around each output's
    centre, stretched by the downscale factor when downscaling, weights normalised to sum 1."""
    opmath = np.dtype(opmath).type
    filter_fn, interp_size = AA_FILTERS[kind]
    ratio = aten_scale(input_size, output_size, scale, align_corners, opmath)
    support = opmath(interp_size * 0.5) * ratio if ratio >= 1 else opmath(interp_size * 0.5)
    max_size = int(np.ceil(support)) * 2 + 1
    invscale = opmath(1.0) / ratio if ratio >= 1 else opmath(1.0)
    index = np.zeros((output_size, max_size), np.int64)
    weight = np.zeros((output_size, max_size), opmath)
    for o in range(output_size):
        center = ratio * (opmath(o) + opmath(0.5))
        xmin = max(int(center - support + opmath(0.5)), 0)
        xsize = max(0, min(min(int(center + support + opmath(0.5)), input_size) - xmin, max_size))
        j = np.arange(xsize)
        w = filter_fn((j.astype(opmath) + opmath(xmin) - center + opmath(0.5)) * invscale)
        total = opmath(0)
        for value in w:  # aten sums in order
            total += value
        if total != 0:
            w = w / total
        index[o, :xsize] = xmin + j
        weight[o, :xsize] = w
    return Taps(input_size, index, weight)


# --------------------------------------------------------------------------- TensorFlow / CANN Resize*V2

def tf_scale(input_size: int, output_size: int, scale: float, align_corners: bool) -> np.float32:
    """The float32 index scale of CANN's Resize*V2Grad kernels: (in-1)/(out-1) with align_corners (0 for one
    output), else 1 / scale when a forward scale > 0 is given, else in/out (TF CalculateResizeScale)."""
    if align_corners:
        return np.float32(input_size - 1) / np.float32(output_size - 1) if output_size > 1 else np.float32(0)
    if scale > 0:
        return np.float32(1.0) / np.float32(scale)
    return np.float32(input_size) / np.float32(output_size)


def tf_nearest(input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool, scale: float) -> Taps:
    """TensorFlow ResizeNearestNeighborGrad (CANN ResizeNearestNeighborV2Grad): per output index i, in float32,
    min(roundf(i * s), in - 1) with align_corners (round half away from zero), max(0, min(floorf((i + 0.5) * s),
    in - 1)) with half_pixel_centers (no -0.5: the floor does it), else min(floorf(i * s), in - 1)."""
    s = tf_scale(input_size, output_size, scale, align_corners)
    i = np.arange(output_size).astype(np.float32)
    if align_corners:  # roundf: half away from zero (the fraction of a float is exact)
        product = i * s
        index = np.floor(product) + (product - np.floor(product) >= np.float32(0.5))
    elif half_pixel_centers:
        index = np.floor((i + np.float32(0.5)) * s)
    else:
        index = np.floor(i * s)
    index = np.clip(index.astype(np.int64), 0, input_size - 1)
    return taps_from_columns(input_size, [(index, np.ones(output_size, np.float64))])


def tf_legacy_linear(input_size: int, output_size: int, scale: float, opmath) -> Taps:
    """TensorFlow ResizeBilinearGrad with both flags off (LegacyScaler): float32 src = i * s, top floor(src),
    bottom min(ceil(src), in - 1), lerp src - floor(src). The top index is clamped too (TF leaves it
    unclamped; only a given scale could reach it). The scale is 1 / scale in double, rounded to float32."""
    if scale > 0:
        ratio = np.float32(1.0 / float(np.float32(scale)))
    else:
        ratio = np.float32(input_size) / np.float32(output_size)
    src = np.arange(output_size).astype(np.float32) * ratio
    low = np.floor(src)
    top = np.minimum(low.astype(np.int64), input_size - 1)
    bottom = np.minimum(np.ceil(src).astype(np.int64), input_size - 1)
    lerp = (src - low).astype(opmath)
    return taps_from_columns(input_size, [(top, 1 - lerp), (bottom, lerp)])


# --------------------------------------------------------------------------- the kinds

def _tf_linear(i, o, s, ac, hp, m):
    """ResizeBilinearV2Grad: aten's linear taps for align_corners and half-pixel, TensorFlow's legacy otherwise."""
    return aten_linear(i, o, ac, s, m) if (ac or hp) else tf_legacy_linear(i, o, s, m)

# Every tap function of the domain, called as (in, out, scale, align_corners, half_pixel_centers, opmath). A kind's
# position is its number in the kernels (runtime/src/taps.h TapKind); the function bodies' twins are
# _separable_body.MATRICES.
def cubic_scales(input_sizes, output_sizes, scales) -> list:
    """upsample_bicubic2d_backward copies a tensor whose every spatial axis keeps its size, whatever the scales
    (aten/src/ATen/native/UpSampleBicubic2d.cpp, "Special case: input/output same size, just copy"): no scale
    then, so each axis's taps are a copy; otherwise every axis takes its scale, one that keeps its size too."""
    if all(int(i) == int(o) for i, o in zip(input_sizes, output_sizes, strict=True)):
        return [0.0] * len(scales)
    return list(scales)


TAP_KINDS = {
    "nearest": lambda i, o, s, ac, hp, m: aten_nearest(i, o, s),
    "nearest_exact": lambda i, o, s, ac, hp, m: aten_nearest_exact(i, o, s),
    "linear": lambda i, o, s, ac, hp, m: aten_linear(i, o, ac, s, m),
    "cubic": lambda i, o, s, ac, hp, m: aten_cubic(i, o, ac, s, m),
    "antialias_linear": lambda i, o, s, ac, hp, m: aten_antialias(i, o, ac, s, "linear", m),
    "antialias_cubic": lambda i, o, s, ac, hp, m: aten_antialias(i, o, ac, s, "cubic", m),
    "tf_nearest": lambda i, o, s, ac, hp, m: tf_nearest(i, o, ac, hp, s),
    "tf_linear": _tf_linear,
}


# What a kind's op does with the scales of all its axes before each axis takes its taps (as they are elsewhere).
AXES_SCALES = {"cubic": cubic_scales}


def axes_taps(kind: str, input_sizes, output_sizes, scales, align_corners: bool, half_pixel_centers: bool,
              opmath) -> list:
    """The taps of every resized axis of an op of tap kind `kind` (a key of TAP_KINDS)."""
    scales = AXES_SCALES.get(kind, lambda i, o, s: list(s))(input_sizes, output_sizes, scales)
    return [TAP_KINDS[kind](i, o, s, align_corners, half_pixel_centers, opmath)
            for i, o, s in zip(input_sizes, output_sizes, scales, strict=True)]
