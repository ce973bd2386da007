"""UpsampleNearestExact1dGrad: gradient of nearest-exact 1-D upsampling.

Implements
aten::_upsample_nearest_exact1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor
(aclnnUpsampleNearestExact1dBackward; on Ascend the 2-D GE op on [N, C, 1, L]). Per axis,
grad_input[n, c, min(floor((l + 0.5) * scale), L_in - 1)] += grad_output[n, c, l], with
scale = 1 / scales when scales > 0, else L_in / L_out, in float32 as aten computes it.
"""
from __future__ import annotations

from ._upsample import UpsampleSpec

SPEC = UpsampleSpec(
    "UpsampleNearestExact1dGrad", since_version=1, spatial_ranks=(1,), taps="nearest_exact", scales=("scales",),
    axis_names=("L",),
    doc="Gradient of nearest-exact 1-D upsampling (aten::_upsample_nearest_exact1d_backward): every grad_output "
        "element is added to the input position it was read from, floor((l + 0.5) * scale) clamped to L_in - 1.")
