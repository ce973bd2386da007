"""UpsampleBicubic2dAAGrad: gradient of torch's antialiased bicubic resize
(interpolate(..., mode='bicubic', antialias=True)).

Implements
aten::_upsample_bicubic2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBicubic2dAAGrad, GE op UpsampleBicubic2dAAGrad). Per axis,
each output averages a window of inputs with Keys' cubic filter (a = -0.5, as PIL), its support
stretched by the downscale factor, weights normalised to sum 1.
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleBicubic2dAAGrad", since_version=2, spatial_ranks=(2,), taps="antialias_cubic",
    scales=("scales_h", "scales_w"), align_corners=True, output_size_required=True,
    doc="Gradient of antialiased bicubic resize (aten::_upsample_bicubic2d_aa_backward): each grad_output element is "
        "spread over the window of input elements the forward averaged (Keys cubic a = -0.5 stretched by the downscale "
        "factor, normalised weights).")
