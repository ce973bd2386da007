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

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._resize_v2 import ResizeV2Spec
from ._separable_body import resize_v2_body

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


def body(key: BodyKey) -> onnx.FunctionProto:
    return resize_v2_body(SPEC, key)
