"""The function body of ResizeGrad, one per mode, coordinate mode, nearest mode, policy, axes and X's rank.

The twin of _onnx_resize.py: every axis's plan from the run-time roi, scales and sizes, and the dense float32
matrix M [R, out, in] of every axis at once (the identity on an axis Resize keeps), all float32 arithmetic as
onnxruntime's Resize; then the separable contraction of _separable_body (each axis's gather band). Run-time values
the kernel refuses, and a dY whose shape Resize would not produce, give NaN shaped like X (a function cannot raise).
"""
from __future__ import annotations

import numpy as np
import onnx

from ._graph import FLOAT, INT64, BodyKey, Graph
from ._separable_body import Axes, band, contract

DOUBLE = onnx.TensorProto.DOUBLE
CROP = "tf_crop_and_resize"
TIE_TOLERANCE = 1e-6  # onnxruntime 1.32: a fraction within 1e-6 of one half is a tie (_onnx_resize.TIE_TOLERANCE)
CUBIC_OFFSETS = [-1, 0, 1, 2]


def _f(g: Graph, value) -> str:
    """A float32 constant (the plan and the matrices are float32 in every body)."""
    return g.constant(np.array(value, np.float32))


def coordinate(g: Graph, ctm: str, x: str, scale: str, size_out: str, size_in: str, starts: str, ends: str) -> str:
    """GetOriginalCoordinateFromResizedCoordinate for every output x [out] of every axis ([R, 1] parameters)."""
    one, half, zero = _f(g, 1.0), _f(g, 0.5), _f(g, 0.0)
    several = g.Greater(size_out, one)
    if ctm == "asymmetric":
        return g.Div(x, scale)
    if ctm == "pytorch_half_pixel":
        return g.Where(several, g.Sub(g.Div(g.Add(x, half), scale), half), zero)
    if ctm == "tf_half_pixel_for_nn":
        return g.Div(g.Add(x, half), scale)
    if ctm == "align_corners":
        return g.Where(several, g.Div(g.Mul(x, g.Sub(size_in, one)), g.Sub(size_out, one)), zero)
    if ctm == CROP:
        span = g.Sub(size_in, one)
        many = g.Add(g.Mul(starts, span), g.Div(g.Mul(g.Mul(x, g.Sub(ends, starts)), span), g.Sub(size_out, one)))
        single = g.Cast(g.Mul(g.Mul(g.typed(0.5, DOUBLE), g.Cast(g.Add(starts, ends), to=DOUBLE)),
                              g.Cast(span, to=DOUBLE)), to=FLOAT)
        return g.Where(several, many, single)
    if ctm == "half_pixel_symmetric":  # a float32 offset, then double
        offset = g.Mul(g.Div(size_in, _f(g, 2.0)), g.Sub(one, g.Div(size_out, g.Mul(scale, size_in))))
        shifted = g.Div(g.Add(g.Cast(x, to=DOUBLE), g.typed(0.5, DOUBLE)), g.Cast(scale, to=DOUBLE))
        return g.Cast(g.Sub(g.Add(g.Cast(offset, to=DOUBLE), shifted), g.typed(0.5, DOUBLE)), to=FLOAT)
    return g.Sub(g.Div(g.Add(x, half), scale), half)  # half_pixel


def nearest_index(g: Graph, coord: str, nearest_mode: str) -> str:
    """GetNearestPixelFromOriginal, with onnxruntime's tie tolerance; std::round is half away from zero."""
    if nearest_mode in ("floor", "ceil"):
        return g.Cast(g.Floor(coord) if nearest_mode == "floor" else g.Ceil(coord), to=INT64)
    floor = g.Floor(coord)
    fraction = g.Sub(coord, floor)
    tie = g.LessOrEqual(g.Abs(g.Sub(fraction, _f(g, 0.5))), _f(g, TIE_TOLERANCE))
    rounded = g.Where(g.GreaterOrEqual(coord, _f(g, 0.0)),
                      g.Add(floor, g.Cast(g.GreaterOrEqual(fraction, _f(g, 0.5)), to=FLOAT)),
                      g.Neg(g.Floor(g.Add(g.Neg(coord), _f(g, 0.5)))))
    tied = g.Add(floor, _f(g, 1.0)) if nearest_mode == "round_prefer_ceil" else floor
    return g.Cast(g.Where(tie, tied, rounded), to=INT64)


def one_hot(g: Graph, index: str, columns: str) -> str:
    """[*index.shape, in] float32, 1 at index."""
    return g.Cast(g.Equal(g.Unsqueeze(index, [-1]), columns), to=FLOAT)


def running_sum(g: Graph, values: str, axis: int) -> str:
    """The float sum along `axis`, in order (onnxruntime's running sums); the axis kept, of length 1."""
    return g.Gather(g.CumSum(values, g.typed(axis, INT64)), [-1], axis=axis)


def keys(g: Graph, x: str, a: float, outer: str) -> str:
    """Keys' cubic with coefficient a at |x| (x [.., K]); `outer` says where to use the outer piece."""
    near = g.Add(g.Mul(g.Mul(g.Sub(g.Mul(_f(g, a + 2), x), _f(g, a + 3)), x), x), _f(g, 1.0))
    far = g.Sub(g.Mul(g.Add(g.Mul(g.Sub(g.Mul(_f(g, a), x), _f(g, 5 * a)), x), _f(g, 8 * a)), x), _f(g, 4 * a))
    return g.Where(outer, far, near)


def linear_matrix(g: Graph, coord: str, last: str, columns: str) -> str:
    """SetupUpsampleBilinear: the coordinate clamped to [0, L - 1]; taps (x1, |c - x2|), (x2, |c - x1|), both 0.5
    when x1 == x2."""
    c = g.Max(g.Min(coord, g.Cast(last, to=FLOAT)), _f(g, 0.0))
    x1 = g.Min(g.Cast(c, to=INT64), last)
    x2 = g.Min(g.Add(x1, 1), last)
    same = g.Equal(x1, x2)
    d1 = g.Where(same, _f(g, 0.5), g.Abs(g.Sub(c, g.Cast(x1, to=FLOAT))))
    d2 = g.Where(same, _f(g, 0.5), g.Abs(g.Sub(c, g.Cast(x2, to=FLOAT))))
    return g.Add(g.Mul(one_hot(g, x1, columns), g.Unsqueeze(d2, [-1])),
                 g.Mul(one_hot(g, x2, columns), g.Unsqueeze(d1, [-1])))


def cubic_matrix(g: Graph, coord: str, last: str, columns: str, a: float, exclude_outside: bool) -> str:
    """ResizeBiCubic: taps floor(c) - 1 .. + 2 (GetCubicCoeffs at the distances |s + 1|, |s|, |1 - s|, |2 - s|),
    clamped to the edge and added up per input in tap order; exclude_outside zeroes the taps outside and
    renormalises by their running sum."""
    base = g.Floor(coord)
    distance = g.Abs(g.Sub(_f(g, [float(k) for k in CUBIC_OFFSETS]), g.Unsqueeze(g.Sub(coord, base), [-1])))
    weights = keys(g, distance, a, g.constant(np.array([True, False, False, True])))
    taps = g.Add(g.Unsqueeze(g.Cast(base, to=INT64), [-1]), CUBIC_OFFSETS)
    last = g.Unsqueeze(last, [-1])
    if exclude_outside:
        weights = g.Where(g.Or(g.Less(taps, 0), g.Greater(taps, last)), _f(g, 0.0), weights)
        weights = g.Div(weights, running_sum(g, weights, -1))
    terms = g.Mul(one_hot(g, g.Max(g.Min(taps, last), 0), columns), g.Unsqueeze(weights, [-1]))  # [R, out, 4, in]
    return g.Squeeze(running_sum(g, terms, 2), [2])


def antialias_matrix(g: Graph, coord: str, scale: str, in_len: str, columns: str, cubic: bool, a: float,
                     exclude_outside: bool) -> str:
    """SetupUpsampleFilterAntiAlias: Pillow's window around 0.5 + coord, the filter stretched by 1 / scale when
    downscaling; the taps outside the input fold onto the edge pixel after its own weight (exclude_outside: they
    are dropped), normalised by the float reciprocal of the window's running sum."""
    # reciprocals by Reciprocal: onnxruntime rewrites Mul(Div(1, a), b) as Div(b, a), rounded differently
    stretch = g.Unsqueeze(g.Max(g.Reciprocal(scale), _f(g, 1.0)), [-1])  # [R, 1, 1]
    support = g.Mul(stretch, _f(g, 2.0 if cubic else 1.0))
    reach = g.Add(g.Mul(g.Cast(g.Ceil(support), to=INT64), 2), 1)  # Pillow's window size
    center = g.Unsqueeze(g.Add(coord, _f(g, 0.5)), [-1])  # [R, out, 1]
    lo = g.Cast(g.Floor(g.Add(g.Sub(center, support), _f(g, 0.5))), to=INT64)
    hi = g.Cast(g.Floor(g.Add(g.Add(center, support), _f(g, 0.5))), to=INT64)
    hi = g.Add(lo, g.Min(g.Max(g.Sub(hi, lo), 0), reach))
    size = g.Unsqueeze(in_len, [-1])  # [R, 1, 1]
    lo_cut, hi_cut = g.Min(g.Max(lo, 0), size), g.Min(g.Max(hi, 0), size)
    if exclude_outside:
        lo, hi = lo_cut, hi_cut
    # the candidate positions j [E] run from -W to in_max + W (W the widest window): the window's reach past both
    # edges; position j sits at j + W along E
    widest = g.ReduceMax(reach, keepdims=0)
    in_max = g.ReduceMax(in_len, keepdims=0)
    j = g.Range(g.Neg(widest), g.Add(in_max, widest), 1)
    x = g.Abs(g.Mul(g.Add(g.Sub(g.Cast(j, to=FLOAT), center), _f(g, 0.5)), g.Reciprocal(stretch)))
    if cubic:  # Keys in Pillow's form; the outer piece is 0 from 2 on
        x = g.Min(x, _f(g, 2.0))
        near = g.Add(g.Mul(g.Mul(g.Sub(g.Mul(_f(g, a + 2), x), _f(g, a + 3)), x), x), _f(g, 1.0))
        far = g.Mul(g.Sub(g.Mul(g.Add(g.Mul(g.Sub(x, _f(g, 5.0)), x), _f(g, 8.0)), x), _f(g, 4.0)), _f(g, a))
        weight = g.Where(g.Less(x, _f(g, 1.0)), near, far)
    else:
        weight = g.Max(g.Sub(_f(g, 1.0), x), _f(g, 0.0))
    weight = g.Where(g.And(g.GreaterOrEqual(j, lo), g.Less(j, hi)), weight, _f(g, 0.0))  # [R, out, E]
    total = running_sum(g, weight, -1)
    # column i's weight sits at E position i + W; column 0 adds the positions left of the input (0 .. W - 1) after
    # its own, column L - 1 those right of it (L + W ..); a one-pixel input both, left first
    steps = g.Range(0, widest, 1)  # [W]
    lefts = g.Concat(g.Unsqueeze(widest, [0]), steps, axis=0)  # column 0's own position, then those left of it
    lefts = g.Expand(lefts, g.Concat(g.Shape(in_len, start=0, end=1), g.Shape(lefts), axis=0))  # [R, 1 + W]
    last_own = g.Add(widest, g.Sub(in_len, 1))  # [R, 1]
    rights = g.Add(g.Add(last_own, 1), steps)  # [R, W]

    def running(order):  # the running sum of the weights at the E positions `order` [R, K]: [R, out, 1]
        index = g.Expand(g.Unsqueeze(order, [1]), g.Concat(g.Shape(weight, start=0, end=2), g.Shape(order, start=1),
                                                         axis=0))
        return running_sum(g, g.GatherElements(weight, index, axis=2), -1)

    column = g.Range(0, in_max, 1)
    folded = g.Gather(weight, g.Add(widest, column), axis=2)  # [R, out, in]: each column's own weight
    if not exclude_outside:
        left = g.Where(g.Unsqueeze(g.Equal(in_len, 1), [-1]), running(g.Concat(lefts, rights, axis=1)),
                       running(lefts))
        right = running(g.Concat(last_own, rights, axis=1))
        folded = g.Where(g.Equal(column, 0), left, g.Where(g.Equal(column, g.Unsqueeze(g.Sub(in_len, 1), [-1])),
                                                           right, folded))
    folded = g.Where(g.Less(column, size), folded, _f(g, 0.0))
    inverse_total = g.Where(g.Equal(total, _f(g, 0.0)), _f(g, 1.0), g.Reciprocal(total))
    reads = g.Greater(hi_cut, lo_cut)  # a window wholly outside reads nothing
    return g.Where(reads, g.Mul(folded, inverse_total), _f(g, 0.0))


def resize_grad_body(key: BodyKey, inputs: list[str], rank: int) -> onnx.FunctionProto:
    """The body of a ResizeGrad node whose X has rank `rank` (inputs dY, X, roi, scales, sizes: attach() gives
    every node all five, an absent one as an empty tensor)."""
    g = key.graph()
    attrs = dict(key.attributes)
    ctm, policy = attrs["coordinate_transformation_mode"], attrs["keep_aspect_ratio_policy"]
    axes = attrs.get("axes")
    listed = list(range(rank)) if not axes else [a % rank for a in axes]
    count = len(listed)
    d_y, x, roi, scales, sizes = inputs
    in_dims, out_dims = g.Shape(x), g.Shape(d_y)
    in_float = g.Cast(in_dims, to=FLOAT)
    # the plan, as onnxruntime's Resize: scales or sizes (the absent one padded, so that every value has a shape)
    has_scales, has_sizes = g.Greater(g.Size(scales), 0), g.Greater(g.Size(sizes), 0)
    given_scales = g.Slice(g.Concat(g.Cast(g.Reshape(scales, [-1]), to=FLOAT), _f(g, [1.0] * count), axis=0), [0],
                           [count])
    listed_in = g.Gather(in_dims, listed)
    given_sizes = g.Slice(g.Concat(g.Reshape(sizes, [-1]), listed_in, axis=0), [0], [count])
    listed_float = g.Cast(listed_in, to=FLOAT)
    ratios = g.Where(g.Equal(listed_in, 0), _f(g, 1.0), g.Div(g.Cast(given_sizes, to=FLOAT), listed_float))
    if policy == "stretch":
        chosen, sized = ratios, given_sizes
    else:
        joint = (g.ReduceMin if policy == "not_larger" else g.ReduceMax)(ratios, keepdims=1)
        chosen = g.Expand(joint, [count])
        sized = g.Cast(g.Floor(g.Add(g.Mul(joint, listed_float), _f(g, 0.5))), to=INT64)  # std::round
    scale = g.ScatterElements(_f(g, [1.0] * rank), listed, g.Where(has_scales, given_scales, chosen))
    expected = g.Where(has_scales, g.Cast(g.Mul(scale, in_float), to=INT64), g.ScatterElements(in_dims, listed, sized))
    starts, ends = _f(g, [0.0] * rank), _f(g, [1.0] * rank)
    if ctm == CROP:  # a missing roi is [0, 1] per axis
        default = _f(g, [0.0] * count + [1.0] * count)
        padded = g.Slice(g.Concat(g.Cast(g.Reshape(roi, [-1]), to=FLOAT), default, axis=0), [0], [2 * count])
        values = g.Where(g.Equal(g.Size(roi), 2 * count), padded, default)
        starts = g.ScatterElements(starts, listed, g.Slice(values, [0], [count]))
        ends = g.ScatterElements(ends, listed, g.Slice(values, [count], [2 * count]))
    # what the kernel refuses at run time
    refused = [g.Equal(has_scales, has_sizes),
               g.And(has_scales, g.Not(g.Equal(g.Size(scales), count))),
               g.And(has_sizes, g.Not(g.Equal(g.Size(sizes), count))),
               g.And(has_sizes, g.Not(_all(g, g.Greater(given_sizes, 0)))),
               _any(g, g.And(g.Equal(in_dims, 0), g.Not(g.Equal(expected, 0)))),
               g.Not(_all(g, g.Equal(expected, out_dims)))]
    if policy == "stretch":
        finite = g.And(g.Greater(given_scales, _f(g, 0.0)), g.Not(g.IsInf(given_scales)))
        refused.append(g.And(has_scales, g.Not(_all(g, finite))))
    else:  # scales with a keep_aspect_ratio_policy
        refused.append(has_scales)
    if ctm == CROP:
        refused.append(g.And(g.Greater(g.Size(roi), 0), g.Not(g.Equal(g.Size(roi), 2 * count))))
    invalid = refused[0]
    for condition in refused[1:]:
        invalid = g.Or(invalid, condition)
    nan = g.branch()
    refusal = nan.like(nan.Expand(nan.Div(0.0, 0.0), in_dims), x)
    gradient = g.branch()
    result = _gradient(gradient, key, d_y, x, in_dims, out_dims, scale, starts, ends, rank)
    dx = g.If(invalid, then_branch=nan.graph([refusal]), else_branch=gradient.graph([result]))
    return g.function(key.op_type, key.overload, inputs, {"dX": dx})


def _all(g: Graph, condition: str) -> str:
    return g.Equal(g.ReduceMin(g.Cast(condition, to=INT64), keepdims=0), 1)


def _any(g: Graph, condition: str) -> str:
    return g.Equal(g.ReduceMax(g.Cast(condition, to=INT64), keepdims=0), 1)


def _gradient(g: Graph, key: BodyKey, d_y: str, x: str, in_dims: str, out_dims: str, scale: str, starts: str,
              ends: str, rank: int) -> str:
    """dX: dY contracted along every axis with its matrix (the identity where Resize keeps the axis)."""
    attrs = dict(key.attributes)
    mode, ctm = attrs["mode"], attrs["coordinate_transformation_mode"]
    a, exclude = float(attrs["cubic_coeff_a"]), bool(attrs["exclude_outside"])
    in_len, out_len = g.Unsqueeze(in_dims, [1]), g.Unsqueeze(out_dims, [1])  # [R, 1]
    out_max = g.ReduceMax(out_dims, keepdims=0)
    axes = Axes(in_len, out_len, out_max, g.Range(0, out_max, 1))
    column = g.Range(0, g.ReduceMax(in_dims, keepdims=0), 1)
    size_in, size_out = g.Cast(in_len, to=FLOAT), g.Cast(out_len, to=FLOAT)
    scale = g.Unsqueeze(scale, [1])
    coord = coordinate(g, ctm, g.Cast(axes.dst, to=FLOAT), scale, size_out, size_in, g.Unsqueeze(starts, [1]),
                       g.Unsqueeze(ends, [1]))
    last = g.Sub(in_len, 1)
    if attrs["antialias"]:
        matrix = antialias_matrix(g, coord, scale, in_len, column, mode == "cubic", a, exclude)
        kept = g.Equal(out_len, in_len)
    elif mode == "nearest":
        matrix = one_hot(g, g.Max(g.Min(nearest_index(g, coord, attrs["nearest_mode"]), last), 0), column)
    elif mode == "linear":
        matrix = linear_matrix(g, coord, last, column)
    else:
        matrix = cubic_matrix(g, coord, last, column, a, exclude)
    if not attrs["antialias"]:
        kept = g.Equal(scale, _f(g, 1.0))
    if ctm == CROP:  # an extrapolated output reads nothing
        outside = g.Or(g.Less(coord, _f(g, 0.0)), g.Greater(coord, g.Cast(last, to=FLOAT)))
        matrix = g.Where(g.Unsqueeze(outside, [-1]), _f(g, 0.0), matrix)
    # Resize keeps an axis whose scale is 1 (antialias: whose length is), and copies when no length changes
    kept = g.Or(kept, _all(g, g.Equal(out_dims, in_dims)))
    identity = g.Cast(g.Equal(g.Unsqueeze(axes.dst, [-1]), column), to=FLOAT)  # [out, in]
    matrix = g.Where(g.Unsqueeze(kept, [-1]), identity, matrix)
    bands = band(g, axes, matrix if g.opmath == FLOAT else g.Cast(matrix, to=g.opmath))
    grad = g.in_opmath(d_y)
    rows = g.Split(bands.rows, axis=0, num_outputs=rank, outputs=rank) if rank > 1 else [bands.rows]
    weights = g.Split(bands.weight, axis=0, num_outputs=rank, outputs=rank) if rank > 1 else [bands.weight]
    for axis in range(rank):  # an axis Resize keeps is skipped (most often N and C): a pass over dY less
        keep, resize = g.branch(), g.branch()
        end = resize.Slice(in_dims, [axis], [axis + 1])
        contracted = contract(resize, grad, resize.Slice(rows[axis], [0], end, [2]),
                              resize.Slice(weights[axis], [0], end, [2]), axis, rank)
        grad = g.If(g.Gather(kept, axis), then_branch=keep.graph([grad]), else_branch=resize.graph([contracted]))
    return g.like(grad, x)
