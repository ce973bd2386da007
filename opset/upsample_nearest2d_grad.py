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

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._separable_body import upsample_body
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearest2dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(2, 1), taps='nearest', scales=('scales_h', 'scales_w'),
                    output_size_required=True)
SCHEMA = SPEC.schema('Gradient of nearest upsampling (aten::upsample_nearest2d_backward; a 3-D grad_output is '
                     'upsample_nearest1d_backward): every grad_output element is added to the input element it was '
                     'read from, min(floor(o * scale), in - 1) per axis.')


def upsample_nearest2d_grad(grad_output, input_size, output_size, scales_h=0.0, scales_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales_h=scales_h,
                          scales_w=scales_w)


class UpsampleNearest2dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales_h=None, scales_w=None):
        return (upsample_nearest2d_grad(grad_output, input_size, output_size, scales_h or 0.0, scales_w or 0.0),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return upsample_body(SPEC, key)
