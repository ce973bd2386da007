"""UpsampleNearestExact1dGrad: gradient of nearest-exact 1-D upsampling.

Implements aten::_upsample_nearest_exact1d_backward(Tensor grad_output, SymInt[1] output_size,
SymInt[3] input_size, float? scales=None) -> Tensor (aclnnUpsampleNearestExact1dBackward):

    grad_input[n, c, min(floor((l + 0.5) * scale), L_in - 1)] += grad_output[n, c, l]

with scale = 1 / scales when scales > 0, else L_in / L_out, in float32 as aten computes it.
"""
from __future__ import annotations

import numpy as np
from onnx import defs

from onnxscript import opset18 as op
from onnxscript import script

from . import _upsample
from ._script import DOUBLE, OPSET, NearestExactMatrix, finish
from ._common import input_elem_type, input_shape, attribute_value, make_schema, make_tensor_type

OP_TYPE = "UpsampleNearestExact1dGrad"
SPATIAL = ("L",)


def upsample_nearest_exact1d_grad(grad_output: np.ndarray, input_size, output_size=None, scales: float = 0.0):
    return _upsample.backward(OP_TYPE, SPATIAL, grad_output, input_size, output_size, [scales])


def _infer(ctx):
    shape = _upsample.validate(OP_TYPE, SPATIAL, input_shape(ctx, 0), attribute_value(ctx, "input_size", None),
                               attribute_value(ctx, "output_size", None), [attribute_value(ctx, "scales", 0.0)])
    ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 0), shape))


SCHEMA = make_schema(
    OP_TYPE,
    "Gradient of nearest-exact 1-D upsampling (aten::_upsample_nearest_exact1d_backward): every grad_output "
    "element is added to the input position it was read from, floor((l + 0.5) * scale) clamped to L_in - 1.",
    inputs=[("grad_output", "Gradient of the upsampled tensor, [N, C, L_out].", False)],
    outputs=[("grad_input", "Gradient of the input, [N, C, L_in] as given by input_size.", False)],
    attributes=[
        ("input_size", defs.OpSchema.AttrType.INTS,
         "Required. [N, C, L_in], the forward input's shape. N or C may be -1: taken from grad_output."),
        ("output_size", defs.OpSchema.AttrType.INTS,
         "Optional. [L_out]; when given it must equal grad_output's last dimension."),
        ("scales", 0.0, "Forward scale factor L_out / L_in. 0 (default): the index scale is L_in / L_out; "
                        "> 0: the index scale is 1 / scales, as torch does. Negative is an error."),
    ],
    infer=_infer,
)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int] = (), scales: float = 0.0):
    """grad_output [N, C, L_out] @ A [L_out, L_in], A the one-hot nearest-exact matrix; in double."""
    sizes = op.Constant(value_ints=input_size)
    matrix = NearestExactMatrix(op.Slice(sizes, [2], [3]), op.Shape(grad_output, start=2, end=3),
                                op.Constant(value_float=scales))
    return op.CastLike(op.MatMul(op.Cast(grad_output, to=DOUBLE), matrix), grad_output)


FUNCTION = finish(_function, OP_TYPE, ["grad_input"])
