"""UpsampleNearestExact2dGrad: gradient of nearest-exact 2-D upsampling.

Implements
aten::_upsample_nearest_exact2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    float? scales_h=None, float? scales_w=None) -> Tensor
(GE op UpsampleNearestExact2dGrad). Per axis,
the 1-D index: min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleNearestExact2dGrad", since_version=1, spatial_ranks=(2,), taps="nearest_exact",
    scales=("scales_h", "scales_w"),
    doc="Gradient of nearest-exact 2-D upsampling (aten::_upsample_nearest_exact2d_backward): every grad_output "
        "element is added to the input pixel it was read from; per axis floor((o + 0.5) * scale) clamped to in - 1.")
