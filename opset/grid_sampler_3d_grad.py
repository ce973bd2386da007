"""GridSampler3DGrad: gradients of 5-D grid_sample with respect to the volume and the grid.

Implements aten::grid_sampler_3d_backward(Tensor grad_output, Tensor input, Tensor grid,
int interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)
(aclnnGridSampler3DBackward, GE op GridSampler3DGrad: inputs grad, x, grid; outputs dx, dgrid).
Modes bilinear (trilinear: 8 taps) and nearest, as torch and CANN; paddings zeros, border,
reflection. Outputs are optional: an output a node does not name is not computed.
"""
from __future__ import annotations

from resample_grad.constants import INTERPOLATION_MODES_3D

from ._grid_sampler import GridSamplerSpec

SPEC = GridSamplerSpec(
    "GridSampler3DGrad", since_version=2, spatial=3, inputs=("grad", "x", "grid"), outputs=("dx", "dgrid"),
    modes=INTERPOLATION_MODES_3D,
    doc="Gradients of 5-D grid_sample (aten::grid_sampler_3d_backward) with respect to the volume x and the grid. The "
        "grid holds (x, y, z) in [-1, 1] (x indexes W, z indexes D); outputs a node leaves unnamed are not computed. A "
        "grid point whose coordinate is NaN contributes nothing and gets a zero grid gradient.")
