"""UpsampleNearestExact3dGrad: gradient of torch's nearest-exact upsampling of volumes (5-D).

Implements
aten::_upsample_nearest_exact3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleNearestExact3dBackward, GE op UpsampleNearestExact3dGrad). Per axis,
as UpsampleNearestExact2dGrad: min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleNearestExact3dGrad", since_version=2, spatial_ranks=(3,), taps="nearest_exact", scales_list="scales",
    output_size_or_scales=True, output="y",
    doc="Gradient of nearest-exact 3-D upsampling (aten::_upsample_nearest_exact3d_backward): every grad_output "
        "element is added to the input element it was read from, min(floor((o + 0.5) * scale), in - 1) per axis.")
