"""onnxscript building blocks of the grid samplers: aten's GridSampler.h coordinate rules per axis.

The twins of _coords.py, vectorised over tensors of grid coordinates (in the body's arithmetic type:
_script.ToOpmath).
"""
from __future__ import annotations

from typing import Sequence

import onnx
from onnxscript import opset18 as op
from onnxscript import script

from ._script import HELPERS, ToOpmath, helper
from ._script_taps import CubicCoefficients


@helper
@script(HELPERS, default_opset=op)
def Unnormalize(coord, size, align_corners):
    """grid_sampler_unnormalize_set_grad: [-1, 1] to pixels and d(pixel)/d(grid); size, align_corners doubles.
    An If, not a Where over both forms: onnxruntime's Where costs 5 ns an element."""
    if op.Cast(align_corners, to=onnx.TensorProto.BOOL):
        pixel = op.Mul(op.Div(op.Add(coord, 1.0), 2.0), op.Sub(size, 1.0))
        mult = op.Div(op.Sub(size, 1.0), 2.0)
    else:
        pixel = op.Div(op.Sub(op.Mul(op.Add(coord, 1.0), size), 1.0), 2.0)
        mult = op.Div(size, 2.0)
    return pixel, mult


@helper
@script(HELPERS, default_opset=op)
def ClipCoordinates(coord, size):
    """clip_coordinates_set_grad; NaN passes through (Where, not Min/Max)."""
    limit = op.Sub(size, 1.0)
    low = op.LessOrEqual(coord, 0.0)
    high = op.GreaterOrEqual(coord, limit)
    zero = op.CastLike(0.0, coord)
    clipped = op.Where(low, zero, op.Where(high, limit, coord))
    grad = op.Sub(1.0, op.CastLike(op.Or(low, high), coord))  # 0/1 arithmetic, not a third Where
    return clipped, grad


@helper
@script(HELPERS, default_opset=op)
def ReflectCoordinates(coord, size, align_corners):
    """reflect_coordinates_set_grad with the flip parity from fmod(x, 2 span) (exact for any x)."""
    use_aligned = op.Cast(align_corners, to=onnx.TensorProto.BOOL)
    zero = op.CastLike(0.0, coord)
    # beyond +-2^23 pixels float and double reflect differently: NaN, a point that reads nothing
    coord = op.Where(op.Greater(op.Abs(coord), op.CastLike(8388608.0, coord)), op.Div(zero, zero), coord)
    low = op.Where(use_aligned, op.CastLike(0.0, coord), op.CastLike(-0.5, coord))
    span = op.Where(use_aligned, op.Sub(size, 1.0), size)
    shifted = op.Sub(coord, low)
    # fmod(|shifted|, 2 span) as |shifted| - floor(|shifted| / period) period, exact here (onnxruntime's Mod calls
    # std::fmod: 10 ns an element, 3x this): |shifted| < 2^24 and the period is a whole number, so a quotient
    # k - d/period (d >= one ulp of |shifted|) lies more than half its own ulp below k and cannot round up to
    # k (a power-of-two period divides exactly), and the product and difference are exact integers and floats
    magnitude = op.Abs(shifted)
    period = op.Mul(span, 2.0)
    rest = op.Sub(magnitude, op.Mul(op.Floor(op.Div(magnitude, period)), period))
    # selects as 0/1 arithmetic (a Where costs onnxruntime 3-5 ns an element on one thread): the mirror image
    # rest + flipped (period - 2 rest) is period - rest, exactly (rest >= span: both differences are Sterbenz's);
    # the gradient is the sign of shifted, negated when flipped
    flipped = op.CastLike(op.GreaterOrEqual(rest, span), coord)
    reflected = op.Add(op.Add(rest, op.Mul(flipped, op.Sub(period, op.Mul(rest, 2.0)))), low)
    negative = op.CastLike(op.Less(shifted, 0.0), coord)
    grad = op.Mul(op.Sub(1.0, op.Mul(negative, 2.0)), op.Sub(1.0, op.Mul(flipped, 2.0)))
    # a single pixel with align_corners has no room to reflect: aten returns 0 with gradient 0
    degenerate = op.Equal(span, 0.0)
    return op.Where(degenerate, zero, reflected), op.Where(degenerate, zero, grad)


@helper
@script(HELPERS, default_opset=op)
def SafeDowngrade(coord):
    """safe_downgrade_to_int_range: NaN, inf and values outside int32 become -100 (out of bounds)."""
    bad = op.Or(op.Or(op.IsNaN(coord), op.IsInf(coord)),
                op.Or(op.GreaterOrEqual(coord, op.CastLike(2147483647.0, coord)),  # INT32_MAX
                      op.Less(coord, op.CastLike(-2147483648.0, coord))))  # INT32_MIN
    return op.Where(bad, op.CastLike(-100.0, coord), coord)


@helper
@script(HELPERS, default_opset=op)
def ApplyPadding(coord, size, padding, align_corners):
    """compute_coordinates with its gradient; padding is 0 zeros, 1 border, 2 reflection (int64 scalar).
    Only the chosen padding is computed (an If: a Where over all three cost 10% of the 3-D function)."""
    if op.Equal(padding, 1):
        padded, grad = ClipCoordinates(coord, size)
    else:
        if op.Equal(padding, 2):
            reflected, reflect_grad = ReflectCoordinates(coord, size, align_corners)
            padded, clip_grad = ClipCoordinates(reflected, size)
            grad = op.Mul(reflect_grad, clip_grad)
        else:
            padded = op.Identity(coord)
            grad = op.CastLike(op.Expand(1.0, op.Shape(coord)), coord)
    return SafeDowngrade(padded), grad


@helper
@script(HELPERS, default_opset=op)
def AxisTaps(coord, size, align_corners, padding, interpolation):
    """The taps of one axis for the grid points coord [N, P]: pixel positions, weights and d weight/d pixel
    [N, K, P] (taps before points: the products over axes broadcast along P, not along a tiny last axis),
    d pixel/d grid [N, P], and each point's first tap before any tap is padded [N, P] (finite: AddBoxAxis casts it).

    interpolation: 0 bilinear (K=2), 1 nearest (K=1), 2 bicubic (K=4). Bilinear and
    nearest pad the coordinate, bicubic pads every tap (as aten).
    """
    pixel, mult = Unnormalize(coord, size, align_corners)
    taps_axis = op.Constant(value_ints=[1])
    if op.Equal(interpolation, 2):
        finite = op.Not(op.Or(op.IsNaN(pixel), op.IsInf(pixel)))  # a non-finite point reads nothing
        zero = op.CastLike(0.0, pixel)
        safe = op.Where(finite, pixel, zero)
        base = op.Floor(safe)
        coeffs, coeff_grads = CubicCoefficients(op.Sub(safe, base))  # [N, P, 4]
        offsets = op.CastLike(op.Constant(value_floats=[-1.0, 0.0, 1.0, 2.0]), pixel)
        taps, unused = ApplyPadding(op.Add(op.Unsqueeze(base, taps_axis), op.Unsqueeze(offsets, taps_axis)), size,
                                    padding, align_corners)
        first = op.Sub(base, 1.0)
        finite_taps = op.Unsqueeze(finite, taps_axis)
        weights = op.Where(finite_taps, op.Transpose(coeffs, perm=[0, 2, 1]), zero)
        slopes = op.Where(finite_taps, op.Neg(op.Transpose(coeff_grads, perm=[0, 2, 1])), zero)
        scale = mult
    else:
        padded, pad_grad = ApplyPadding(pixel, size, padding, align_corners)
        scale = op.Mul(mult, pad_grad)
        if op.Equal(interpolation, 1):
            first = op.Round(padded)
            taps = op.Unsqueeze(first, taps_axis)
            weights = op.CastLike(op.Expand(1.0, op.Shape(taps)), taps)
            slopes = op.CastLike(op.Expand(0.0, op.Shape(taps)), taps)
        else:
            low = op.Floor(padded)
            first = op.Identity(low)
            high = op.Add(low, 1.0)
            taps = op.Concat(op.Unsqueeze(low, taps_axis), op.Unsqueeze(high, taps_axis), axis=1)
            weights = op.Concat(op.Unsqueeze(op.Sub(high, padded), taps_axis),
                                op.Unsqueeze(op.Sub(padded, low), taps_axis), axis=1)
            # d weight / d pixel: -1 for the low tap, +1 for the high one (an Expand: a broadcast Add along a
            # last axis of 2 cost onnxruntime 9 ns an element)
            slopes = op.CastLike(op.Expand(op.Unsqueeze(op.Constant(value_floats=[-1.0, 1.0]), taps_axis),
                                           op.Shape(taps)), taps)
    return taps, weights, slopes, scale, first


@helper
@script(HELPERS, default_opset=op)
def AxisIndex(taps, weights, size, rows):
    """One axis's tap positions [N, K, P] as int64 and their weights, for flat indices into the input.

    A tap outside [0, size - 1] gets weight 0 and a position of at least `rows` (int64), the number of rows of
    this axis's length in the input (S / stride): a flat index built with it is S or more, past every pixel.
    Masking per axis keeps every select off the [N, taps, P] tensors: the weights are multiplied by the 0/1
    mask, and so is a margin added to the positions before their cast (twice `rows` plus 2, so at least
    `rows` after float rounding): onnxruntime runs Where on one thread at 3-5 ns an element, these on every
    one (a Where per axis took 4.9 ms of the 3-D function at 2 threads). The taps are finite: SafeDowngrade or
    a zero weight.
    """
    inside = op.CastLike(op.And(op.GreaterOrEqual(taps, op.CastLike(0.0, taps)),
                                op.LessOrEqual(taps, op.Sub(size, 1.0))), weights)
    margin = op.Add(op.Mul(op.CastLike(rows, taps), 2.0), 2.0)
    at = op.Add(op.Min(op.Max(taps, op.CastLike(-1.0, taps)), size), op.Mul(op.Sub(1.0, inside), margin))
    return op.Cast(at, to=onnx.TensorProto.INT64), op.Mul(weights, inside)


@helper
@script(HELPERS, default_opset=op)
def RepeatRow(row, shape):
    """row [L] repeated as [*shape, L]: a Gather of its one row, which onnxruntime runs on every thread (an Expand
    runs on one: 4 ms of the 3-D function's 2-thread run for two [N, P T] index rows)."""
    return op.Gather(op.Unsqueeze(row, op.Constant(value_ints=[0])), op.Expand(op.Constant(value_int=0), shape), axis=0)


@helper
@script(HELPERS, default_opset=op)
def ScatterOverPlanes(contributions, keys, length):
    """contributions [N, C, M] added at keys [N, M] (in [0, length)): planes [N, C, length].
    ScatterElements, element by element and in order; int32 indices where they fit (a third faster: the
    index tensor, repeated over C, is the largest input)."""
    # the zero planes and the keys repeated over C as Gathers of rows (onnxruntime runs Expand on one thread,
    # Gather on every one)
    by_plane = op.Shape(contributions, start=0, end=2)
    zeros = RepeatRow(op.Expand(op.CastLike(0.0, contributions), length), by_plane)
    items = op.Expand(op.Unsqueeze(op.Range(op.Constant(value_int=0), by_plane[0], op.Constant(value_int=1)),
                                   op.Constant(value_ints=[1])), by_plane)
    if op.Less(length, op.Constant(value_ints=[2147483647])):  # INT32_MAX: the keys fit
        planes = op.ScatterElements(zeros, op.Gather(op.Cast(keys, to=onnx.TensorProto.INT32), items, axis=0),
                                    contributions, axis=2, reduction="add")
    else:
        planes = op.ScatterElements(zeros, op.Gather(keys, items, axis=0), contributions, axis=2, reduction="add")
    return planes


@helper
@script(HELPERS, default_opset=op)
def ScatterIntoImage(contributions, keys, input):
    """ScatterOverPlanes into an image of input's shape and type: keys [N, M] from 0, S or more (outside) dropped.
    The planes get one spare slab along the first spatial axis (the outside taps land at its start), and a Gather
    of the real slabs writes the image: onnxruntime runs Gather on every thread, where the Slice of a spare
    column, or a Reshape writing a function's output, copies on one (1.3 ms of the 2-thread nearest function)."""
    pixels = op.ReduceProd(op.Shape(input, start=2), keepdims=1)
    first_axis = op.Shape(input, start=2, end=3)
    slab = op.Div(pixels, op.Max(first_axis, op.Constant(value_ints=[1])))
    planes = ScatterOverPlanes(contributions, op.Min(keys, pixels), op.Add(pixels, slab))
    slabs = op.Reshape(op.CastLike(planes, input), op.Concat(op.Shape(input, start=0, end=2), op.Add(first_axis, 1),
                                                             op.Shape(input, start=3), axis=0), allowzero=1)
    return op.Gather(slabs, op.Range(op.Constant(value_int=0), op.Squeeze(first_axis), op.Constant(value_int=1)),
                     axis=2)


@helper
@script(HELPERS, default_opset=op)
def BoxKeysStart(interpolation, padding):
    """Whether every point's taps are a box of consecutive pixels, whether the taps in the margin fold onto the
    edge pixels, and AddBoxAxis's keys before any axis is added. Bilinear, and bicubic with zeros or border
    padding, take their taps in pixel order without sorting them (SortBoxTaps): bicubic's border clamps each
    tap onto the edge, which is the margin folded onto the edge pixels (aten's add_value_bounded clips each
    tap); its reflection mirrors taps into the image and sorts them by key."""
    bicubic = op.Equal(interpolation, 2)
    box = op.Or(op.Equal(interpolation, 0), op.And(bicubic, op.Less(padding, 2)))
    fold = op.And(bicubic, op.Equal(padding, 1))
    start = op.Constant(value_ints=[0])
    return box, fold, op.Constant(value_int=0), op.Constant(value_ints=[1]), start, start, start


@helper
@script(HELPERS, default_opset=op)
def AddBoxAxis(base, extent, offsets, starts, ends, taps, first, size, edges):
    """Adds one more axis (taps [N, K, P], each point's first tap before padding `first` [N, P], the axis's
    length `size`, int64 [1]) to the box keys of the taps.

    When an axis's taps are K consecutive pixels, every tap of a point lies at the point's base plus a fixed
    offset. The keys live in an extended image with K pixels of margin each side (a base clamped to
    [-K, size]: every tap keeps its pixel or, if it was outside, stays outside): `base` [N, P] the point's
    first tap, `extent` [1] the extended pixels so far, `offsets` [T] each tap's offset from the base (tap
    order: the axes added before are the outer ones, as in the flat taps). Each target, a real pixel in
    order, sums the taps whose keys lie in [starts, ends] [S]. Start from BoxKeysStart's keys, add x first.

    `edges` (int64) says where a tap in the margin goes: 0 nowhere (zeros padding, or a zero weight); 1 onto
    the edge pixel of this axis, the innermost: the edge pixels' key ranges take in the margin (contiguous
    keys); 2 onto the edge slab of this axis, the outermost: the 2 K margin slabs become targets after the
    real ones (low margin first), for GridTapGradients to add onto the edge slabs.
    """
    k = op.Shape(taps, start=1, end=2)
    kf = op.CastLike(k, taps)
    at = op.Cast(op.Add(op.Min(op.Max(first, op.Neg(kf)), op.CastLike(size, taps)), kf), to=onnx.TensorProto.INT64)
    zero = op.Constant(value_int=0)
    one = op.Constant(value_int=1)
    new_axis = op.Constant(value_ints=[0])
    old_axes = op.Constant(value_ints=[1])
    flat = op.Constant(value_ints=[-1])
    offsets = op.Reshape(op.Add(op.Unsqueeze(offsets, old_axes), op.Unsqueeze(
        op.Mul(op.Range(zero, k[0], one), extent), new_axis)), flat)
    index = op.Range(zero, size[0], one)
    own = op.Add(index, k)  # each pixel's extended index along the axis
    widen = op.Equal(edges, 1)
    low = op.Where(op.And(widen, op.Equal(index, 0)), zero, own)
    high = op.Where(op.And(widen, op.Equal(index, op.Sub(size[0], 1))), op.Sub(op.Add(size[0], op.Add(k[0], k[0])), 1),
                    own)
    margin = op.Mul(k[0], op.Cast(op.Equal(edges, 2), to=onnx.TensorProto.INT64))
    slabs = op.Concat(op.Range(zero, margin, one), op.Range(op.Add(size[0], k[0]), op.Add(op.Add(size[0], k[0]),
                                                                                        margin), one), axis=0)
    starts = op.Reshape(op.Add(op.Unsqueeze(op.Mul(op.Concat(low, slabs, axis=0), extent), old_axes),
                               op.Unsqueeze(starts, new_axis)), flat)
    ends = op.Reshape(op.Add(op.Unsqueeze(op.Mul(op.Concat(high, slabs, axis=0), extent), old_axes),
                             op.Unsqueeze(ends, new_axis)), flat)
    return op.Add(base, op.Mul(at, extent)), op.Mul(extent, op.Add(size, op.Add(k, k))), offsets, starts, ends


@helper
@script(HELPERS, default_opset=op)
def SortTapsByKey(keys, pixels, lead, padded):
    """Taps in pixel order by sorting their keys [N, T P] (from 0; S or more: outside, sorted last as S; TopK
    breaks ties by position: a fixed order).

    Returns `order` [N, padded]: the tap (plus `lead`) at each sorted place after `lead` sentinels (ids below
    `lead`, key -1: they sort first), and for each pixel the places of its run's last tap and of the tap
    before its run [N, S].
    """
    batch = op.Shape(keys, start=0, end=1)
    keys = op.Min(keys, pixels)
    all_keys = op.Concat(op.Expand(op.Constant(value_int=-1), op.Concat(batch, lead, axis=0)), keys, axis=1)
    unused, order = op.TopK(all_keys, padded, axis=1, largest=0, sorted=1)
    # pixel s's run of sorted taps ends with the taps whose keys are at most s
    counts = op.ScatterElements(op.Expand(op.Constant(value_int=0), op.Concat(batch, op.Add(pixels, 1), axis=0)),
                                keys, RepeatRow(op.Expand(op.Constant(value_int=1), op.Shape(keys, start=1)), batch),
                                axis=1, reduction="add")
    start = op.Constant(value_ints=[0])
    axis1 = op.Constant(value_ints=[1])
    last = op.Add(op.Slice(op.CumSum(counts, op.Constant(value_int=1)), start, pixels, axis1), op.Sub(lead, 1))
    return order, last, op.Sub(last, op.Slice(counts, start, pixels, axis1))


@helper
@script(HELPERS, default_opset=op)
def SortBoxTaps(base, offsets, starts, ends, extent, lead, padded):
    """SortTapsByKey's result for box taps (AddBoxAxis), sorting P points instead of P T taps.

    The points are sorted by base; a tap then knows its place without a sort of its own: its pixel's first
    place, plus the taps of earlier offsets on that pixel, plus the point's rank among the points of its base.
    A pixel's run is its taps by offset, each offset's points in base order: a fixed summation order.
    (The 3-D function spent 40% of its time in TopK over 2 M tap keys.)
    """
    batch = op.Shape(base, start=0, end=1)
    points = op.Shape(base, start=1, end=2)
    taps = op.Shape(offsets)
    zero = op.Constant(value_int=0)
    one = op.Constant(value_int=1)
    axis1 = op.Constant(value_int=1)
    unused, order = op.TopK(base, points, axis=1, largest=0, sorted=1)
    by_point = op.Concat(batch, points, axis=0)
    place = op.ScatterElements(op.Expand(zero, by_point), order, RepeatRow(op.Range(zero, points[0], one), batch),
                               axis=1)  # the inverse permutation: each point's place in base order
    counts = op.ScatterElements(op.Expand(zero, op.Concat(batch, extent, axis=0)), base, op.Expand(one, by_point),
                                axis=1, reduction="add")  # points per base
    rank = op.Sub(place, op.GatherElements(op.CumSum(counts, axis1, exclusive=1), base, axis=1))
    # the points whose tap t lands on pixel q are those of base q - offsets[t]: counts shifted, [N, T, S']
    reach = op.ReduceMax(offsets, keepdims=1)
    shifted = op.Gather(op.Concat(op.Expand(zero, op.Concat(batch, reach, axis=0)), counts, axis=1),
                        op.Add(op.Sub(op.Unsqueeze(op.Range(zero, extent[0], one), op.Constant(value_ints=[0])),
                                      op.Unsqueeze(offsets, op.Constant(value_ints=[1]))), reach), axis=1)
    earlier = op.Reshape(op.CumSum(shifted, axis1, exclusive=1), op.Concat(batch, op.Mul(taps, extent), axis=0))
    per_pixel = op.ReduceSum(shifted, op.Constant(value_ints=[1]), keepdims=0)  # [N, S']
    first = op.CumSum(per_pixel, axis1, exclusive=1)
    tap_axis = op.Constant(value_ints=[1])
    by_tap = op.Concat(batch, op.Mul(taps, points), axis=0)
    pixel = op.Add(op.Unsqueeze(base, tap_axis), op.Unsqueeze(offsets, op.Constant(value_ints=[0, 2])))  # [N, T, P]
    tap_pixel = op.Add(pixel, op.Unsqueeze(op.Mul(op.Range(zero, taps[0], one), extent), tap_axis))  # in `earlier`
    # the point's rank broadcast over its taps by the Add (an Expand first was one more pass over [N, T, P])
    places = op.Reshape(op.Add(op.Reshape(op.Add(op.GatherElements(first, op.Reshape(pixel, by_tap), axis=1),
                                                 op.GatherElements(earlier, op.Reshape(tap_pixel, by_tap), axis=1)),
                                          op.Shape(pixel)), op.Unsqueeze(op.Add(rank, lead), tap_axis)), by_tap)
    order = op.ScatterElements(RepeatRow(op.Range(zero, padded[0], one), batch), places,
                               RepeatRow(op.Range(lead[0], padded[0], one), batch), axis=1)
    last = op.Add(op.Gather(op.Add(first, per_pixel), ends, axis=1), op.Sub(lead, 1))  # of each target's keys
    return order, last, op.Add(op.Gather(first, starts, axis=1), op.Sub(lead, 1))


@helper
@script(HELPERS, default_opset=op)
def SumRuns(g_points, weights, order, last, before, lead, block):
    """The rows [N, S, C] of sum over taps of g_points[n, point] * weight at each pixel, from the taps in pixel
    order (SortTapsByKey, SortBoxTaps). g_points [N, P, C]; weights [N, T P] (tap-major: tap m is point
    m mod P). The taps' contribution rows are summed by a prefix sum, and each pixel takes the difference of
    the prefix at the two ends of its run. The prefix is kept exact in float32 by blocks: a running sum within
    blocks of `block` taps (order holds whole blocks), the blocks' totals summed in double (a float32 running
    total over P T rows would lose the digits of a pixel's short run: 1e-3 of the gradient of a sum).
    """
    batch = op.Shape(weights, start=0, end=1)
    points = op.Shape(g_points, start=1, end=2)
    channels = op.Shape(g_points, start=2, end=3)
    axis1 = op.Constant(value_ints=[1])
    item = op.Range(op.Constant(value_int=0), batch[0], op.Constant(value_int=1))
    padded = op.Shape(order, start=1, end=2)
    # each sorted place's row of g_points, looked up in a table of every id's row (a GatherElements: onnxruntime's
    # int64 Mod of the ids by P cost 3 ns an element, 3% of the 3-D function); sentinels read point 0
    zero = op.Constant(value_int=0)
    repeats = op.Div(op.Shape(weights, start=1, end=2), op.Max(points, op.Constant(value_ints=[1])))  # T
    point_of = op.Concat(op.Expand(zero, lead), op.Tile(op.Range(zero, points[0], op.Constant(value_int=1)),
                                                        repeats), axis=0)
    table = op.Add(op.Unsqueeze(point_of, op.Constant(value_ints=[0])), op.Unsqueeze(op.Mul(item, points[0]), axis1))
    point_rows = op.GatherElements(table, order, axis=1)
    all_weights = op.Concat(op.Expand(op.CastLike(0.0, weights), op.Concat(batch, lead, axis=0)), weights, axis=1)
    g_rows = op.Reshape(g_points, op.Concat(op.Mul(batch, points), channels, axis=0), allowzero=1)
    contributions = op.Mul(op.Gather(g_rows, point_rows, axis=0),
                           op.Unsqueeze(op.GatherElements(all_weights, order, axis=1), op.Constant(value_ints=[2])))
    blocks = op.Div(padded, block)
    inner = op.CumSum(op.Reshape(contributions, op.Concat(batch, blocks, block, channels, axis=0), allowzero=1),
                      op.Constant(value_int=2))  # running sums within each block
    totals = op.Cast(op.Gather(inner, op.Sub(block[0], 1), axis=2), to=onnx.TensorProto.DOUBLE)  # [N, B, C]
    outer = op.CumSum(totals, op.Constant(value_int=1), exclusive=1)  # the blocks before, in double
    # ... kept as two floats, high + low (double's digits; the pixels' gathers and sums then run in float32,
    # in parallel: a Cast from double runs on one thread in onnxruntime)
    high = op.CastLike(outer, inner)
    low = op.CastLike(op.Sub(outer, op.Cast(high, to=onnx.TensorProto.DOUBLE)), inner)
    inner_rows = op.Reshape(inner, op.Concat(op.Mul(batch, padded), channels, axis=0), allowzero=1)
    block_rows = op.Concat(op.Mul(batch, blocks), channels, axis=0)
    high_rows = op.Reshape(high, block_rows, allowzero=1)
    low_rows = op.Reshape(low, block_rows, allowzero=1)
    row_of = op.Unsqueeze(op.Mul(item, padded[0]), axis1)
    block_of = op.Unsqueeze(op.Mul(item, blocks[0]), axis1)
    within = op.Sub(op.Gather(inner_rows, op.Add(last, row_of), axis=0),
                    op.Gather(inner_rows, op.Add(before, row_of), axis=0))
    last_block = op.Add(op.Div(last, block), block_of)
    before_block = op.Add(op.Div(before, block), block_of)
    across = op.Add(op.Sub(op.Gather(high_rows, last_block, axis=0), op.Gather(high_rows, before_block, axis=0)),
                    op.Sub(op.Gather(low_rows, last_block, axis=0), op.Gather(low_rows, before_block, axis=0)))
    # the sum of every contribution: non-finite when one is (a NaN or infinite gradient, which poisons every
    # later prefix, or a block's float32 sum that overflowed): then the caller scatters instead
    return op.Add(across, within), op.ReduceSum(totals, keepdims=0)


@helper
@script(HELPERS, default_opset=op)
def AddMarginSlabs(sums, pixels, first_axis):
    """The rows [N, S, C] of the real pixels from SumRuns' rows [N, S + 2 K slab, C] for targets with margin
    slabs (AddBoxAxis, edges 2): each margin slab added onto its edge slab (the low K onto the first, the high
    K onto the last), in place on the gathered rows (a Gather runs on every thread)."""
    batch = op.Shape(sums, start=0, end=1)
    channels = op.Shape(sums, start=2, end=3)
    targets = op.Shape(sums, start=1, end=2)
    zero = op.Constant(value_int=0)
    one = op.Constant(value_int=1)
    slab = op.Div(pixels, first_axis)
    depth = op.Div(op.Sub(targets, pixels), op.Mul(slab, 2))  # K
    real = op.Gather(sums, op.Range(zero, pixels[0], one), axis=1)
    margins = op.Reshape(op.Gather(sums, op.Range(pixels[0], targets[0], one), axis=1),
                         op.Concat(batch, op.Constant(value_ints=[2]), depth, slab, channels, axis=0), allowzero=1)
    folded = op.Reshape(op.ReduceSum(margins, op.Constant(value_ints=[2]), keepdims=0),
                        op.Concat(batch, op.Mul(slab, 2), channels, axis=0), allowzero=1)
    edge = op.Concat(op.Range(zero, slab[0], one), op.Range(op.Sub(pixels[0], slab[0]), pixels[0], one), axis=0)
    where = op.Expand(op.Unsqueeze(edge, op.Constant(value_ints=[0, 2])), op.Shape(folded))
    return op.ScatterElements(real, where, folded, axis=1, reduction="add")


@helper
@script(HELPERS, default_opset=op)
def RowsToPlanes(rows, input, planes_perm: Sequence[int]):
    """input's layout [N, C, *in] and type from rows [N, S, C] of its pixels in order. planes_perm is
    [0, r - 1, 1, ..., r - 2] for input's rank r, an attribute: the Transpose then writes grad_input itself
    (a Reshape of 4-D planes to the 3-D ops' 5-D output copied it on one thread: 1.5% of their function)."""
    return op.Transpose(op.Reshape(op.CastLike(rows, input), op.Concat(
        op.Shape(input, start=0, end=1), op.Shape(input, start=2), op.Shape(rows, start=2, end=3), axis=0),
        allowzero=1), perm=planes_perm)


@helper
@script(HELPERS, default_opset=op)
def GridTapGradients(input, grad_output, flat, weight, slopes, box, base, offsets, starts, ends, extent,
                     planes_perm: Sequence[int]):
    """Both halves of a grid sampler's backward over its taps, on rows of channels as the kernels lay them out.

    input [N, C, *in] (S pixels or voxels), grad_output [N, C, *out] (P points); flat and weight
    [N, *taps, P] (T taps a point): each tap's offset in the input plane (int64, S or more where the tap
    lies outside: AxisIndex) and its weight (opmath, 0 outside). Returns grad_input (input's shape and
    type), each grad_output[n, :, p] * weight added at flat, and dot (weight's shape, opmath) = sum over c
    of input[n, c, flat] * grad_output[n, c, p], 0 at the outside taps, when `slopes` (bool) says the taps
    have slopes (bilinear, bicubic), zeros otherwise (nearest: its grid gradient is zero, as aten's).
    `box` (bool) says the taps of every point are a box of consecutive pixels, described by base, offsets,
    starts, ends and extent (AddBoxAxis).

    With several taps a point grad_input is gathered from taps sorted by pixel (SumRuns): sorting costs
    about C times less than scattering P T C values one element at a time (ScatterElements was 70% of the
    function's time), and onnxruntime's ScatterND(add) of whole rows, faster still, races on repeated rows
    at 2 threads (wrong sums in 1.19 and 1.32). Nearest (one tap a point: nothing to save) and a non-finite
    gradient (it would poison every later prefix) scatter over planes.
    """
    batch = op.Shape(input, start=0, end=1)
    channels = op.Shape(input, start=1, end=2)
    pixels = op.ReduceProd(op.Shape(input, start=2), keepdims=1)
    # an empty image has no pixel to sample, clamp or reflect onto: the run stops here, as the kernel's does
    # (a one-element Gather at index 1 fails; a function cannot say more than which node failed)
    pixels = op.Mul(pixels, op.Gather(op.Constant(value_ints=[1]),
                                      op.Cast(op.Less(pixels, 1), to=onnx.TensorProto.INT64)))
    points = op.Shape(flat, start=-1)
    per_point = op.ReduceProd(op.Shape(flat, start=1, end=-1), keepdims=1)  # T
    zero = op.CastLike(0.0, weight)
    # explicit shapes and allowzero throughout: an empty batch or channel axis reshapes to empty, not fails
    g_planes = op.Reshape(ToOpmath(grad_output), op.Concat(batch, channels, points, axis=0), allowzero=1)
    # [N, T P]; outside: S or more (clamped to the spare pixel S only where sorted or scattered: a Min over every
    # tap cost 1% of the 3-D function)
    keys = op.Reshape(flat, op.Concat(batch, op.Mul(points, per_point), axis=0), allowzero=1)
    if slopes:
        g_points = op.Transpose(g_planes, perm=[0, 2, 1])  # [N, P, C]
        weights = op.Reshape(weight, op.Shape(keys), allowzero=1)
        block = op.Constant(value_ints=[32])
        taps = op.Shape(keys, start=1, end=2)
        padded = op.Mul(op.Add(op.Div(taps, block), 1), block)  # whole blocks after `lead` sentinels,
        lead = op.Sub(padded, taps)  # at least 1: the prefix before every run is a real row
        # box taps when the extended image is at most twice the points: SortBoxTaps keeps [N, T, S'] counts,
        # as large as the tap keys then (a small grid over a large image sorts its few taps instead)
        if op.And(box, op.And(op.Greater(points[0], 0), op.LessOrEqual(extent[0], op.Mul(points[0], 2)))):
            order, last, before = SortBoxTaps(base, offsets, starts, ends, extent, lead, padded)
        else:
            order, last, before = SortTapsByKey(keys, pixels, lead, padded)
        sums, total = SumRuns(g_points, weights, order, last, before, lead, block)
        if op.Or(op.IsNaN(total), op.IsInf(total)):
            contributions = op.Reshape(op.Mul(op.Unsqueeze(g_planes, op.Constant(value_ints=[2])), op.Unsqueeze(
                op.Reshape(weights, op.Concat(batch, per_point, points, axis=0), allowzero=1), op.Constant(
                    value_ints=[1]))), op.Concat(batch, channels, op.Shape(keys, start=1), axis=0), allowzero=1)
            grad_input = ScatterIntoImage(contributions, keys, input)
        else:  # grad_input transposed from the rows
            if op.Greater(op.Shape(sums, start=1, end=2)[0], pixels[0]):  # margin targets: bicubic's border
                grad_input = RowsToPlanes(AddMarginSlabs(sums, pixels, op.Shape(input, start=2, end=3)), input,
                                          planes_perm=planes_perm)
            else:
                grad_input = RowsToPlanes(sums, input, planes_perm=planes_perm)
        # the grid gradient's dot: rows [N S, C] of the image gathered at each point's taps [N, P, T] (an outside
        # tap reads the last pixel, and its dot is then set to 0: a Where on [N, P, T] costs less than a Concat
        # of a zero row onto the image), times the point's gradient row
        item = op.Range(op.Constant(value_int=0), batch[0], op.Constant(value_int=1))
        image_rows = op.Reshape(op.Transpose(op.Reshape(ToOpmath(input), op.Concat(batch, channels, pixels, axis=0),
                                                        allowzero=1), perm=[0, 2, 1]),
                                op.Concat(op.Mul(batch, pixels), channels, axis=0), allowzero=1)
        by_point = op.Transpose(op.Reshape(keys, op.Concat(batch, per_point, points, axis=0), allowzero=1),
                                perm=[0, 2, 1])
        rows = op.Add(op.Min(by_point, op.Sub(pixels, 1)),
                      op.Unsqueeze(op.Mul(item, pixels), op.Constant(value_ints=[1, 2])))
        read = op.Gather(image_rows, rows, axis=0)  # [N, P, T, C]
        products = op.Squeeze(op.MatMul(read, op.Unsqueeze(g_points, op.Constant(value_ints=[3]))),
                              op.Constant(value_ints=[3]))  # [N, P, T]
        dot = op.Reshape(op.Transpose(op.Where(op.Less(by_point, pixels), products, zero), perm=[0, 2, 1]),
                         op.Shape(weight), allowzero=1)
    else:  # nearest: weight 1 where inside, and the outside taps land on the spare pixel
        grad_input = ScatterIntoImage(g_planes, keys, input)
        dot = op.Expand(zero, op.Shape(weight))
    # (each branch casts before its last reshape or slice: onnxruntime drops a float-to-float Cast unless it
    # writes a graph output)
    return grad_input, dot
