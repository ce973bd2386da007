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

from ._resize_v2 import ResizeV2Spec

SPEC = ResizeV2Spec(
    "ResizeNearestNeighborV2Grad", since_version=2, spatial=2, taps="tf_nearest", half_pixel_centers=True,
    shape_input="size",
    doc="Gradient of TensorFlow's nearest-neighbour resize (ResizeNearestNeighborGrad, CANN "
        "ResizeNearestNeighborV2Grad), NCHW: every grads element is added to the input pixel it was read from.",
    modes_doc="Rounds i * s half away from zero.")
