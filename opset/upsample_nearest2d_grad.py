"""UpsampleNearest2dGrad: gradient of torch's nearest upsampling (mode='nearest', its default), 2-D and 1-D.

Implements
aten::upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, float? scales_h=None,
    float? scales_w=None) -> Tensor
aten::upsample_nearest1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor (a 3-D grad_output; its axis is W, its scale scales_w)
(aclnnUpsampleNearest2dBackward and aclnnUpsampleNearest1dBackward, GE op UpsampleNearest2dGrad). Per axis,
grad_input[.., min(floor(o * scale), in - 1)] += grad_output[.., o] (aten nearest_idx: out == in
copies, out == 2 in reads o // 2); scale = 1 / scales_* when given, else in / out, in float32.
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleNearest2dGrad", since_version=2, spatial_ranks=(2, 1), taps="nearest", scales=("scales_h", "scales_w"),
    output_size_required=True,
    doc="Gradient of nearest upsampling (aten::upsample_nearest2d_backward; a 3-D grad_output is "
        "upsample_nearest1d_backward): every grad_output element is added to the input element it was read from, "
        "min(floor(o * scale), in - 1) per axis.")
