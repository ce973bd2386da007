"""ResizeBicubicV2Grad: gradient of bicubic resize, as CANN's GE op computes it.

CANN's ResizeBicubicV2Grad is "compatible with PyTorch upsample_bicubic2d_backward" (its kernel,
ops-cv image/resize_bicubic_v2_grad): A = -0.75, src = dst * (in - 1) / (out - 1) with
align_corners, else (dst + 0.5) * scale - 0.5 (not clamped at 0); the four taps floor - 1 .. + 2
clamped to the border; scales are forward scales used when align_corners is 0. So this is
aten::upsample_bicubic2d_backward with grads/original_image inputs (_taps.aten_cubic).
TensorFlow's ResizeBicubicGrad legacy and half-pixel modes are different functions (TF quantises
the weights to 1/1024, and its half-pixel mode uses A = -0.5 with renormalisation); ONNX Resize
graphs of TF models get their gradient from ResizeGrad.
"""
from __future__ import annotations

from ._resize_v2 import ResizeV2Spec

SPEC = ResizeV2Spec(
    "ResizeBicubicV2Grad", since_version=2, spatial=2, taps="cubic",
    doc="Gradient of bicubic resize (CANN ResizeBicubicV2Grad = aten::upsample_bicubic2d_backward): each grads element "
        "is spread over the 4 x 4 input pixels the forward read, with the same cubic weights (A = -0.75); taps outside "
        "the image add to the border pixel.",
    modes_doc="0 (default): half-pixel centres, src = (dst + 0.5) * scale - 0.5.")
