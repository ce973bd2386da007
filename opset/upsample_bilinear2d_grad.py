"""UpsampleBilinear2dGrad: gradient of torch's bilinear upsampling, 2-D, and of linear upsampling, 1-D.

Implements
aten::upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, bool align_corners,
    float? scales_h=None, float? scales_w=None) -> Tensor
aten::upsample_linear1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size, bool align_corners,
    float? scales=None) -> Tensor (a 3-D grad_output; its axis is W, its scale scales_w)
(aclnnUpsampleBilinear2dBackwardV2 and aclnnUpsampleLinear1dBackward, GE op UpsampleBilinear2dGrad). Per axis,
each output spreads over two inputs per axis with weights (1 - l, l) (aten
compute_source_index_and_lambda; out == in copies).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleBilinear2dGrad", since_version=2, spatial_ranks=(2, 1), taps="linear", scales=("scales_h", "scales_w"),
    align_corners=True, output_size_required=True,
    doc="Gradient of bilinear upsampling (aten::upsample_bilinear2d_backward; a 3-D grad_output is "
        "upsample_linear1d_backward): each grad_output element is spread over the two input elements per axis the "
        "forward interpolated, with the same weights.")
