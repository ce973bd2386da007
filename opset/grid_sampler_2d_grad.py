"""GridSampler2DGrad: gradients of grid_sample with respect to input and grid.

Implements aten::grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler2DBackward, GE op GridSampler2DGrad). Outputs are optional: an output a node does
not name is not computed (the aclnn outputMask).
"""
from __future__ import annotations

from resample_grad.constants import INTERPOLATION_MODES

from ._grid_sampler import GridSamplerSpec

SPEC = GridSamplerSpec(
    "GridSampler2DGrad", since_version=1, spatial=2, inputs=("grad_output", "input", "grid"),
    outputs=("grad_input", "grad_grid"), modes=INTERPOLATION_MODES,
    doc="Gradients of grid_sample (aten::grid_sampler_2d_backward) with respect to input and grid. The grid holds "
        "(x, y) in [-1, 1]; outputs a node leaves unnamed are not computed. A grid point whose coordinate is NaN "
        "contributes nothing and gets a zero grid gradient.")
