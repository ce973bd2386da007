"""UpsampleNearest3dGrad: gradient of torch's nearest upsampling of volumes (mode='nearest', 5-D).

Implements
aten::upsample_nearest3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, float? scales_d=None,
    float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleNearest3dBackward, GE op UpsampleNearest3dGrad). Per axis,
as UpsampleNearest2dGrad: min(floor(o * scale), in - 1).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleNearest3dGrad", since_version=2, spatial_ranks=(3,), taps="nearest", scales_list="scales",
    output_size_or_scales=True, output="y",
    doc="Gradient of nearest 3-D upsampling (aten::upsample_nearest3d_backward): every grad_output element is added to "
        "the input element it was read from, min(floor(o * scale), in - 1) per axis.")
