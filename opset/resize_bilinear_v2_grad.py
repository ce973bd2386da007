"""ResizeBilinearV2Grad: gradient of bilinear resize.

Implements aten::upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size,
SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
(aclnnUpsampleBilinear2dBackward, GE op ResizeBilinearV2Grad) for align_corners=1 and for
half_pixel_centers=1 (torch's align_corners=False), and TensorFlow's ResizeBilinearGrad legacy
mode (src = dst * in / out) when both are 0.

Bilinear resize is separable, so its gradient is M_h^T @ grads @ M_w with one
interpolation matrix M[out, in] per axis (two non-zeros per row).
"""
from __future__ import annotations

import numpy as np

from onnxscript import opset18 as op
from onnxscript import script

from ._script import DOUBLE, OPSET, BilinearMatrix, SeparableBackward, finish
from ._common import (
    ResampleGradError, attribute_value, check_bool_attr, check_dim_equal, check_float_dtypes, check_rank,
    check_scale_attr, compute_dtype, input_elem_type, input_shape, make_schema, make_tensor_type,
)

OP_TYPE = "ResizeBilinearV2Grad"


def validate(align_corners: int, half_pixel_centers: int, scales, grads, original_image):
    op = OP_TYPE
    check_bool_attr(op, "align_corners", align_corners)
    check_bool_attr(op, "half_pixel_centers", half_pixel_centers)
    if align_corners and half_pixel_centers:
        raise ResampleGradError(op, "attributes 'align_corners' and 'half_pixel_centers' cannot both be 1")
    scales = list(scales)
    if len(scales) != 2:
        raise ResampleGradError(op, f"attribute 'scales' must have 2 values [scale_h, scale_w], got {scales}")
    for name, value in zip(("scales[0]", "scales[1]"), scales):
        check_scale_attr(op, name, value)
    if grads is not None:
        check_rank(op, "grads", grads, 4, "[N, C, H_out, W_out]")
        for axis, name in ((2, "H_out"), (3, "W_out")):
            if grads[axis] is not None and grads[axis] <= 0:
                raise ResampleGradError(op, f"input 'grads' must have a positive {name} (dimension {axis}), got shape {list(grads)}")
    if original_image is not None:
        check_rank(op, "original_image", original_image, 4, "[N, C, H_in, W_in]")
        for axis, name in ((2, "H_in"), (3, "W_in")):
            if original_image[axis] is not None and original_image[axis] <= 0:
                raise ResampleGradError(
                    op, f"input 'original_image' must have a positive {name} (dimension {axis}), got shape {list(original_image)}")
    if grads is not None and original_image is not None:
        check_dim_equal(op, "grads", 0, grads[0], "original_image", 0, original_image[0])
        check_dim_equal(op, "grads", 1, grads[1], "original_image", 1, original_image[1])


def interpolation_matrix(input_len: int, output_len: int, align_corners: int, half_pixel_centers: int,
                         scale: float, acc: np.dtype) -> np.ndarray:
    """M[out, in]: the weight with which output position `out` reads input position `in`."""
    dst = np.arange(output_len)
    if not (align_corners or half_pixel_centers):
        # TensorFlow legacy: float32 coordinates; the top index is also clamped (TF leaves it unguarded).
        ratio = np.float32(1.0 / float(np.float32(scale))) if scale > 0 else np.float32(input_len) / np.float32(output_len)
        src = dst.astype(np.float32) * ratio
        low = np.floor(src)
        top = np.minimum(low.astype(np.int64), input_len - 1)
        bottom = np.minimum(np.ceil(src).astype(np.int64), input_len - 1)
        lerp = (src - low).astype(acc)
        weight_top, weight_bottom = 1 - lerp, lerp
    elif output_len == input_len:  # aten copies when the sizes agree, whatever the scale
        return np.eye(output_len, dtype=acc)
    else:
        if align_corners:  # area_pixel_compute_scale ignores scales here
            ratio = acc.type(input_len - 1) / acc.type(output_len - 1) if output_len > 1 else acc.type(0)
            src = ratio * dst.astype(acc)
        else:
            ratio = acc.type(1.0 / float(np.float32(scale))) if scale > 0 else acc.type(input_len) / acc.type(output_len)
            src = ratio * (dst.astype(acc) + acc.type(0.5)) - acc.type(0.5)
            src = np.where(src < 0, acc.type(0), src)
        # guard_index_and_lambda: floorf (float32) index, lambda clamped to [0, 1]
        top = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), input_len - 1)
        weight_bottom = np.clip(src - top.astype(acc), 0, 1).astype(acc)
        weight_top = 1 - weight_bottom
        bottom = top + (top < input_len - 1)
    matrix = np.zeros((output_len, input_len), acc)
    np.add.at(matrix, (dst, top), weight_top)
    np.add.at(matrix, (dst, bottom), weight_bottom)
    return matrix


def resize_bilinear_v2_grad(grads: np.ndarray, original_image: np.ndarray, align_corners: int = 0,
                            half_pixel_centers: int = 0, scales=(0.0, 0.0)) -> np.ndarray:
    dtype = check_float_dtypes(OP_TYPE, grads=grads, original_image=original_image)
    validate(int(align_corners), int(half_pixel_centers), scales, grads.shape, original_image.shape)
    acc = compute_dtype(dtype)
    h_in, w_in = original_image.shape[2:]
    h_out, w_out = grads.shape[2:]
    m_h = interpolation_matrix(h_in, h_out, align_corners, half_pixel_centers, scales[0], acc)
    m_w = interpolation_matrix(w_in, w_out, align_corners, half_pixel_centers, scales[1], acc)
    return (m_h.T @ grads.astype(acc) @ m_w).astype(dtype)


def _infer(ctx):
    image = input_shape(ctx, 1)
    validate(attribute_value(ctx, "align_corners", 0), attribute_value(ctx, "half_pixel_centers", 0),
             attribute_value(ctx, "scales", [0.0, 0.0]), input_shape(ctx, 0), image)
    ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 0), image))


SCHEMA = make_schema(
    OP_TYPE,
    "Gradient of bilinear resize: each grads element is spread over the four input pixels the forward "
    "resize read, with the same bilinear weights. Coordinate modes: align_corners=1 (torch "
    "align_corners=True), half_pixel_centers=1 (torch align_corners=False), both 0 (TensorFlow legacy).",
    inputs=[("grads", "Gradient of the resized tensor, [N, C, H_out, W_out].", False),
            ("original_image", "The forward input, [N, C, H_in, W_in]; only its shape is read.", False)],
    outputs=[("y", "Gradient of the forward input, shaped like original_image.", False)],
    attributes=[
        ("align_corners", 0, "1: corner pixels of input and output are aligned (src = dst * (in-1)/(out-1))."),
        ("half_pixel_centers", 0, "1: half-pixel centres (src = (dst + 0.5) * scale - 0.5, clamped at 0). "
                                  "Both 0: TensorFlow's legacy mode (src = dst * scale). Both 1 is an error."),
        ("scales", [0.0, 0.0], "[scale_h, scale_w], forward scales out / in. A value > 0 makes that axis's index "
                               "scale 1 / value when align_corners is 0; ignored when align_corners is 1 (as torch)."),
    ],
    infer=_infer,
)


@script(OPSET, default_opset=op)
def _function(grads, original_image, align_corners: int = 0, half_pixel_centers: int = 0,
              scales: list[float] = (0.0, 0.0)):
    """M_h^T @ grads @ M_w with the bilinear interpolation matrices of both axes; in double."""
    corners = op.Constant(value_int=align_corners)
    half = op.Constant(value_int=half_pixel_centers)
    scale = op.Constant(value_floats=scales)
    rows = BilinearMatrix(op.Shape(original_image, start=2, end=3), op.Shape(grads, start=2, end=3), corners, half,
                          op.Gather(scale, 0))
    cols = BilinearMatrix(op.Shape(original_image, start=3, end=4), op.Shape(grads, start=3, end=4), corners, half,
                          op.Gather(scale, 1))
    return op.CastLike(SeparableBackward(op.Cast(grads, to=DOUBLE), rows, cols), grads)


FUNCTION = finish(_function, OP_TYPE, ["y"])
