"""GridSampler2DGrad: gradients of grid_sample with respect to input and grid.

Implements aten::grid_sampler_2d_backward (aclnnGridSampler2DBackward, GE op
GridSampler2DGrad). Outputs are optional: an output a node does not name is not
computed (the aclnn outputMask).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from onnxscript import opset18 as op
from onnxscript import script

from . import _coords
from ._script import DOUBLE, INT64, OPSET, AxisTaps, finish, ml
from ._common import (
    ResampleGradError, attribute_value, check_bool_attr, check_choice_attr, check_dim_equal, check_float_dtypes,
    check_rank, compute_dtype, input_elem_type, input_shape, make_schema, make_tensor_type,
)

OP_TYPE = "GridSampler2DGrad"
INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


# --------------------------------------------------------------------------- checks

def validate(interpolation_mode: str, padding_mode: str, align_corners: int,
             grad_output: Optional[Sequence], input: Optional[Sequence], grid: Optional[Sequence]) -> None:
    """The aclnn 161002 list: ranks, modes, matching dims, non-empty input image, grid last dim 2.

    Shapes may be None (unknown rank) or hold None for a symbolic dimension.
    """
    op = OP_TYPE
    check_choice_attr(op, "interpolation_mode", interpolation_mode, INTERPOLATION_MODES)
    check_choice_attr(op, "padding_mode", padding_mode, PADDING_MODES)
    check_bool_attr(op, "align_corners", align_corners)
    if grad_output is not None:
        check_rank(op, "grad_output", grad_output, 4, "[N, C, H_out, W_out]")
    if input is not None:
        check_rank(op, "input", input, 4, "[N, C, H_in, W_in]")
        for axis, name in ((2, "H_in"), (3, "W_in")):
            if input[axis] is not None and input[axis] <= 0:
                raise ResampleGradError(op, f"input 'input' must have a positive {name} (dimension {axis}), got shape {list(input)}")
    if grid is not None:
        check_rank(op, "grid", grid, 4, "[N, H_out, W_out, 2]")
        if grid[3] is not None and grid[3] != 2:
            raise ResampleGradError(op, f"input 'grid' must have last dimension 2 (x, y), got shape {list(grid)}")
    if input is not None and grid is not None:
        check_dim_equal(op, "grid", 0, grid[0], "input", 0, input[0])
    if input is not None and grad_output is not None:
        check_dim_equal(op, "grad_output", 0, grad_output[0], "input", 0, input[0])
        check_dim_equal(op, "grad_output", 1, grad_output[1], "input", 1, input[1])
    if grid is not None and grad_output is not None:
        check_dim_equal(op, "grad_output", 0, grad_output[0], "grid", 0, grid[0])
        check_dim_equal(op, "grad_output", 2, grad_output[2], "grid", 1, grid[1])
        check_dim_equal(op, "grad_output", 3, grad_output[3], "grid", 2, grid[2])


# --------------------------------------------------------------------------- reference

def _taps(ix, iy, mult_x, mult_y, size_h, size_w, interpolation_mode, padding_mode, align_corners):
    """The input pixels one grid point reads: (x, y, weight, d weight/d ix, d weight/d iy) per tap.

    Coordinates are pixel units after padding (bilinear, nearest) or before it
    (bicubic pads each tap, as aten does). Weights of taps outside the image are
    dropped by the caller.
    """
    one = ix.dtype.type(1)
    if interpolation_mode == "nearest":
        zero = np.zeros_like(ix)
        return [(np.rint(ix), np.rint(iy), np.ones_like(ix), zero, zero)]
    if interpolation_mode == "bilinear":
        x0, y0 = np.floor(ix), np.floor(iy)
        x1, y1 = x0 + one, y0 + one
        wx0, wx1, wy0, wy1 = x1 - ix, ix - x0, y1 - iy, iy - y0
        return [
            (x0, y0, wx0 * wy0, -wy0, -wx0),
            (x1, y0, wx1 * wy0, wy0, -wx1),
            (x0, y1, wx0 * wy1, -wy1, wx0),
            (x1, y1, wx1 * wy1, wy1, wx1),
        ]
    # bicubic: 4x4 taps around floor(ix), floor(iy); each tap coordinate is padded.
    finite = np.isfinite(ix) & np.isfinite(iy)
    ix, iy = np.where(finite, ix, 0), np.where(finite, iy, 0)  # a non-finite point reads nothing
    x0, y0 = np.floor(ix), np.floor(iy)
    cx, gx = _coords.cubic_coefficients(ix - x0)
    cy, gy = _coords.cubic_coefficients(iy - y0)
    taps = []
    for j in range(4):
        ty, _ = _coords.apply_padding(y0 + (j - 1), size_h, padding_mode, align_corners)
        for i in range(4):
            tx, _ = _coords.apply_padding(x0 + (i - 1), size_w, padding_mode, align_corners)
            weight = np.where(finite, cx[i] * cy[j], 0)
            taps.append((tx, ty, weight, np.where(finite, -gx[i] * cy[j], 0), np.where(finite, -gy[j] * cx[i], 0)))
    return taps


def grid_sampler_2d_grad(grad_output: np.ndarray, input: np.ndarray, grid: np.ndarray,
                         interpolation_mode: str = "bilinear", padding_mode: str = "zeros",
                         align_corners: int = 0, output_mask=(True, True)):
    """aten::grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
    align_corners, output_mask) -> (Tensor, Tensor), in NumPy. Returns (grad_input, grad_grid),
    None for an output masked off."""
    dtype = check_float_dtypes(OP_TYPE, grad_output=grad_output, input=input, grid=grid)
    validate(interpolation_mode, padding_mode, int(align_corners), grad_output.shape, input.shape, grid.shape)
    acc = compute_dtype(dtype)
    n, c, h_in, w_in = input.shape
    _, h_out, w_out, _ = grid.shape
    g_out = grad_output.astype(acc).reshape(n, c, h_out * w_out)
    image = input.astype(acc).reshape(n, c, h_in * w_in)
    g = grid.astype(acc).reshape(n, h_out * w_out, 2)

    with np.errstate(invalid="ignore", over="ignore"):
        if interpolation_mode == "bicubic":  # bicubic pads each tap, not the point
            ix, mult_x = _coords.unnormalize(g[..., 0], w_in, bool(align_corners))
            iy, mult_y = _coords.unnormalize(g[..., 1], h_in, bool(align_corners))
        else:
            ix, mult_x = _coords.source_index(g[..., 0], w_in, padding_mode, bool(align_corners))
            iy, mult_y = _coords.source_index(g[..., 1], h_in, padding_mode, bool(align_corners))
        taps = _taps(ix, iy, mult_x, mult_y, h_in, w_in, interpolation_mode, padding_mode, bool(align_corners))

    grad_input = np.zeros((n, c, h_in * w_in), acc) if output_mask[0] else None
    gix = np.zeros((n, h_out * w_out), acc)
    giy = np.zeros((n, h_out * w_out), acc)
    batch = np.broadcast_to(np.arange(n)[:, None], ix.shape)
    for tx, ty, weight, dx, dy in taps:
        inside = (tx >= 0) & (tx <= w_in - 1) & (ty >= 0) & (ty <= h_in - 1)
        flat = np.where(inside, ty * w_in + tx, 0).astype(np.int64)
        if grad_input is not None:
            # grad_input[b, :, flat] += weight * grad_output[b, :, point], for the points inside
            np.add.at(grad_input, (batch[inside], slice(None), flat[inside]),
                      (g_out * weight[:, None, :]).transpose(0, 2, 1)[inside])
        if output_mask[1] and interpolation_mode != "nearest":
            value = np.take_along_axis(image, np.broadcast_to(flat[:, None, :], g_out.shape), axis=2)
            dot = np.where(inside, (value * g_out).sum(axis=1), 0)
            gix += dot * dx
            giy += dot * dy

    out_input = grad_input.reshape(input.shape).astype(dtype) if grad_input is not None else None
    out_grid = None
    if output_mask[1]:
        out_grid = np.stack([gix * mult_x, giy * mult_y], axis=-1).reshape(grid.shape).astype(dtype)
    return out_input, out_grid


# --------------------------------------------------------------------------- schema

def _infer(ctx):
    grid = input_shape(ctx, 2)
    image = input_shape(ctx, 1)
    validate(attribute_value(ctx, "interpolation_mode", "bilinear"), attribute_value(ctx, "padding_mode", "zeros"),
             attribute_value(ctx, "align_corners", 0), input_shape(ctx, 0), image, grid)
    if ctx.has_output(0):
        ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 1), image))
    if ctx.has_output(1):
        ctx.set_output_type(1, make_tensor_type(input_elem_type(ctx, 2), grid))


SCHEMA = make_schema(
    OP_TYPE,
    "Gradients of grid_sample (aten::grid_sampler_2d_backward) with respect to input and grid. The grid "
    "holds (x, y) in [-1, 1]; outputs a node leaves unnamed are not computed. A grid point whose coordinate "
    "is NaN contributes nothing and gets a zero grid gradient.",
    inputs=[("grad_output", "Gradient of the sampled output, [N, C, H_out, W_out].", False),
            ("input", "The forward input image, [N, C, H_in, W_in]; H_in and W_in > 0.", False),
            ("grid", "The forward sampling grid, [N, H_out, W_out, 2], x then y, normalised to [-1, 1].", False)],
    outputs=[("grad_input", "Gradient of input, shaped like input. Optional.", True),
             ("grad_grid", "Gradient of grid, shaped like grid (zero in nearest mode). Optional.", True)],
    attributes=[
        ("interpolation_mode", "bilinear", "'bilinear' (default), 'nearest' (round half to even) or 'bicubic' (A = -0.75)."),
        ("padding_mode", "zeros", "'zeros' (default), 'border' or 'reflection': how points outside the image read."),
        ("align_corners", 0, "1: -1 and 1 are the centres of the corner pixels; 0 (default): their outer edges."),
    ],
    infer=_infer,
)


# --------------------------------------------------------------------------- onnxscript function

@script(OPSET, default_opset=op)
def _function(grad_output, input, grid, interpolation_mode: str = "bilinear", padding_mode: str = "zeros",
              align_corners: int = 0):
    """Per-axis taps, one ScatterElements(add) for grad_input, one GatherElements for grad_grid; in double."""
    # an empty batch or channel axis gives zeros (onnxruntime's GatherElements refuses empty index shapes)
    if op.Equal(op.ReduceProd(op.Shape(input, start=0, end=2), keepdims=0), op.Constant(value_int=0)):
        grad_input = op.CastLike(op.Expand(op.Constant(value_float=0.0), op.Shape(input)), input)
        grad_grid = op.CastLike(op.Expand(op.Constant(value_float=0.0), op.Shape(grid)), grid)
    else:
        interpolation = ml.LabelEncoder(op.Constant(value_string=interpolation_mode), default_int64=-1,
                                        keys_strings=["bilinear", "nearest", "bicubic"], values_int64s=[0, 1, 2])
        padding = ml.LabelEncoder(op.Constant(value_string=padding_mode), default_int64=-1,
                                  keys_strings=["zeros", "border", "reflection"], values_int64s=[0, 1, 2])
        corners = op.Constant(value_int=align_corners)
        batch = op.Shape(input, start=0, end=1)
        channels = op.Shape(input, start=1, end=2)
        height = op.Cast(op.Shape(input, start=2, end=3), to=DOUBLE)
        width = op.Cast(op.Shape(input, start=3, end=4), to=DOUBLE)
        points = op.ReduceProd(op.Shape(grid, start=1, end=3), keepdims=1)
        pixels = op.ReduceProd(op.Shape(input, start=2, end=4), keepdims=1)

        # explicit sizes and allowzero: an empty batch or channel axis must reshape to empty, not fail
        coords = op.Reshape(op.Cast(grid, to=DOUBLE), op.Concat(batch, points, op.Constant(value_ints=[2]), axis=0),
                            allowzero=1)
        tx, wx, sx, mult_x = AxisTaps(op.Gather(coords, 0, axis=2), width, corners, padding, interpolation)
        ty, wy, sy, mult_y = AxisTaps(op.Gather(coords, 1, axis=2), height, corners, padding, interpolation)

        # every (point, x tap, y tap): [N, P, Kx, Ky]
        col = op.Constant(value_ints=[-1])
        row = op.Constant(value_ints=[-2])
        px = op.Unsqueeze(tx, col)
        py = op.Unsqueeze(ty, row)
        zero = op.CastLike(0.0, px)
        inside = op.And(op.And(op.GreaterOrEqual(px, zero), op.LessOrEqual(px, op.Sub(width, 1.0))),
                        op.And(op.GreaterOrEqual(py, zero), op.LessOrEqual(py, op.Sub(height, 1.0))))
        flat = op.Cast(op.Where(inside, op.Add(op.Mul(py, width), px), zero), to=INT64)
        weight = op.Where(inside, op.Mul(op.Unsqueeze(wx, col), op.Unsqueeze(wy, row)), zero)
        slope_x = op.Mul(op.Unsqueeze(sx, col), op.Unsqueeze(wy, row))
        slope_y = op.Mul(op.Unsqueeze(wx, col), op.Unsqueeze(sy, row))

        # planes [N, C, H*W]; taps flattened to [N, C, P*Kx*Ky] in (point, x tap, y tap) order
        taps = op.ReduceProd(op.Shape(weight, start=1), keepdims=1)
        image = op.Reshape(op.Cast(input, to=DOUBLE), op.Concat(batch, channels, pixels, axis=0), allowzero=1)
        index = op.Expand(op.Unsqueeze(op.Reshape(flat, op.Concat(batch, taps, axis=0), allowzero=1),
                                       op.Constant(value_ints=[1])),
                          op.Concat(batch, channels, op.Constant(value_ints=[1]), axis=0))
        g_out = op.Reshape(op.Cast(grad_output, to=DOUBLE),
                           op.Concat(batch, channels, points, op.Constant(value_ints=[1, 1]), axis=0), allowzero=1)
        taps_shape = op.Concat(batch, channels, op.Shape(weight, start=1), axis=0)

        contribution = op.Reshape(op.Mul(g_out, op.Unsqueeze(weight, op.Constant(value_ints=[1]))),
                                  op.Concat(batch, channels, taps, axis=0), allowzero=1)
        grad_input = op.ScatterElements(op.Expand(zero, op.Shape(image)), index, contribution, axis=2, reduction="add")
        grad_input = op.CastLike(op.Reshape(grad_input, op.Shape(input), allowzero=1), input)

        values = op.Reshape(op.GatherElements(image, index, axis=2), taps_shape, allowzero=1)
        dot = op.Where(inside, op.ReduceSum(op.Mul(values, g_out), op.Constant(value_ints=[1]), keepdims=0), zero)
        tap_axes = op.Constant(value_ints=[2, 3])
        gix = op.Mul(op.ReduceSum(op.Mul(dot, slope_x), tap_axes, keepdims=0), mult_x)
        giy = op.Mul(op.ReduceSum(op.Mul(dot, slope_y), tap_axes, keepdims=0), mult_y)
        grad_grid = op.Concat(op.Unsqueeze(gix, col), op.Unsqueeze(giy, col), axis=-1)
        grad_grid = op.CastLike(op.Reshape(grad_grid, op.Shape(grid), allowzero=1), grid)
    return grad_input, grad_grid


FUNCTION = finish(_function, OP_TYPE, ["grad_input", "grad_grid"])
