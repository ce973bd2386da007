"""GridSampler2DGrad: gradients of grid_sample with respect to input and grid.

Implements aten::grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler2DBackward, GE op GridSampler2DGrad). Outputs are optional: an output a node does
not name is not computed (the aclnn outputMask).
"""
from __future__ import annotations

import onnx
from onnxscript import opset18 as op
from onnxscript import script

from resample_grad.constants import INTERPOLATION_MODES

from ._common import ReferenceOp
from ._grid_sampler import GridSamplerSpec
from ._script import OPSET, ToOpmath, finish_bodies, ml
from ._script_grid import AddBoxAxis, AxisIndex, AxisTaps, BoxKeysStart, GridTapGradients

OP_TYPE = "GridSampler2DGrad"
SPEC = GridSamplerSpec(OP_TYPE, since_version=1, spatial=2, inputs=("grad_output", "input", "grid"),
                       outputs=("grad_input", "grad_grid"), modes=INTERPOLATION_MODES)
SCHEMA = SPEC.schema(
    "Gradients of grid_sample (aten::grid_sampler_2d_backward) with respect to input and grid. The grid "
    "holds (x, y) in [-1, 1]; outputs a node leaves unnamed are not computed. A grid point whose coordinate "
    "is NaN contributes nothing and gets a zero grid gradient.")


def grid_sampler_2d_grad(grad_output, input, grid, interpolation_mode="bilinear", padding_mode="zeros",
                         align_corners=0, output_mask=(True, True)):
    """(grad_input, grad_grid), None for an output masked off."""
    return SPEC.reference(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)


class GridSampler2DGrad(ReferenceOp):
    def _run(self, grad_output, input, grid, interpolation_mode=None, padding_mode=None, align_corners=None):
        names = list(self.onnx_node.output)
        wanted = [i < len(names) and names[i] != "" for i in range(2)]
        results = grid_sampler_2d_grad(grad_output, input, grid, _str(interpolation_mode, "bilinear"),
                                       _str(padding_mode, "zeros"), int(align_corners or 0), output_mask=wanted)
        # an output the node does not name is not computed; the evaluator still wants an array in its slot
        return tuple(r if r is not None else grad_output[:0] for r in results[:len(names)])


def _str(value, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------- onnxscript function

@script(OPSET, default_opset=op)
def _function(grad_output, input, grid, interpolation_mode: str = "bilinear", padding_mode: str = "zeros",
              align_corners: int = 0):
    """Per-axis taps; both gradients from rows of channels (_script_grid.GridTapGradients)."""
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
        height = ToOpmath(op.Shape(input, start=2, end=3))
        width = ToOpmath(op.Shape(input, start=3, end=4))
        points = op.ReduceProd(op.Shape(grid, start=1, end=3), keepdims=1)

        # explicit sizes and allowzero: an empty batch or channel axis must reshape to empty, not fail
        coords = op.Reshape(ToOpmath(grid), op.Concat(batch, points, op.Constant(value_ints=[2]), axis=0),
                            allowzero=1)
        tx, wx, sx, mult_x, fx = AxisTaps(op.Gather(coords, 0, axis=2), width, corners, padding, interpolation)
        ty, wy, sy, mult_y, fy = AxisTaps(op.Gather(coords, 1, axis=2), height, corners, padding, interpolation)

        # every (x tap, y tap, point): [N, Kx, Ky, P]
        col = op.Constant(value_ints=[2])
        row = op.Constant(value_ints=[1])
        # per-axis bounds and int64 offsets first (small; int64: a float32 flat index is inexact past 2^24
        # pixels), then one broadcast each over [N, Kx, Ky, P]
        ix, wx = AxisIndex(tx, wx, width, op.ReduceProd(op.Shape(input, start=2, end=4), keepdims=1))
        iy, wy = AxisIndex(ty, wy, height, op.Shape(input, start=2, end=3))
        flat = op.Add(op.Unsqueeze(op.Mul(iy, op.Shape(input, start=3, end=4)), row), op.Unsqueeze(ix, col))
        weight = op.Mul(op.Unsqueeze(wx, col), op.Unsqueeze(wy, row))
        slope_x = op.Mul(op.Unsqueeze(sx, col), op.Unsqueeze(wy, row))
        slope_y = op.Mul(op.Unsqueeze(wx, col), op.Unsqueeze(sy, row))
        # bicubic's border: x's margin joins the edge pixels' runs, y's margin rows are added onto the edge rows
        box, fold, base, extent, offsets, starts, ends = BoxKeysStart(interpolation, padding)
        edges = op.Cast(fold, to=onnx.TensorProto.INT64)
        base, extent, offsets, starts, ends = AddBoxAxis(base, extent, offsets, starts, ends, tx, fx,
                                                         op.Shape(input, start=3, end=4), edges)
        base, extent, offsets, starts, ends = AddBoxAxis(base, extent, offsets, starts, ends, ty, fy,
                                                         op.Shape(input, start=2, end=3), op.Mul(edges, 2))
        grad_input, dot = GridTapGradients(input, grad_output, flat, weight, op.Not(op.Equal(interpolation, 1)), box,
                                           base, offsets, starts, ends, extent, planes_perm=[0, 3, 1, 2])
        tap_axes = op.Constant(value_ints=[1, 2])
        last = op.Constant(value_ints=[-1])
        gix = op.Mul(op.ReduceSum(op.Mul(dot, slope_x), tap_axes, keepdims=0), mult_x)
        giy = op.Mul(op.ReduceSum(op.Mul(dot, slope_y), tap_axes, keepdims=0), mult_y)
        grad_grid = op.Concat(op.Unsqueeze(gix, last), op.Unsqueeze(giy, last), axis=-1)
        grad_grid = op.CastLike(op.Reshape(grad_grid, op.Shape(grid), allowzero=1), grid)
    return grad_input, grad_grid


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, ["grad_input", "grad_grid"])
