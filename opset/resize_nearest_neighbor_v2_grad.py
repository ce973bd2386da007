"""ResizeNearestNeighborV2Grad: gradient of TensorFlow's nearest-neighbour resize.

Implements TensorFlow's ResizeNearestNeighborGrad (tensorflow/core/kernels/image/
resize_nearest_neighbor_op.cc) in NCHW, as CANN's GE op ResizeNearestNeighborV2Grad does: per
axis, in float32 with s = (in - 1) / (out - 1) for align_corners, else in / out (or 1 / scale when
a forward scale is given),

    align_corners:       src = min(roundf(i * s), in - 1)        (half away from zero)
    half_pixel_centers:  src = max(0, min(floorf((i + 0.5) * s), in - 1))
    neither:             src = min(floorf(i * s), in - 1)

and y[.., src] += grads[.., i]. `size` holds the forward input's [H, W] (int32 as CANN, or int64).
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._resize_v2 import ResizeV2Spec
from ._script import INT64, OPSET, ToOpmath, finish_bodies
from ._script_taps import AxisSize, TFNearestAxis, ShapeChecked

OP_TYPE = "ResizeNearestNeighborV2Grad"
SPEC = ResizeV2Spec(OP_TYPE, since_version=2, spatial=2, taps="tf_nearest", half_pixel_centers=True, shape_input="size")
SCHEMA = SPEC.schema(
    "Gradient of TensorFlow's nearest-neighbour resize (ResizeNearestNeighborGrad, CANN ResizeNearestNeighborV2Grad), "
    "NCHW: every grads element is added to the input pixel it was read from.",
    "Rounds i * s half away from zero.")


def resize_nearest_neighbor_v2_grad(grads, size, align_corners=0, half_pixel_centers=0, scales=(0.0, 0.0)):
    return SPEC.reference(grads, size, align_corners, half_pixel_centers, scales)


class ResizeNearestNeighborV2Grad(ReferenceOp):
    def _run(self, grads, size, align_corners=None, half_pixel_centers=None, scales=None):
        return (resize_nearest_neighbor_v2_grad(grads, size, align_corners or 0, half_pixel_centers or 0, scales),)


@script(OPSET, default_opset=op)
def _function(grads, size, align_corners: int = 0, half_pixel_centers: int = 0, scales: list[float] = (0.0, 0.0)):
    """Both axes contracted with their taps (_script_taps.TFNearestAxis), in the body's arithmetic type (_script.ToOpmath)."""
    # a `size` without 2 values fails the Reshape at run time (the kernel names the fault; a function cannot)
    sizes = op.Concat(op.Shape(grads, start=0, end=2), op.Reshape(op.Cast(size, to=INT64), op.Constant(value_ints=[2])),
                      axis=0)
    forward_scales = op.Constant(value_floats=scales)
    corners = op.Constant(value_int=align_corners)
    half = op.Constant(value_int=half_pixel_centers)
    h = op.Constant(value_ints=[2])
    w = op.Constant(value_ints=[3])
    grad = ToOpmath(ShapeChecked(grads, op.Constant(value_ints=[-1, -1, -1, -1])))
    grad = TFNearestAxis(grad, h, AxisSize(sizes, h), op.Gather(forward_scales, 0), corners, half)
    grad = TFNearestAxis(grad, w, AxisSize(sizes, w), op.Gather(forward_scales, 1), corners, half)
    return op.CastLike(grad, grads)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, ["y"])
