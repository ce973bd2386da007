"""UpsampleNearestExact2dGrad: gradient of nearest-exact 2-D upsampling.

Implements
aten::_upsample_nearest_exact2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    float? scales_h=None, float? scales_w=None) -> Tensor
(GE op UpsampleNearestExact2dGrad). Per axis,
the 1-D index: min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearestExact2dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=1, spatial_ranks=(2,), taps='nearest_exact', scales=('scales_h', 'scales_w'))
SCHEMA = SPEC.schema('Gradient of nearest-exact 2-D upsampling (aten::_upsample_nearest_exact2d_backward): every '
                     'grad_output element is added to the input pixel it was read from; per axis floor((o + 0.5) * '
                     'scale) clamped to in - 1.')


def upsample_nearest_exact2d_grad(grad_output, input_size, output_size=None, scales_h=0.0, scales_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales_h=scales_h,
                          scales_w=scales_w)


class UpsampleNearestExact2dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales_h=None, scales_w=None):
        return (upsample_nearest_exact2d_grad(grad_output, input_size, output_size, scales_h or 0.0, scales_w or 0.0),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
