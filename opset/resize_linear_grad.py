"""ResizeLinearGrad: gradient of 1-D linear resize on [N, C, L], as CANN's GE op computes it.

CANN's ResizeLinearGrad (ops-cv image/resize_linear_grad) is torch's linear backward: with
align_corners src = dst * (in - 1) / (out - 1), else max(0, (dst + 0.5) * s - 0.5) with
s = 1 / scale when a forward scale is given, else in / out; two taps (1 - l, l). So this is
aten::upsample_linear1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
bool align_corners, float? scales=None) -> Tensor with grads/original_image inputs (_taps.aten_linear).
"""
from __future__ import annotations

from ._resize_v2 import ResizeV2Spec

SPEC = ResizeV2Spec(
    "ResizeLinearGrad", since_version=2, spatial=1, taps="linear", scale_attr="scale",
    doc="Gradient of 1-D linear resize (CANN ResizeLinearGrad = aten::upsample_linear1d_backward) on [N, C, L]: each "
        "grads element is spread over the two input elements the forward interpolated, with the same weights.",
    modes_doc="0 (default): half-pixel centres, src = max(0, (dst + 0.5) * scale - 0.5).")
