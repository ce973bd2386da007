"""UpsampleBicubic2dGrad: gradient of torch's bicubic upsampling.

Implements
aten::upsample_bicubic2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBicubic2dBackward, GE op UpsampleBicubic2dGrad). Per axis,
each output spreads over four inputs per axis, floor(src) - 1 .. + 2, with Keys' cubic
weights (A = -0.75); taps outside the image land on the border pixel (aten
upsample_increment_value_bounded); out == in copies.

GE's UpsampleBicubic2dGrad takes the sizes from the graph's tensor shapes; an ONNX node has no
output shape of its own, so this op also carries input_size (required) and output_size, as its
siblings do (the Ascend converter leaves them out of the GE op).
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._script import OPSET, ToOpmath, finish_bodies
from ._script_taps import CubicAxis, AxisSize, IsDouble, ShapeChecked, UpsampleShape
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleBicubic2dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(2,), taps='cubic', scales=('scales_h', 'scales_w'), align_corners=True)
SCHEMA = SPEC.schema('Gradient of bicubic upsampling (aten::upsample_bicubic2d_backward): each grad_output element is spread over the 4 x 4 input elements the forward read, with the same cubic weights (A = -0.75); taps outside the image add to the border pixel.')


def upsample_bicubic2d_grad(grad_output, input_size, output_size=None, align_corners=0, scales_h=0.0, scales_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, align_corners=align_corners, scales_h=scales_h, scales_w=scales_w)


class UpsampleBicubic2dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, align_corners=None, scales_h=None, scales_w=None):
        return (upsample_bicubic2d_grad(grad_output, input_size, output_size, align_corners or 0, scales_h or 0.0, scales_w or 0.0),)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int] = (), align_corners: int = 0, scales_h: float = 0.0, scales_w: float = 0.0):
    """Each spatial axis contracted with its taps (_script_taps.CubicAxis), in the body's arithmetic type (_script.ToOpmath)."""
    sizes = op.Constant(value_ints=input_size)
    corners = op.Constant(value_int=align_corners)
    is_double = IsDouble(grad_output)
    grad = ToOpmath(ShapeChecked(grad_output, UpsampleShape(sizes, op.Constant(value_ints=output_size))))
    h = op.Constant(value_ints=[2])
    w = op.Constant(value_ints=[3])
    grad = CubicAxis(grad, h, AxisSize(sizes, h), op.Constant(value_float=scales_h), corners, is_double)
    grad = CubicAxis(grad, w, AxisSize(sizes, w), op.Constant(value_float=scales_w), corners, is_double)
    return op.CastLike(grad, grad_output)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, [SPEC.output])
