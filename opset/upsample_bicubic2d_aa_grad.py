"""UpsampleBicubic2dAAGrad: gradient of torch's antialiased bicubic resize
(interpolate(..., mode='bicubic', antialias=True)).

Implements
aten::_upsample_bicubic2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBicubic2dAAGrad, GE op UpsampleBicubic2dAAGrad). Per axis,
each output averages a window of inputs with Keys' cubic filter (a = -0.5, as PIL), its support
stretched by the downscale factor, weights normalised to sum 1.
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleBicubic2dAAGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(2,), taps='antialias_cubic',
                    scales=('scales_h', 'scales_w'), align_corners=True, output_size_required=True)
SCHEMA = SPEC.schema('Gradient of antialiased bicubic resize (aten::_upsample_bicubic2d_aa_backward): each grad_output '
                     'element is spread over the window of input elements the forward averaged (Keys cubic a = -0.5 '
                     'stretched by the downscale factor, normalised weights).')


def upsample_bicubic2d_aa_grad(grad_output, input_size, output_size, align_corners=0, scales_h=0.0, scales_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, align_corners=align_corners,
                          scales_h=scales_h, scales_w=scales_w)


class UpsampleBicubic2dAAGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, align_corners=None, scales_h=None, scales_w=None):
        return (upsample_bicubic2d_aa_grad(grad_output, input_size, output_size, align_corners or 0, scales_h or 0.0,
                                           scales_w or 0.0),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
