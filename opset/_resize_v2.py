"""The CANN Resize*V2Grad / ResizeLinearGrad family: one row per op, the checks and the reference.

These ops take the gradient `grads` [N, C, *out] and the forward input's shape, from the tensor
`original_image` (only its shape is read) or from an int tensor `size` [H, W], and return y
shaped like the forward input. Coordinate modes are align_corners / half_pixel_centers flags;
`scales` are forward scales (output / input) that replace the size ratio when align_corners is
0 (as CANN's kernels use them). Layout NCHW (NCL for the 1-D op).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import defs

from . import _taps
from ._common import (
    ResampleGradError,
    attribute_value,
    check_bool_attr,
    check_dim_equal,
    check_float_dtypes,
    check_positive_spatial,
    check_rank,
    check_scale_attr,
    compute_dtype,
    input_elem_type,
    input_shape,
    make_schema,
    make_tensor_type,
)
from ._graph import BodyKey
from ._separable_body import resize_v2_body

SIZE_TYPES = ["tensor(int32)", "tensor(int64)"]


@dataclasses.dataclass(frozen=True)
class ResizeV2Spec:
    """An op's row: what its schema, reference, function body, evaluator (opset/__init__.py) and C++ row
    (opset/_native_rows.py) are made from."""
    op_type: str
    since_version: int
    spatial: int  # 2 (NCHW) or 1 (NCL)
    taps: str  # a key of _taps.TAP_KINDS
    half_pixel_centers: bool = False  # has the attribute (else: align_corners or half-pixel)
    scale_attr: str = "scales"  # "scales" (a list, one per axis) or "scale" (one float)
    shape_input: str = "original_image"  # or "size"
    doc: str = ""  # the schema's description
    modes_doc: str = ""  # the coordinate modes besides align_corners, for align_corners' description
    rank_input = None  # the body depends on no input's rank

    @property
    def names(self) -> tuple[str, ...]:
        return ("H", "W") if self.spatial == 2 else ("L",)

    def layout(self, suffix: str) -> str:
        return "[N, C, " + ", ".join(f"{n}{suffix}" for n in self.names) + "]"

    def scale_values(self, value) -> list:
        if self.scale_attr == "scale":
            values, names = [float(value or 0.0)], ["scale"]
        else:
            values = [0.0] * self.spatial if value is None else [float(v) for v in value]
            if len(values) != self.spatial:
                raise ResampleGradError(self.op_type, f"attribute 'scales' must have {self.spatial} values "
                                                      f"[{', '.join(f'scale_{n.lower()}' for n in self.names)}], got "
                                                      f"{values}")
            names = [f"scales[{k}]" for k in range(self.spatial)]
        for name, v in zip(names, values, strict=True):
            check_scale_attr(self.op_type, name, v)
        return values

    def validate(self, align_corners: int, half_pixel_centers: int, scales, grads: Sequence | None,
                 original: Sequence | None) -> list:
        """Checks attributes and shapes (None where unknown); returns y's shape. `original` is
        original_image's shape, or [H, W] from `size` (None entries where unknown)."""
        op = self.op_type
        check_bool_attr(op, "align_corners", align_corners)
        if self.half_pixel_centers:
            check_bool_attr(op, "half_pixel_centers", half_pixel_centers)
            if align_corners and half_pixel_centers:
                raise ResampleGradError(op, "attributes 'align_corners' and 'half_pixel_centers' cannot both be 1")
        self.scale_values(scales)
        rank = 2 + self.spatial
        if grads is not None:
            check_rank(op, "grads", grads, rank, self.layout("_out"))
            check_positive_spatial(op, "grads", grads, self.names, "_out")
        if self.shape_input == "size":
            if original is not None:
                if len(original) != self.spatial:
                    raise ResampleGradError(op, f"input 'size' must hold {self.spatial} values "
                                                f"[{', '.join(f'{n}_in' for n in self.names)}], got {list(original)}")
                for name, value in zip(self.names, original, strict=True):
                    if value is not None and value <= 0:
                        raise ResampleGradError(op,
                                                f"input 'size' must hold a positive {name}_in, got {list(original)}")
            batch = [None, None] if grads is None else list(grads[:2])
            return batch + (list(original) if original is not None else [None] * self.spatial)
        if original is not None:
            check_rank(op, "original_image", original, rank, self.layout("_in"))
            check_positive_spatial(op, "original_image", original, self.names, "_in")
        if grads is not None and original is not None:
            check_dim_equal(op, "grads", 0, grads[0], "original_image", 0, original[0])
            check_dim_equal(op, "grads", 1, grads[1], "original_image", 1, original[1])
        return None if original is None else list(original)

    # ----------------------------------------------------------------------- reference

    def reference(self, grads: np.ndarray, original: np.ndarray, align_corners: int = 0, half_pixel_centers: int = 0,
                  **scale_attr) -> np.ndarray:
        """y from grads and original_image (or size); scale_attr: the op's scale attribute (scales or scale), if
        given."""
        unknown = sorted(set(scale_attr) - {self.scale_attr})
        if unknown:
            raise ResampleGradError(self.op_type, f"unknown attribute(s) {unknown}; the scale attribute is "
                                                  f"'{self.scale_attr}'")
        scales = scale_attr.get(self.scale_attr)
        if self.shape_input == "size":
            check_float_dtypes(self.op_type, grads=grads)
            if original.dtype not in (np.int32, np.int64):
                raise ResampleGradError(self.op_type,
                                        f"input 'size' has dtype {original.dtype}; expected int32 or int64")
            spatial_in = [int(v) for v in original.reshape(-1)]
        else:
            check_float_dtypes(self.op_type, grads=grads, original_image=original)
            spatial_in = list(original.shape[2:])
        shape = self.validate(int(align_corners), int(half_pixel_centers), scales, grads.shape,
                              spatial_in if self.shape_input == "size" else original.shape)
        values = self.scale_values(scales)
        opmath = compute_dtype(grads.dtype)
        taps = [None, None] + _taps.axes_taps(self.taps, shape[2:], grads.shape[2:], values, bool(align_corners),
                                              bool(half_pixel_centers), opmath)
        return _taps.separable_backward(grads, taps, shape)

    # ----------------------------------------------------------------------- schema

    @functools.cached_property
    def schema(self) -> defs.OpSchema:
        attributes = [("align_corners", 0, "1: the corner pixels of input and output are aligned, "
                                           "src = dst * (in - 1) / (out - 1). " + self.modes_doc)]
        if self.half_pixel_centers:
            attributes.append(("half_pixel_centers", 0, "1: half-pixel centres. Both flags 1 is an error."))
        if self.scale_attr == "scale":
            attributes.append(("scale", 0.0, "Forward scale output / input; > 0 replaces the size ratio (index scale "
                                             "1 / scale) when align_corners is 0. 0 (default): the size ratio."))
        else:
            attributes.append(("scales", [0.0] * self.spatial,
                               f"[{', '.join(f'scale_{n.lower()}' for n in self.names)}], forward scales output / "
                               f"input; "
                               "a value > 0 replaces that axis's size ratio (index scale 1 / value) when align_corners "
                               "is 0. Default zeros: the size ratios."))
        if self.shape_input == "size":
            inputs = [("grads", f"Gradient of the resized tensor, {self.layout('_out')}.", False),
                      ("size", "The forward input's [H_in, W_in], int32 or int64.", False, "Tsize")]
            constraints = [("Tsize", SIZE_TYPES, "int32 (as CANN's `size`) or int64.")]
        else:
            inputs = [("grads", f"Gradient of the resized tensor, {self.layout('_out')}.", False),
                      ("original_image", f"The forward input, {self.layout('_in')}; only its shape is read.", False)]
            constraints = []

        def infer(ctx):
            value = lambda name, default: attribute_value(ctx, name, default)  # noqa: E731
            if self.shape_input == "size":
                size = constant_input(ctx, 1)
                original = None if size is None else [int(v) for v in size.reshape(-1)]
            else:
                original = input_shape(ctx, 1)
            shape = self.validate(value("align_corners", 0), value("half_pixel_centers", 0),
                                  value(self.scale_attr, None), input_shape(ctx, 0), original)
            ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 0), shape))

        return make_schema(self.op_type, self.doc, inputs=inputs,
                           outputs=[("y", "Gradient of the forward input: [N, C, *spatial_in].", False)],
                           attributes=attributes, infer=infer, since_version=self.since_version,
                           type_constraints=constraints)

    # ----------------------------------------------------------------------- function body

    def body(self, key: BodyKey) -> onnx.FunctionProto:
        return resize_v2_body(self, key)


def constant_input(ctx, index: int) -> np.ndarray | None:
    """The value of a constant input under shape inference (None when it is not a constant)."""
    try:
        data = ctx.get_input_data(index)
    except Exception:  # noqa: BLE001 - older onnx, or not a constant
        return None
    if data is None:
        return None
    from onnx import numpy_helper
    return numpy_helper.to_array(data)
