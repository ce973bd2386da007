"""GridSampler2DGrad: gradients of grid_sample with respect to input and grid.

Implements aten::grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler2DBackward, GE op GridSampler2DGrad). Outputs are optional: an output a node does
not name is not computed (the aclnn outputMask).
"""
from __future__ import annotations

import onnx

from resample_grad.constants import INTERPOLATION_MODES

from ._common import ReferenceOp
from ._graph import BodyKey
from ._grid_body import grid_sampler_body
from ._grid_sampler import GridSamplerSpec

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


# --------------------------------------------------------------------------- function body

def body(key: BodyKey) -> onnx.FunctionProto:
    """The function body for a node of this mode, padding and align_corners (_grid_body.grid_sampler_body)."""
    return grid_sampler_body(key, list(SPEC.inputs), list(SPEC.outputs), 2, key.attribute("interpolation_mode"),
                             key.attribute("padding_mode"), bool(key.attribute("align_corners")))
