"""ResizeBilinearV2Grad: gradient of bilinear resize.

Implements aten::upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size,
SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBilinear2dBackward, GE op ResizeBilinearV2Grad) for align_corners=1 and for
half_pixel_centers=1 (torch's align_corners=False), and TensorFlow's ResizeBilinearGrad legacy
mode (src = dst * in / out) when both are 0. Per axis, each output spreads over two inputs with
weights (1 - l, l): _taps.aten_linear and _taps.tf_legacy_linear.
"""
from __future__ import annotations

from onnxscript import opset18 as op
from onnxscript import script

from ._common import ReferenceOp
from ._resize_v2 import ResizeV2Spec
from ._script import OPSET, ToOpmath, finish_bodies
from ._script_taps import AxisSize, IsDouble, TFLinearAxis, ShapeChecked

OP_TYPE = "ResizeBilinearV2Grad"
SPEC = ResizeV2Spec(OP_TYPE, since_version=1, spatial=2, taps="tf_linear", half_pixel_centers=True)
SCHEMA = SPEC.schema(
    "Gradient of bilinear resize: each grads element is spread over the four input pixels the forward "
    "resize read, with the same bilinear weights. Coordinate modes: align_corners=1 (torch "
    "align_corners=True), half_pixel_centers=1 (torch align_corners=False), both 0 (TensorFlow legacy).",
    "half_pixel_centers=1: src = (dst + 0.5) * scale - 0.5 clamped at 0. Both 0: TensorFlow's legacy src = dst * scale.")


def resize_bilinear_v2_grad(grads, original_image, align_corners=0, half_pixel_centers=0, scales=(0.0, 0.0)):
    return SPEC.reference(grads, original_image, align_corners, half_pixel_centers, scales)


class ResizeBilinearV2Grad(ReferenceOp):
    def _run(self, grads, original_image, align_corners=None, half_pixel_centers=None, scales=None):
        return (resize_bilinear_v2_grad(grads, original_image, align_corners or 0, half_pixel_centers or 0, scales),)


@script(OPSET, default_opset=op)
def _function(grads, original_image, align_corners: int = 0, half_pixel_centers: int = 0,
              scales: list[float] = (0.0, 0.0)):
    """Both axes contracted with their taps (_script_taps.TFLinearAxis), in the body's arithmetic type (_script.ToOpmath)."""
    sizes = op.Shape(original_image)
    forward_scales = op.Constant(value_floats=scales)
    corners = op.Constant(value_int=align_corners)
    half = op.Constant(value_int=half_pixel_centers)
    is_double = IsDouble(grads)
    h = op.Constant(value_ints=[2])
    w = op.Constant(value_ints=[3])
    expected = op.Concat(op.Shape(original_image, start=0, end=2), op.Constant(value_ints=[-1, -1]), axis=0)
    grad = ToOpmath(ShapeChecked(grads, expected))
    grad = TFLinearAxis(grad, h, AxisSize(sizes, h), op.Gather(forward_scales, 0), corners, half, is_double)
    grad = TFLinearAxis(grad, w, AxisSize(sizes, w), op.Gather(forward_scales, 1), corners, half, is_double)
    return op.CastLike(grad, grads)


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, ["y"])
