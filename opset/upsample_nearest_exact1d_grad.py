"""UpsampleNearestExact1dGrad: gradient of nearest-exact 1-D upsampling.

Implements
aten::_upsample_nearest_exact1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor
(aclnnUpsampleNearestExact1dBackward; on Ascend the 2-D GE op on [N, C, 1, L]). Per axis,
grad_input[n, c, min(floor((l + 0.5) * scale), L_in - 1)] += grad_output[n, c, l], with
scale = 1 / scales when scales > 0, else L_in / L_out, in float32 as aten computes it.
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearestExact1dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=1, spatial_ranks=(1,), taps='nearest_exact', scales=('scales',),
                    axis_names=('L',))
SCHEMA = SPEC.schema('Gradient of nearest-exact 1-D upsampling (aten::_upsample_nearest_exact1d_backward): every '
                     'grad_output element is added to the input position it was read from, floor((l + 0.5) * scale) '
                     'clamped to L_in - 1.')


def upsample_nearest_exact1d_grad(grad_output, input_size, output_size=None, scales=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales=scales)


class UpsampleNearestExact1dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales=None):
        return (upsample_nearest_exact1d_grad(grad_output, input_size, output_size, scales or 0.0),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
