"""UpsampleNearest2dGrad: gradient of torch's nearest upsampling (mode='nearest', its default), 2-D and 1-D.

Implements
aten::upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, float? scales_h=None, float? scales_w=None) -> Tensor
aten::upsample_nearest1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size, float? scales=None) -> Tensor (a 3-D grad_output; its axis is W, its scale scales_w)
(aclnnUpsampleNearest2dBackward and aclnnUpsampleNearest1dBackward, GE op UpsampleNearest2dGrad). Per axis,
grad_input[.., min(floor(o * scale), in - 1)] += grad_output[.., o] (aten nearest_idx: out == in
copies, out == 2 in reads o // 2); scale = 1 / scales_* when given, else in / out, in float32.
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._script import OPSET, ToOpmath, finish_bodies
from ._script_taps import AxisSize, ContractNearest2, NearestAxis, ShapeChecked, UpsampleShape
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearest2dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(2, 1), taps='nearest', scales=('scales_h', 'scales_w'), output_size_required=True)
SCHEMA = SPEC.schema('Gradient of nearest upsampling (aten::upsample_nearest2d_backward; a 3-D grad_output is upsample_nearest1d_backward): every grad_output element is added to the input element it was read from, min(floor(o * scale), in - 1) per axis.')


def upsample_nearest2d_grad(grad_output, input_size, output_size, scales_h=0.0, scales_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales_h=scales_h, scales_w=scales_w)


class UpsampleNearest2dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales_h=None, scales_w=None):
        return (upsample_nearest2d_grad(grad_output, input_size, output_size, scales_h or 0.0, scales_w or 0.0),)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int], scales_h: float = 0.0, scales_w: float = 0.0):
    """Each spatial axis contracted with its taps (_script_taps.ContractNearest2; NearestAxis in the 1-D form), in the body's arithmetic type (_script.ToOpmath)."""
    sizes = op.Constant(value_ints=input_size)
    grad = ToOpmath(ShapeChecked(grad_output, UpsampleShape(sizes, op.Constant(value_ints=output_size))))
    if op.Equal(op.Size(sizes), 4):
        grad = ContractNearest2(grad, sizes, op.Constant(value_float=scales_h), op.Constant(value_float=scales_w),
                                op.Constant(value_int=0))
    else:  # the 1-D form (upsample_nearest1d): W alone
        w = op.Constant(value_ints=[2])
        grad = NearestAxis(grad, w, AxisSize(sizes, w), op.Constant(value_float=scales_w))
    return op.CastLike(grad, grad_output)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, [SPEC.output])
