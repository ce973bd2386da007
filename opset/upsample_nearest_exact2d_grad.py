"""UpsampleNearestExact2dGrad: gradient of nearest-exact 2-D upsampling.

Implements aten::_upsample_nearest_exact2d_backward(Tensor grad_output, SymInt[2] output_size,
SymInt[4] input_size, float? scales_h=None, float? scales_w=None) -> Tensor (GE op
UpsampleNearestExact2dGrad). Per axis, the source index is the 1-D one:
min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

import numpy as np
from onnx import defs

from onnxscript import opset18 as op
from onnxscript import script

from . import _upsample
from ._script import DOUBLE, OPSET, NearestExactMatrix, SeparableBackward, finish
from ._common import input_elem_type, input_shape, attribute_value, make_schema, make_tensor_type

OP_TYPE = "UpsampleNearestExact2dGrad"
SPATIAL = ("H", "W")


def upsample_nearest_exact2d_grad(grad_output: np.ndarray, input_size, output_size=None,
                                  scales_h: float = 0.0, scales_w: float = 0.0):
    return _upsample.backward(OP_TYPE, SPATIAL, grad_output, input_size, output_size, [scales_h, scales_w])


def _infer(ctx):
    scales = [attribute_value(ctx, "scales_h", 0.0), attribute_value(ctx, "scales_w", 0.0)]
    shape = _upsample.validate(OP_TYPE, SPATIAL, input_shape(ctx, 0), attribute_value(ctx, "input_size", None),
                               attribute_value(ctx, "output_size", None), scales)
    ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 0), shape))


SCHEMA = make_schema(
    OP_TYPE,
    "Gradient of nearest-exact 2-D upsampling (aten::_upsample_nearest_exact2d_backward): every grad_output "
    "element is added to the input pixel it was read from; per axis floor((o + 0.5) * scale) clamped to in - 1.",
    inputs=[("grad_output", "Gradient of the upsampled tensor, [N, C, H_out, W_out].", False)],
    outputs=[("grad_input", "Gradient of the input, [N, C, H_in, W_in] as given by input_size.", False)],
    attributes=[
        ("input_size", defs.OpSchema.AttrType.INTS,
         "Required. [N, C, H_in, W_in], the forward input's shape. N or C may be -1: taken from grad_output."),
        ("output_size", defs.OpSchema.AttrType.INTS,
         "Optional. [H_out, W_out]; when given it must equal grad_output's last two dimensions."),
        ("scales_h", 0.0, "Forward height scale H_out / H_in. 0 (default): index scale H_in / H_out; "
                          "> 0: index scale 1 / scales_h. Negative is an error."),
        ("scales_w", 0.0, "Forward width scale W_out / W_in, as scales_h."),
    ],
    infer=_infer,
)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int] = (), scales_h: float = 0.0,
              scales_w: float = 0.0):
    """A_h^T @ grad_output @ A_w with the one-hot nearest-exact matrices of both axes; in double."""
    sizes = op.Constant(value_ints=input_size)
    rows = NearestExactMatrix(op.Slice(sizes, [2], [3]), op.Shape(grad_output, start=2, end=3),
                              op.Constant(value_float=scales_h))
    cols = NearestExactMatrix(op.Slice(sizes, [3], [4]), op.Shape(grad_output, start=3, end=4),
                              op.Constant(value_float=scales_w))
    return op.CastLike(SeparableBackward(op.Cast(grad_output, to=DOUBLE), rows, cols), grad_output)


FUNCTION = finish(_function, OP_TYPE, ["grad_input"])
