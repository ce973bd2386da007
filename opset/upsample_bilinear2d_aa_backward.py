"""UpsampleBilinear2dAABackward: gradient of torch's antialiased bilinear resize (interpolate(..., antialias=True)).

Implements
aten::_upsample_bilinear2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBilinear2dAABackward, GE op UpsampleBilinear2dAABackward). Per axis,
each output averages a window of inputs with the triangle filter, its support stretched
by the downscale factor, weights normalised to sum 1 (aten _compute_indices_min_size_weights_aa).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleBilinear2dAABackward", since_version=2, spatial_ranks=(2,), taps="antialias_linear",
    scales=("scales_h", "scales_w"), align_corners=True,
    doc="Gradient of antialiased bilinear resize (aten::_upsample_bilinear2d_aa_backward): each grad_output element is "
        "spread over the window of input elements the forward averaged (triangle filter stretched by the downscale "
        "factor, normalised weights).")
