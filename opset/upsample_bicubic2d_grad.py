"""UpsampleBicubic2dGrad: gradient of torch's bicubic upsampling.

Implements
aten::upsample_bicubic2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, bool align_corners,
    float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBicubic2dBackward, GE op UpsampleBicubic2dGrad). Per axis,
each output spreads over four inputs per axis, floor(src) - 1 .. + 2, with Keys' cubic
weights (A = -0.75); taps outside the image land on the border pixel (aten
upsample_increment_value_bounded); out == in copies.

GE's UpsampleBicubic2dGrad takes the sizes from the graph's tensor shapes; an ONNX node has no
output shape of its own, so this op also carries input_size (required) and output_size, as its
siblings do (the Ascend converter leaves them out of the GE op).
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleBicubic2dGrad", since_version=2, spatial_ranks=(2,), taps="cubic", scales=("scales_h", "scales_w"),
    align_corners=True,
    doc="Gradient of bicubic upsampling (aten::upsample_bicubic2d_backward): each grad_output element is spread over "
        "the 4 x 4 input elements the forward read, with the same cubic weights (A = -0.75); taps outside the image "
        "add to the border pixel.")
