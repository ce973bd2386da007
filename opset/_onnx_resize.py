"""ONNX Resize as onnxruntime's CPU kernel computes it: the per-axis plan and the tap functions.

Read from onnxruntime's onnxruntime/core/providers/cpu/tensor/upsamplebase.h (ComputeOutputShape,
ParseScalesData, ParseSizesData, AdjustOutputSizeAsPolicy, ComputeROIWithAxes,
GetOriginalCoordinateFromResizedCoordinate, GetNearestPixelFromOriginal), upsample.cc
(UpsampleNearestSetupInputMappings, ResizeBiCubic, GetCubicCoeffs), upsample.h
(SetupUpsampleBilinear) and upsample_antialias.h (SetupUpsampleFilterAntiAlias), and checked
against onnxruntime 1.32's binary. Every coordinate, scale and weight is float32 arithmetic
there, whatever the tensor dtype (ORT has no double Resize): so it is here.

Where ORT and onnx/reference/ops/op_resize.py disagree, this follows ORT (docs/ops.md, "ResizeGrad"):
the output length from scales is floor(float(scale) * float(L)) in float32; align_corners and
tf_crop_and_resize divide by the integer output length minus 1; pytorch_half_pixel with one
output reads coordinate 0; an axis whose float scale is exactly 1 is the identity (antialias: an
axis whose length is unchanged), and a Resize whose output shape equals its input shape copies;
round_prefer_floor / round_prefer_ceil treat a fraction within 1e-6 of one half as a tie;
keep_aspect_ratio_policy rounds round(scale * L) in float32; a missing roi is [0, 1] per axis.

Beyond ORT (which runs linear on ranks 2 to 5 and cubic on 2 and 4 only), the same per-axis
taps serve any rank and any subset of axes: Resize is separable.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from resample_grad.constants import ASPECT_RATIO_POLICIES as POLICIES
from resample_grad.constants import COORDINATE_MODES, NEAREST_MODES
from resample_grad.constants import RESIZE_MODES as MODES

from ._common import ResampleGradError
from ._taps import Taps

f32 = np.float32
TIE_TOLERANCE = f32(1e-6)  # onnxruntime 1.32: |fraction - 0.5| <= 1e-6 is a tie


@dataclasses.dataclass(frozen=True)
class ResizeAttributes:
    mode: str = "nearest"
    coordinate_transformation_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: int = 0
    extrapolation_value: float = 0.0
    antialias: int = 0
    axes: tuple | None = None
    keep_aspect_ratio_policy: str = "stretch"

    def validate(self, op: str) -> None:
        for name, value, choices in (("mode", self.mode, MODES),
                                     ("coordinate_transformation_mode", self.coordinate_transformation_mode,
                                      COORDINATE_MODES),
                                     ("nearest_mode", self.nearest_mode, NEAREST_MODES),
                                     ("keep_aspect_ratio_policy", self.keep_aspect_ratio_policy, POLICIES)):
            if value not in choices:
                raise ResampleGradError(op, f"attribute '{name}' must be one of {', '.join(repr(c) for c in choices)}, "
                                            f"got {value!r}")
        for name in ("exclude_outside", "antialias"):
            if getattr(self, name) not in (0, 1):
                raise ResampleGradError(op, f"attribute '{name}' must be 0 or 1, got {getattr(self, name)}")
        if self.antialias and self.mode == "nearest":
            raise ResampleGradError(op, "attribute 'antialias' = 1 needs mode 'linear' or 'cubic' (as Resize), "
                                        "got mode 'nearest'")
        if not math.isfinite(self.cubic_coeff_a):
            raise ResampleGradError(op, f"attribute 'cubic_coeff_a' must be finite, got {self.cubic_coeff_a}")


@dataclasses.dataclass(frozen=True)
class AxisPlan:
    input_size: int
    output_size: int
    scale: np.float32  # the scale the coordinate transform uses
    roi_start: np.float32
    roi_end: np.float32


def _axes(op: str, axes, rank: int | None) -> list[int] | None:
    """The `axes` attribute normalised (negative counts from the end) and checked, or None (all axes)."""
    if axes is None:
        return None
    axes = [int(a) for a in axes]
    if rank is None:
        return axes
    normalised = []
    for a in axes:
        if not -rank <= a < rank:
            raise ResampleGradError(op,
                                    f"attribute 'axes' has {a}, outside [-{rank}, {rank - 1}] for the rank-{rank} X")
        normalised.append(a % rank)
    if len(set(normalised)) != len(normalised):
        raise ResampleGradError(op, f"attribute 'axes' repeats an axis: {axes}")
    return normalised


def plan(op: str, attrs: ResizeAttributes, x_shape: Sequence[int], roi, scales, sizes) -> list[AxisPlan]:
    """Per axis of X: input and output length, scale and roi, as onnxruntime's Resize computes them.

    roi, scales, sizes: arrays or None (an empty array counts as not given, as in Resize-11).
    """
    rank = len(x_shape)
    axes = _axes(op, attrs.axes, rank)
    listed = list(range(rank)) if axes is None else axes
    given = [name for name, v in (("scales", scales), ("sizes", sizes)) if v is not None and np.size(v) > 0]
    if len(given) != 1:
        raise ResampleGradError(op, "give exactly one of the inputs 'scales' and 'sizes' (as Resize), got "
                                    + (" and ".join(given) if given else "neither"))
    values = np.asarray(scales if given == ["scales"] else sizes).reshape(-1)
    if values.size != len(listed):
        raise ResampleGradError(op, f"input '{given[0]}' must have {len(listed)} values (one per "
                                    f"{'axis' if axes is None else 'entry of axes'}), got {values.size}")
    full_scale = [f32(1)] * rank
    out = list(x_shape)
    if given == ["scales"]:
        if attrs.keep_aspect_ratio_policy != "stretch":
            raise ResampleGradError(op, "input 'scales' cannot be used with keep_aspect_ratio_policy "
                                        f"{attrs.keep_aspect_ratio_policy!r} (as Resize): give sizes")
        for a, s in zip(listed, values.astype(np.float32), strict=True):
            if not (np.isfinite(s) and s > 0):
                raise ResampleGradError(op, f"input 'scales' must hold finite values > 0, got {values.tolist()}")
            full_scale[a] = f32(s)
            out[a] = int(f32(s) * f32(x_shape[a]))  # ComputeOutputShape: a float product, truncated
    else:
        values = values.astype(np.int64)
        if (values <= 0).any():
            raise ResampleGradError(op, f"input 'sizes' must hold values > 0, got {values.tolist()}")
        ratios = {a: (f32(1) if x_shape[a] == 0 else f32(s) / f32(x_shape[a])) for a,
                  s in zip(listed, values, strict=True)}
        if attrs.keep_aspect_ratio_policy == "stretch":
            for a, s in zip(listed, values, strict=True):
                if x_shape[a] == 0:  # onnxruntime: "Input dim is zero but required output dim is non-zero"
                    raise ResampleGradError(op, f"input 'sizes' asks for length {int(s)} at dimension {a}, where X has "
                                                "length 0 (as Resize: an empty axis cannot be resized to a non-empty "
                                                "one)")
                full_scale[a], out[a] = ratios[a], int(s)
        else:
            joint = (min if attrs.keep_aspect_ratio_policy == "not_larger" else max)(ratios.values())
            for a in listed:
                full_scale[a] = f32(joint)
                # std::round: half away from zero (np.round would take a tie to even); the product is >= 0
                out[a] = int(np.floor(float(f32(joint) * f32(x_shape[a])) + 0.5))
    starts, ends = [f32(0)] * rank, [f32(1)] * rank
    if attrs.coordinate_transformation_mode == "tf_crop_and_resize" and roi is not None and np.size(roi) > 0:
        roi = np.asarray(roi, np.float32).reshape(-1)
        if roi.size != 2 * len(listed):
            raise ResampleGradError(op, f"input 'roi' must have {2 * len(listed)} values (starts then ends, one per "
                                        f"{'axis' if axes is None else 'entry of axes'}), got {roi.size}")
        for k, a in enumerate(listed):
            starts[a], ends[a] = roi[k], roi[len(listed) + k]
    return [AxisPlan(int(x_shape[a]), out[a], full_scale[a], starts[a], ends[a]) for a in range(rank)]


# --------------------------------------------------------------------------- coordinates

def original_coordinate(ctm: str, plan_axis: AxisPlan) -> np.ndarray:
    """GetOriginalCoordinateFromResizedCoordinate for every output index, float32 (two modes end in double)."""
    x = np.arange(plan_axis.output_size).astype(f32)
    s, big_r, big_l = plan_axis.scale, f32(plan_axis.output_size), f32(plan_axis.input_size)
    if ctm == "asymmetric":
        return x / s
    if ctm == "pytorch_half_pixel":
        return (x + f32(0.5)) / s - f32(0.5) if plan_axis.output_size > 1 else np.zeros_like(x)
    if ctm == "tf_half_pixel_for_nn":
        return (x + f32(0.5)) / s
    if ctm == "align_corners":
        return x * (big_l - f32(1)) / (big_r - f32(1)) if plan_axis.output_size > 1 else np.zeros_like(x)
    if ctm == "tf_crop_and_resize":
        start, end = plan_axis.roi_start, plan_axis.roi_end
        if plan_axis.output_size > 1:
            return start * (big_l - f32(1)) + (x * (end - start) * (big_l - f32(1))) / (big_r - f32(1))
        return np.full_like(x, f32(0.5 * float(f32(start + end)) * float(big_l - f32(1))))
    if ctm == "half_pixel_symmetric":
        output_width = s * big_l
        adjustment = big_r / output_width
        center = big_l / f32(2)
        offset = center * (f32(1) - adjustment)
        return (np.float64(offset) + (x.astype(np.float64) + 0.5) / np.float64(s) - 0.5).astype(f32)
    return (x + f32(0.5)) / s - f32(0.5)  # half_pixel


def nearest_index(v: np.ndarray, nearest_mode: str) -> np.ndarray:
    """GetNearestPixelFromOriginal (opset 11 and newer modes), with onnxruntime 1.32's tie tolerance."""
    floor = np.floor(v)
    fraction = v - floor  # exact in float
    if nearest_mode == "floor":
        return floor.astype(np.int64)
    if nearest_mode == "ceil":
        return np.ceil(v).astype(np.int64)
    tie = np.abs(fraction - f32(0.5)) <= TIE_TOLERANCE
    # std::round: half away from zero
    rounded = np.where(v >= 0, floor + (fraction >= f32(0.5)), -np.floor(-v + f32(0.5)))
    return np.where(tie, floor + (nearest_mode == "round_prefer_ceil"), rounded).astype(np.int64)


# --------------------------------------------------------------------------- taps

def _is_identity(attrs: ResizeAttributes, plan_axis: AxisPlan) -> bool:
    if attrs.antialias:
        return plan_axis.output_size == plan_axis.input_size
    return bool(plan_axis.scale == f32(1))


def axis_taps(attrs: ResizeAttributes, plan_axis: AxisPlan) -> Taps:
    """The taps of one axis; an output outside the roi (tf_crop_and_resize: extrapolated) has none."""
    size_in, size_out = plan_axis.input_size, plan_axis.output_size
    if _is_identity(attrs, plan_axis):
        return Taps(size_in, np.arange(size_out)[:, None], np.ones((size_out, 1), f32))
    coord = original_coordinate(attrs.coordinate_transformation_mode, plan_axis)
    extrapolated = np.zeros(size_out, bool)
    if attrs.coordinate_transformation_mode == "tf_crop_and_resize":
        extrapolated = (coord < 0) | (coord > f32(size_in - 1))
    if attrs.antialias:
        index, weight = _antialias(attrs, plan_axis, coord)
    elif attrs.mode == "nearest":
        index = np.clip(nearest_index(coord, attrs.nearest_mode), 0, size_in - 1)[:, None]
        weight = np.ones((size_out, 1), f32)
    elif attrs.mode == "linear":
        index, weight = _linear(coord, size_in)
    else:
        index, weight = _cubic(coord, size_in, f32(attrs.cubic_coeff_a), attrs.exclude_outside)
    weight = np.where(extrapolated[:, None], f32(0), weight)
    return Taps(size_in, index, weight)


def _linear(coord: np.ndarray, size_in: int):
    """SetupUpsampleBilinear: the coordinate clamped to [0, L-1]; taps (x1, |c - x2|), (x2, |c - x1|);
    both 0.5 when x1 == x2 (the right edge, or L = 1)."""
    c = np.clip(coord, f32(0), f32(size_in - 1))
    x1 = np.minimum(c.astype(np.int64), size_in - 1)
    x2 = np.minimum(x1 + 1, size_in - 1)
    d1, d2 = np.abs(c - x1.astype(f32)), np.abs(c - x2.astype(f32))
    same = x1 == x2
    d1, d2 = np.where(same, f32(0.5), d1), np.where(same, f32(0.5), d2)
    return np.stack([x1, x2], axis=1), np.stack([d2, d1], axis=1).astype(f32)


def cubic_coefficients(s: np.ndarray, a: np.float32) -> np.ndarray:
    """GetCubicCoeffs (float32): taps floor - 1 .. floor + 2 for the fraction s."""
    s = np.abs(s)
    one, two = f32(1), f32(2)
    return np.stack([((a * (s + one) - 5 * a) * (s + one) + 8 * a) * (s + one) - 4 * a,
                     ((a + two) * s - (a + 3)) * s * s + one,
                     ((a + two) * (one - s) - (a + 3)) * (one - s) * (one - s) + one,
                     ((a * (two - s) - 5 * a) * (two - s) + 8 * a) * (two - s) - 4 * a], axis=1).astype(f32)


def _merge(index: np.ndarray, weight: np.ndarray):
    """Taps on one input index summed in float32, in tap order: the weight onnxruntime's forward gives that
    input (its running float sum over the taps)."""
    merged_index = np.zeros_like(index)
    merged_weight = np.zeros_like(weight)
    for o in range(index.shape[0]):
        seen = {}
        for i, w in zip(index[o], weight[o], strict=True):
            seen[int(i)] = f32(seen.get(int(i), f32(0)) + w)
        merged_index[o, :len(seen)] = list(seen)
        merged_weight[o, :len(seen)] = list(seen.values())
    return merged_index, merged_weight


def _cubic(coord: np.ndarray, size_in: int, a: np.float32, exclude_outside: int):
    """ResizeBiCubic: taps floor(c) - 1 .. + 2, clamped to the edge; exclude_outside zeroes the taps outside
    and renormalises the rest by their (sequential float) sum."""
    base = np.floor(coord).astype(np.int64)
    coeffs = cubic_coefficients(coord - base.astype(f32), a)
    index = base[:, None] + np.arange(-1, 3)
    if exclude_outside:
        coeffs = np.where((index < 0) | (index >= size_in), f32(0), coeffs)
        total = ((coeffs[:, 0] + coeffs[:, 1]) + coeffs[:, 2]) + coeffs[:, 3]
        coeffs = (coeffs / total[:, None]).astype(f32)
    return _merge(np.clip(index, 0, size_in - 1), coeffs)


def _antialias_filter(x: np.ndarray, cubic: bool, a: np.float32) -> np.ndarray:
    x = np.abs(x)
    if not cubic:
        return np.where(x < 1, f32(1) - x, f32(0)).astype(f32)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, f32(0))).astype(f32)


def _antialias(attrs: ResizeAttributes, plan_axis: AxisPlan, coord: np.ndarray):
    """SetupUpsampleFilterAntiAlias: Pillow's window around each centre, the filter stretched by 1 / scale when
    downscaling; the taps outside the input fold onto the edge pixel (exclude_outside: dropped), summed in
    float32 in onnxruntime's order (the edge weight first), then normalised by the float reciprocal of the sum."""
    cubic, a = attrs.mode == "cubic", f32(attrs.cubic_coeff_a)
    size_in = plan_axis.input_size
    inverse = f32(1) / plan_axis.scale
    support = (f32(4 if cubic else 2) * f32(0.5)) * inverse if inverse >= f32(1) else f32(4 if cubic else 2) * f32(0.5)
    window = int(math.ceil(float(support))) * 2 + 1
    inv_scale = f32(1) / inverse if inverse >= f32(1) else f32(1)
    index = np.zeros((len(coord), window), np.int64)
    weight = np.zeros((len(coord), window), f32)
    for o, c in enumerate(coord):
        center = f32(0.5) + c
        lo = math.floor(float(center - support + f32(0.5)))
        hi = math.floor(float(center + support + f32(0.5)))
        hi = lo + min(max(hi - lo, 0), window)
        lo_cut, hi_cut = min(max(lo, 0), size_in), min(max(hi, 0), size_in)
        if attrs.exclude_outside:
            lo, hi = lo_cut, hi_cut
        if lo_cut >= hi_cut:  # a window wholly outside reads nothing (only an extrapolated output has one)
            continue
        w = _antialias_filter((np.arange(lo, hi).astype(f32) - center + f32(0.5)) * inv_scale, cubic, a)
        total = f32(0)
        for value in w:
            total = f32(total + value)
        kept = [f32(v) for v in w[lo_cut - lo:hi_cut - lo]]
        for value in w[:lo_cut - lo]:  # onnxruntime: buf[neg] += buf[k], k ascending
            kept[0] = f32(kept[0] + value)
        for value in w[hi_cut - lo:]:
            kept[-1] = f32(kept[-1] + value)
        inverse_total = f32(1) if total == 0 else f32(1) / total
        index[o, :len(kept)] = np.arange(lo_cut, hi_cut)
        weight[o, :len(kept)] = np.array(kept, f32) * inverse_total
    return index, weight
