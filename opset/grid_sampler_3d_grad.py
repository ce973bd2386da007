"""GridSampler3DGrad: gradients of 5-D grid_sample with respect to the volume and the grid.

Implements aten::grid_sampler_3d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler3DBackward, GE op GridSampler3DGrad: inputs grad, x, grid; outputs dx, dgrid).
Modes bilinear (trilinear: 8 taps) and nearest, as torch and CANN; paddings zeros, border,
reflection. Outputs are optional: an output a node does not name is not computed.
"""
from __future__ import annotations

import onnx

from resample_grad.constants import INTERPOLATION_MODES_3D

from ._common import ReferenceOp
from ._graph import BodyKey
from ._grid_body import grid_sampler_body
from ._grid_sampler import GridSamplerSpec
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


def body(key: BodyKey) -> onnx.FunctionProto:
    """The function body for a node of this mode, padding and align_corners (_grid_body.grid_sampler_body)."""
    return grid_sampler_body(key, list(SPEC.inputs), list(SPEC.outputs), 3, key.attribute("interpolation_mode"),
                             key.attribute("padding_mode"), bool(key.attribute("align_corners")))
