"""UpsampleTrilinear3dBackward: gradient of torch's trilinear upsampling (5-D).

Implements
aten::upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, bool align_corners,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleTrilinear3dBackward, GE op UpsampleTrilinear3dBackward). Per axis,
as UpsampleBilinear2dGrad: two inputs with weights (1 - l, l).
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleTrilinear3dBackward"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(3,), taps='linear',
                    scales=('scale_d', 'scale_h', 'scale_w'), align_corners=True, output_size_required=True)
SCHEMA = SPEC.schema('Gradient of trilinear upsampling (aten::upsample_trilinear3d_backward): each grad_output element '
                     'is spread over the eight input elements the forward interpolated, with the same weights.')


def upsample_trilinear3d_backward(grad_output, input_size, output_size, align_corners=0, scale_d=0.0, scale_h=0.0,
                                  scale_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, align_corners=align_corners,
                          scale_d=scale_d, scale_h=scale_h, scale_w=scale_w)


class UpsampleTrilinear3dBackward(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, align_corners=None, scale_d=None, scale_h=None,
             scale_w=None):
        return (upsample_trilinear3d_backward(grad_output, input_size, output_size, align_corners or 0, scale_d or 0.0,
                                              scale_h or 0.0, scale_w or 0.0),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
