"""ResizeBilinearV2Grad: gradient of bilinear resize.

Implements aten::upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size,
SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBilinear2dBackward, GE op ResizeBilinearV2Grad) for align_corners=1 and for
half_pixel_centers=1 (torch's align_corners=False), and TensorFlow's ResizeBilinearGrad legacy
mode (src = dst * in / out) when both are 0. Per axis, each output spreads over two inputs with
weights (1 - l, l): _taps.aten_linear and _taps.tf_legacy_linear.
"""
from __future__ import annotations

from ._resize_v2 import ResizeV2Spec

SPEC = ResizeV2Spec(
    "ResizeBilinearV2Grad", since_version=1, spatial=2, taps="tf_linear", half_pixel_centers=True,
    doc="Gradient of bilinear resize: each grads element is spread over the four input pixels the forward resize read, "
        "with the same bilinear weights. Coordinate modes: align_corners=1 (torch align_corners=True), "
        "half_pixel_centers=1 (torch align_corners=False), both 0 (TensorFlow legacy).",
    modes_doc="half_pixel_centers=1: src = (dst + 0.5) * scale - 0.5 clamped at 0. Both 0: TensorFlow's legacy src = "
              "dst * scale.")
