"""UpsampleTrilinear3dBackward: gradient of torch's trilinear upsampling (5-D).

Implements
aten::upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, bool align_corners,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleTrilinear3dBackward, GE op UpsampleTrilinear3dBackward). Per axis,
as UpsampleBilinear2dGrad: two inputs with weights (1 - l, l).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleTrilinear3dBackward", since_version=2, spatial_ranks=(3,), taps="linear",
    scales=("scale_d", "scale_h", "scale_w"), align_corners=True, output_size_required=True,
    doc="Gradient of trilinear upsampling (aten::upsample_trilinear3d_backward): each grad_output element is spread "
        "over the eight input elements the forward interpolated, with the same weights.")
