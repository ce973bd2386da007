"""UpsampleTrilinear3dBackward: gradient of torch's trilinear upsampling (5-D).

Implements
aten::upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleTrilinear3dBackward, GE op UpsampleTrilinear3dBackward). Per axis,
as UpsampleBilinear2dGrad: two inputs with weights (1 - l, l).
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._script import OPSET, ToOpmath, finish_bodies
from ._script_taps import LinearAxis, AxisSize, IsDouble, ShapeChecked, UpsampleShape
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleTrilinear3dBackward"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(3,), taps='linear', scales=('scale_d', 'scale_h', 'scale_w'), align_corners=True, output_size_required=True)
SCHEMA = SPEC.schema('Gradient of trilinear upsampling (aten::upsample_trilinear3d_backward): each grad_output element is spread over the eight input elements the forward interpolated, with the same weights.')


def upsample_trilinear3d_backward(grad_output, input_size, output_size, align_corners=0, scale_d=0.0, scale_h=0.0, scale_w=0.0):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, align_corners=align_corners, scale_d=scale_d, scale_h=scale_h, scale_w=scale_w)


class UpsampleTrilinear3dBackward(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, align_corners=None, scale_d=None, scale_h=None, scale_w=None):
        return (upsample_trilinear3d_backward(grad_output, input_size, output_size, align_corners or 0, scale_d or 0.0, scale_h or 0.0, scale_w or 0.0),)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int], align_corners: int = 0, scale_d: float = 0.0, scale_h: float = 0.0, scale_w: float = 0.0):
    """Each spatial axis contracted with its taps (_script_taps.LinearAxis), in the body's arithmetic type (_script.ToOpmath)."""
    sizes = op.Constant(value_ints=input_size)
    corners = op.Constant(value_int=align_corners)
    is_double = IsDouble(grad_output)
    grad = ToOpmath(ShapeChecked(grad_output, UpsampleShape(sizes, op.Constant(value_ints=output_size))))
    d = op.Constant(value_ints=[2])
    h = op.Constant(value_ints=[3])
    w = op.Constant(value_ints=[4])
    grad = LinearAxis(grad, d, AxisSize(sizes, d), op.Constant(value_float=scale_d), corners, is_double)
    grad = LinearAxis(grad, h, AxisSize(sizes, h), op.Constant(value_float=scale_h), corners, is_double)
    grad = LinearAxis(grad, w, AxisSize(sizes, w), op.Constant(value_float=scale_w), corners, is_double)
    return op.CastLike(grad, grad_output)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, [SPEC.output])
