"""onnxscript building blocks of the grid samplers: aten's GridSampler.h coordinate rules per axis.

The twins of _coords.py, vectorised over tensors of grid coordinates (in the body's arithmetic type:
_script.ToOpmath).
"""
from __future__ import annotations

import onnx
from onnxscript import opset18 as op
from onnxscript import script

from ._script import HELPERS, helper
from ._script_taps import CubicCoefficients


@helper
@script(HELPERS, default_opset=op)
def Unnormalize(coord, size, align_corners):
    """grid_sampler_unnormalize_set_grad: [-1, 1] to pixels and d(pixel)/d(grid); size, align_corners doubles."""
    aligned = op.Mul(op.Div(op.Add(coord, 1.0), 2.0), op.Sub(size, 1.0))
    centred = op.Div(op.Sub(op.Mul(op.Add(coord, 1.0), size), 1.0), 2.0)
    use_aligned = op.Cast(align_corners, to=onnx.TensorProto.BOOL)
    pixel = op.Where(use_aligned, aligned, centred)
    mult = op.Where(use_aligned, op.Div(op.Sub(size, 1.0), 2.0), op.Div(size, 2.0))
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
    grad = op.Where(op.Or(low, high), zero, op.CastLike(1.0, coord))
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
    one = op.CastLike(1.0, coord)
    sign = op.Where(op.Less(shifted, 0.0), op.Neg(one), one)
    rest = op.Mod(op.Abs(shifted), op.Mul(span, 2.0), fmod=1)
    flipped = op.GreaterOrEqual(rest, span)
    reflected = op.Add(op.Where(flipped, op.Sub(op.Mul(span, 2.0), rest), rest), low)
    grad = op.Where(flipped, op.Neg(sign), sign)
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
    """compute_coordinates with its gradient; padding is 0 zeros, 1 border, 2 reflection (int64 scalar)."""
    clipped, clip_grad = ClipCoordinates(coord, size)
    reflected, reflect_grad = ReflectCoordinates(coord, size, align_corners)
    reflected_clipped, reflected_clip_grad = ClipCoordinates(reflected, size)
    is_border = op.Equal(padding, 1)
    is_reflection = op.Equal(padding, 2)
    one = op.CastLike(1.0, coord)
    padded = op.Where(is_border, clipped, op.Where(is_reflection, reflected_clipped, coord))
    grad = op.Where(is_border, clip_grad, op.Where(is_reflection, op.Mul(reflect_grad, reflected_clip_grad), one))
    return SafeDowngrade(padded), grad


@helper
@script(HELPERS, default_opset=op)
def AxisTaps(coord, size, align_corners, padding, interpolation):
    """The taps of one axis for every grid point: pixel positions [.., K], weights, d weight/d pixel, d pixel/d grid.

    interpolation: 0 bilinear (K=2), 1 nearest (K=1), 2 bicubic (K=4). Bilinear and
    nearest pad the coordinate, bicubic pads every tap (as aten).
    """
    pixel, mult = Unnormalize(coord, size, align_corners)
    last = op.Constant(value_ints=[-1])
    if op.Equal(interpolation, 2):
        finite = op.Not(op.Or(op.IsNaN(pixel), op.IsInf(pixel)))  # a non-finite point reads nothing
        zero = op.CastLike(0.0, pixel)
        safe = op.Where(finite, pixel, zero)
        base = op.Floor(safe)
        coeffs, coeff_grads = CubicCoefficients(op.Sub(safe, base))
        offsets = op.CastLike(op.Constant(value_floats=[-1.0, 0.0, 1.0, 2.0]), pixel)
        taps, unused = ApplyPadding(op.Add(op.Unsqueeze(base, last), offsets), size, padding, align_corners)
        finite_taps = op.Unsqueeze(finite, last)
        weights = op.Where(finite_taps, coeffs, zero)
        slopes = op.Where(finite_taps, op.Neg(coeff_grads), zero)
        scale = mult
    else:
        padded, pad_grad = ApplyPadding(pixel, size, padding, align_corners)
        scale = op.Mul(mult, pad_grad)
        if op.Equal(interpolation, 1):
            taps = op.Unsqueeze(op.Round(padded), last)
            weights = op.Unsqueeze(op.CastLike(op.Expand(1.0, op.Shape(padded)), padded), last)
            slopes = op.Sub(weights, weights)
        else:
            low = op.Floor(padded)
            high = op.Add(low, 1.0)
            taps = op.Concat(op.Unsqueeze(low, last), op.Unsqueeze(high, last), axis=-1)
            weights = op.Concat(op.Unsqueeze(op.Sub(high, padded), last), op.Unsqueeze(op.Sub(padded, low), last), axis=-1)
            # d weight / d pixel: -1 for the low tap, +1 for the high one, broadcast over the points
            slopes = op.Add(op.Sub(weights, weights), op.CastLike(op.Constant(value_floats=[-1.0, 1.0]), weights))
    return taps, weights, slopes, scale


@helper
@script(HELPERS, default_opset=op)
def InRange(taps, size):
    """Which tap positions lie in [0, size - 1] (size in the taps' type)."""
    return op.And(op.GreaterOrEqual(taps, op.CastLike(0.0, taps)), op.LessOrEqual(taps, op.Sub(size, 1.0)))


@helper
@script(HELPERS, default_opset=op)
def TapIndex(taps, inside):
    """Tap positions as int64, 0 where outside (an outside position may be huge or NaN)."""
    return op.Cast(op.Where(inside, taps, op.CastLike(0.0, taps)), to=onnx.TensorProto.INT64)


@helper
@script(HELPERS, default_opset=op)
def ScatterGatherTaps(image, g_out, flat, weight, slopes):
    """Both halves of a grid sampler's backward over its taps, channels last as the kernels lay them out.

    image [N, C, S] (S pixels or voxels), g_out [N, C, P], flat [N, P, T] (each point's T tap positions in
    [0, S), 0 where a tap lies outside) and weight [N, P, T] (0 outside). Returns grad_image [N, C, S], each
    g_out[n, :, p] * weight[n, p, t] added at flat[n, p, t], and dot [N, P, T] = sum over c of
    image[n, c, flat[n, p, t]] * g_out[n, c, p] when `slopes` (bool) says the taps have slopes, zeros
    otherwise (nearest: its grid gradient is zero, as aten's). Image and gradient move to rows of C
    channels for the gather (a Gather of whole rows); the scatter stays on planes (below).
    """
    batch = op.Shape(image, start=0, end=1)
    channels = op.Shape(image, start=1, end=2)
    pixels = op.Shape(image, start=2, end=3)
    # explicit shapes and allowzero throughout: an empty batch or channel axis reshapes to empty, not fails
    # grad_image by ScatterElements over planes [N, C, S], in order: onnxruntime's ScatterND(add) of whole rows
    # races on repeated rows at 2 threads (1.19 and 1.32 gave wrong sums), so rows are only gathered
    per_item = op.ReduceProd(op.Shape(flat, start=1), keepdims=1)  # P T
    plane_taps = op.Concat(batch, channels, per_item, axis=0)
    index = op.Expand(op.Reshape(flat, op.Concat(batch, op.Constant(value_ints=[1]), per_item, axis=0), allowzero=1),
                      plane_taps)
    contribution = op.Reshape(op.Mul(op.Unsqueeze(g_out, op.Constant(value_ints=[3])),
                                     op.Unsqueeze(weight, op.Constant(value_ints=[1]))), plane_taps, allowzero=1)
    grad_image = op.ScatterElements(op.Expand(op.CastLike(0.0, image), op.Shape(image)), index, contribution,
                                    axis=2, reduction="add")
    if slopes:  # the rows only the grid gradient reads: nearest skips them
        taps = op.ReduceProd(op.Shape(flat), keepdims=1)  # N P T
        rows_shape = op.Concat(op.Mul(batch, pixels), channels, axis=0)
        image_rows = op.Reshape(op.Transpose(image, perm=[0, 2, 1]), rows_shape, allowzero=1)  # [N S, C]
        g_rows = op.Unsqueeze(op.Transpose(g_out, perm=[0, 2, 1]), op.Constant(value_ints=[2]))  # [N, P, 1, C]
        first = op.Mul(op.Range(op.Constant(value_int=0), batch[0], op.Constant(value_int=1)), pixels[0])
        rows = op.Reshape(op.Add(flat, op.Unsqueeze(first, op.Constant(value_ints=[1, 2]))), taps,
                          allowzero=1)  # the row in [N S, C] of each tap
        values = op.Reshape(op.Gather(image_rows, rows, axis=0),
                            op.Concat(op.Shape(flat), channels, axis=0), allowzero=1)  # [N, P, T, C]
        dot = op.ReduceSum(op.Mul(values, g_rows), op.Constant(value_ints=[3]), keepdims=0)
    else:
        dot = op.Expand(op.CastLike(0.0, image), op.Shape(flat))
    return grad_image, dot
