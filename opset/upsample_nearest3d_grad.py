"""UpsampleNearest3dGrad: gradient of torch's nearest upsampling of volumes (mode='nearest', 5-D).

Implements
aten::upsample_nearest3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, float? scales_d=None,
    float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleNearest3dBackward, GE op UpsampleNearest3dGrad). Per axis,
as UpsampleNearest2dGrad: min(floor(o * scale), in - 1).
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearest3dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(3,), taps='nearest', scales_list='scales',
                    output_size_or_scales=True, output='y')
SCHEMA = SPEC.schema('Gradient of nearest 3-D upsampling (aten::upsample_nearest3d_backward): every grad_output '
                     'element is added to the input element it was read from, min(floor(o * scale), in - 1) per '
                     'axis.')


def upsample_nearest3d_grad(grad_output, input_size, output_size=None, scales=()):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales=scales)


class UpsampleNearest3dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales=None):
        return (upsample_nearest3d_grad(grad_output, input_size, output_size, scales),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
