"""ResizeBilinearV2Grad: gradient of bilinear resize.

Implements aten::upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size,
SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBilinear2dBackward, GE op ResizeBilinearV2Grad) for align_corners=1 and for
half_pixel_centers=1 (torch's align_corners=False), and TensorFlow's ResizeBilinearGrad legacy
mode (src = dst * in / out) when both are 0. Per axis, each output spreads over two inputs with
weights (1 - l, l): _taps.aten_linear and _taps.tf_legacy_linear.
"""
from __future__ import annotations

import onnx

from ._common import ReferenceOp
from ._graph import BodyKey
from ._resize_v2 import ResizeV2Spec
from ._separable_body import resize_v2_body

OP_TYPE = "ResizeBilinearV2Grad"
SPEC = ResizeV2Spec(OP_TYPE, since_version=1, spatial=2, taps="tf_linear", half_pixel_centers=True)
SCHEMA = SPEC.schema(
    "Gradient of bilinear resize: each grads element is spread over the four input pixels the forward "
    "resize read, with the same bilinear weights. Coordinate modes: align_corners=1 (torch "
    "align_corners=True), half_pixel_centers=1 (torch align_corners=False), both 0 (TensorFlow legacy).",
    "half_pixel_centers=1: src = (dst + 0.5) * scale - 0.5 clamped at 0. "
    "Both 0: TensorFlow's legacy src = dst * scale.")


def resize_bilinear_v2_grad(grads, original_image, align_corners=0, half_pixel_centers=0, scales=(0.0, 0.0)):
    return SPEC.reference(grads, original_image, align_corners, half_pixel_centers, scales)


class ResizeBilinearV2Grad(ReferenceOp):
    def _run(self, grads, original_image, align_corners=None, half_pixel_centers=None, scales=None):
        return (resize_bilinear_v2_grad(grads, original_image, align_corners or 0, half_pixel_centers or 0, scales),)


def body(key: BodyKey) -> onnx.FunctionProto:
    return resize_v2_body(SPEC, key)
