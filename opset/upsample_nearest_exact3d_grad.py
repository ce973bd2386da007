"""UpsampleNearestExact3dGrad: gradient of torch's nearest-exact upsampling of volumes (5-D).

Implements
aten::_upsample_nearest_exact3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleNearestExact3dBackward, GE op UpsampleNearestExact3dGrad). Per axis,
as UpsampleNearestExact2dGrad: min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearestExact3dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(3,), taps='nearest_exact', scales_list='scales',
                    output_size_or_scales=True, output='y')
SCHEMA = SPEC.schema('Gradient of nearest-exact 3-D upsampling (aten::_upsample_nearest_exact3d_backward): every '
                     'grad_output element is added to the input element it was read from, min(floor((o + 0.5) * '
                     'scale), in - 1) per axis.')


def upsample_nearest_exact3d_grad(grad_output, input_size, output_size=None, scales=()):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales=scales)


class UpsampleNearestExact3dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales=None):
        return (upsample_nearest_exact3d_grad(grad_output, input_size, output_size, scales),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
