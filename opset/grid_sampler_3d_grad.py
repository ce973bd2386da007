"""GridSampler3DGrad: gradients of 5-D grid_sample with respect to the volume and the grid.

Implements aten::grid_sampler_3d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler3DBackward, GE op GridSampler3DGrad: inputs grad, x, grid; outputs dx, dgrid).
Modes bilinear (trilinear: 8 taps) and nearest, as torch and CANN; paddings zeros, border,
reflection. Outputs are optional: an output a node does not name is not computed.
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from resample_grad.constants import INTERPOLATION_MODES_3D

from ._common import ReferenceOp
from ._grid_sampler import GridSamplerSpec
from ._script import OPSET, ToOpmath, finish_bodies, ml
from ._script_grid import AddBoxAxis, AxisIndex, AxisTaps, BoxKeysStart, GridTapGradients
from .grid_sampler_2d_grad import _str

OP_TYPE = "GridSampler3DGrad"
SPEC = GridSamplerSpec(OP_TYPE, since_version=2, spatial=3, inputs=("grad", "x", "grid"), outputs=("dx", "dgrid"),
                       modes=INTERPOLATION_MODES_3D)
SCHEMA = SPEC.schema(
    "Gradients of 5-D grid_sample (aten::grid_sampler_3d_backward) with respect to the volume x and the grid. The "
    "grid holds (x, y, z) in [-1, 1] (x indexes W, z indexes D); outputs a node leaves unnamed are not computed. A "
    "grid point whose coordinate is NaN contributes nothing and gets a zero grid gradient.")


def grid_sampler_3d_grad(grad, x, grid, interpolation_mode="bilinear", padding_mode="zeros", align_corners=0,
                         output_mask=(True, True)):
    """(dx, dgrid), None for an output masked off."""
    return SPEC.reference(grad, x, grid, interpolation_mode, padding_mode, align_corners, output_mask)


class GridSampler3DGrad(ReferenceOp):
    def _run(self, grad, x, grid, interpolation_mode=None, padding_mode=None, align_corners=None):
        names = list(self.onnx_node.output)
        wanted = [i < len(names) and names[i] != "" for i in range(2)]
        results = grid_sampler_3d_grad(grad, x, grid, _str(interpolation_mode, "bilinear"), _str(padding_mode, "zeros"),
                                       int(align_corners or 0), output_mask=wanted)
        return tuple(r if r is not None else grad[:0] for r in results[:len(names)])


@script(OPSET, default_opset=op)
def _function(grad, x, grid, interpolation_mode: str = "bilinear", padding_mode: str = "zeros", align_corners: int = 0):
    """Per-axis taps; both gradients from rows of channels (_script_grid.GridTapGradients)."""
    if op.Equal(op.ReduceProd(op.Shape(x, start=0, end=2), keepdims=0), op.Constant(value_int=0)):
        dx = op.CastLike(op.Expand(op.Constant(value_float=0.0), op.Shape(x)), x)
        dgrid = op.CastLike(op.Expand(op.Constant(value_float=0.0), op.Shape(grid)), grid)
    else:
        interpolation = ml.LabelEncoder(op.Constant(value_string=interpolation_mode), default_int64=-1,
                                        keys_strings=["bilinear", "nearest"], values_int64s=[0, 1])
        padding = ml.LabelEncoder(op.Constant(value_string=padding_mode), default_int64=-1,
                                  keys_strings=["zeros", "border", "reflection"], values_int64s=[0, 1, 2])
        corners = op.Constant(value_int=align_corners)
        batch = op.Shape(x, start=0, end=1)
        depth = ToOpmath(op.Shape(x, start=2, end=3))
        height = ToOpmath(op.Shape(x, start=3, end=4))
        width = ToOpmath(op.Shape(x, start=4, end=5))
        points = op.ReduceProd(op.Shape(grid, start=1, end=4), keepdims=1)

        coords = op.Reshape(ToOpmath(grid), op.Concat(batch, points, op.Constant(value_ints=[3]), axis=0),
                            allowzero=1)
        tx, wx, sx, mult_x, fx = AxisTaps(op.Gather(coords, 0, axis=2), width, corners, padding, interpolation)
        ty, wy, sy, mult_y, fy = AxisTaps(op.Gather(coords, 1, axis=2), height, corners, padding, interpolation)
        tz, wz, sz, mult_z, fz = AxisTaps(op.Gather(coords, 2, axis=2), depth, corners, padding, interpolation)

        # every (x tap, y tap, z tap, point): [N, Kx, Ky, Kz, P]
        ax = op.Constant(value_ints=[2, 3])
        ay = op.Constant(value_ints=[1, 3])
        az = op.Constant(value_ints=[1, 2])
        # per-axis bounds and int64 offsets first (small; int64: a float32 flat index is inexact past 2^24
        # voxels), then one broadcast each over [N, Kx, Ky, Kz, P]
        ix, wx = AxisIndex(tx, wx, width, op.ReduceProd(op.Shape(x, start=2, end=5), keepdims=1))
        iy, wy = AxisIndex(ty, wy, height, op.ReduceProd(op.Shape(x, start=2, end=4), keepdims=1))
        iz, wz = AxisIndex(tz, wz, depth, op.Shape(x, start=2, end=3))
        row_len = op.Shape(x, start=4, end=5)
        plane = op.Mul(op.Shape(x, start=3, end=4), row_len)
        flat = op.Add(op.Add(op.Unsqueeze(op.Mul(iz, plane), az), op.Unsqueeze(op.Mul(iy, row_len), ay)),
                      op.Unsqueeze(ix, ax))
        wx3, wy3, wz3 = op.Unsqueeze(wx, ax), op.Unsqueeze(wy, ay), op.Unsqueeze(wz, az)
        box, unused, base, extent, offsets, starts, ends = BoxKeysStart(interpolation, padding)  # no bicubic in 3-D
        no_fold = op.Constant(value_int=0)
        base, extent, offsets, starts, ends = AddBoxAxis(base, extent, offsets, starts, ends, tx, fx,
                                                         op.Shape(x, start=4, end=5), no_fold)
        base, extent, offsets, starts, ends = AddBoxAxis(base, extent, offsets, starts, ends, ty, fy,
                                                         op.Shape(x, start=3, end=4), no_fold)
        base, extent, offsets, starts, ends = AddBoxAxis(base, extent, offsets, starts, ends, tz, fz,
                                                         op.Shape(x, start=2, end=3), no_fold)
        dx, dot = GridTapGradients(x, grad, flat, op.Mul(op.Mul(wx3, wy3), wz3), op.Not(op.Equal(interpolation, 1)),
                                   box, base, offsets, starts, ends, extent, planes_perm=[0, 4, 1, 2, 3])
        # d/dx sums dot * sx (x) wy (x) wz over the taps, and so on: contracted one tap axis at a time, z first
        # (two passes over [N, Kx, Ky, Kz, P] instead of a slope tensor per coordinate)
        z_taps, y_taps, x_taps = op.Constant(value_ints=[3]), op.Constant(value_ints=[2]), op.Constant(value_ints=[1])
        by_wz = op.ReduceSum(op.Mul(dot, wz3), z_taps, keepdims=0)  # [N, Kx, Ky, P]
        by_sz = op.ReduceSum(op.Mul(dot, op.Unsqueeze(sz, az)), z_taps, keepdims=0)
        wy2 = op.Unsqueeze(wy, x_taps)  # [N, 1, Ky, P]
        sy2 = op.Unsqueeze(sy, x_taps)
        gix = op.Mul(op.ReduceSum(op.Mul(op.ReduceSum(op.Mul(by_wz, wy2), y_taps, keepdims=0), sx), x_taps,
                                  keepdims=0), mult_x)
        giy = op.Mul(op.ReduceSum(op.Mul(op.ReduceSum(op.Mul(by_wz, sy2), y_taps, keepdims=0), wx), x_taps,
                                  keepdims=0), mult_y)
        giz = op.Mul(op.ReduceSum(op.Mul(op.ReduceSum(op.Mul(by_sz, wy2), y_taps, keepdims=0), wx), x_taps,
                                  keepdims=0), mult_z)
        last = op.Constant(value_ints=[-1])
        dgrid = op.Concat(op.Unsqueeze(gix, last), op.Unsqueeze(giy, last), op.Unsqueeze(giz, last), axis=-1)
        dgrid = op.CastLike(op.Reshape(dgrid, op.Shape(grid), allowzero=1), grid)
    return dx, dgrid


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, ["dx", "dgrid"])
