"""UpsampleNearestExact3dGrad: gradient of torch's nearest-exact upsampling of volumes (5-D).

Implements
aten::_upsample_nearest_exact3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleNearestExact3dBackward, GE op UpsampleNearestExact3dGrad). Per axis,
as UpsampleNearestExact2dGrad: min(floor((o + 0.5) * scale), in - 1).
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._script import OPSET, ToOpmath, finish_bodies
from ._script_taps import ContractNearest3, ShapeChecked, UpsampleShape
from ._upsample import UpsampleSpec

OP_TYPE = "UpsampleNearestExact3dGrad"
SPEC = UpsampleSpec(OP_TYPE, since_version=2, spatial_ranks=(3,), taps='nearest_exact', scales_list='scales', output_size_or_scales=True, output='y')
SCHEMA = SPEC.schema('Gradient of nearest-exact 3-D upsampling (aten::_upsample_nearest_exact3d_backward): every grad_output element is added to the input element it was read from, min(floor((o + 0.5) * scale), in - 1) per axis.')


def upsample_nearest_exact3d_grad(grad_output, input_size, output_size=None, scales=()):
    return SPEC.reference(grad_output, input_size=input_size, output_size=output_size, scales=scales)


class UpsampleNearestExact3dGrad(ReferenceOp):
    def _run(self, grad_output, input_size=None, output_size=None, scales=None):
        return (upsample_nearest_exact3d_grad(grad_output, input_size, output_size, scales),)


@script(OPSET, default_opset=op)
def _function(grad_output, input_size: list[int], output_size: list[int] = (), scales: list[float] = ()):
    """Each spatial axis contracted with its taps (_script_taps.ContractNearest3), in the body's arithmetic type (_script.ToOpmath)."""
    sizes = op.Constant(value_ints=input_size)
    grad = ToOpmath(ShapeChecked(grad_output, UpsampleShape(sizes, op.Constant(value_ints=output_size))))
    forward_scales = op.Slice(op.Concat(op.Constant(value_floats=[0.0, 0.0, 0.0]), op.Constant(value_floats=scales), axis=0),
                              op.Constant(value_ints=[-3]), op.Constant(value_ints=[6]))  # zeros when absent
    grad = ContractNearest3(grad, sizes, forward_scales, op.Constant(value_int=1))
    return op.CastLike(grad, grad_output)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, [SPEC.output])
