"""ResizeGrad: the exact adjoint of ONNX Resize (opsets 11, 13, 18 and 19) as onnxruntime computes it.

    dX = ResizeGrad(dY, X, roi, scales, sizes; the attributes of the forward Resize)

X gives the shape (as onnxruntime training's com.microsoft::ResizeGrad); roi, scales and sizes are
the forward's own inputs, run-time tensors, so scales computed by the graph just work. Resize is
separable: per resized axis a matrix of taps (_onnx_resize.axis_taps), and dX is dY contracted with
their transposes. Outputs that Resize extrapolates (tf_crop_and_resize) get no gradient, so
extrapolation_value does not enter. An axis the forward keeps (scale exactly 1) is the identity.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import defs

from . import _onnx_resize
from ._common import (
    FLOAT_TYPES,
    ResampleGradError,
    attribute_value,
    check_float_dtypes,
    input_elem_type,
    input_shape,
    make_schema,
    make_tensor_type,
)
from ._graph import BodyKey
from ._onnx_resize import COORDINATE_MODES, NEAREST_MODES, POLICIES, ResizeAttributes
from ._resize_body import resize_grad_body
from ._resize_v2 import constant_input
from ._taps import separable_backward

OP_TYPE = "ResizeGrad"
OPTIONAL_INPUTS = ("roi", "scales", "sizes")


def _attributes(values: dict) -> ResizeAttributes:
    defaults = ResizeAttributes()
    given = {k: v for k, v in values.items() if v is not None}
    if "axes" in given:
        given["axes"] = tuple(int(a) for a in given["axes"]) or None
    attrs = ResizeAttributes(**{**defaults.__dict__, **given})
    attrs.validate(OP_TYPE)
    return attrs


def expected_output_shape(attrs: ResizeAttributes, x_shape, roi, scales, sizes) -> list:
    return [p.output_size for p in _onnx_resize.plan(OP_TYPE, attrs, x_shape, roi, scales, sizes)]


def _check_output(dy_shape, x_shape, expected) -> None:
    if list(dy_shape) != list(expected):
        raise ResampleGradError(OP_TYPE, f"input 'dY' has shape {list(dy_shape)} but Resize of X {list(x_shape)} with "
                                         f"these scales/sizes gives {list(expected)}")


def resize_grad(dY: np.ndarray, X: np.ndarray, roi=None, scales=None, sizes=None, **attributes) -> np.ndarray:
    """dX, the gradient of Resize(X, roi, scales, sizes) for the output gradient dY."""
    check_float_dtypes(OP_TYPE, dY=dY, X=X)
    attrs = _attributes(attributes)
    if X.ndim == 0:
        raise ResampleGradError(OP_TYPE, "input 'X' must have rank >= 1 (as Resize), got a scalar")
    if dY.ndim != X.ndim:
        raise ResampleGradError(OP_TYPE, f"input 'dY' must have the rank of X ({X.ndim}), got shape {list(dY.shape)}")
    plan = _onnx_resize.plan(OP_TYPE, attrs, X.shape, roi, scales, sizes)
    _check_output(dY.shape, X.shape, [p.output_size for p in plan])
    if list(dY.shape) == list(X.shape):  # Resize copies when the shape does not change
        return dY.copy()
    taps = [None if _onnx_resize._is_identity(attrs, p) else _onnx_resize.axis_taps(attrs, p) for p in plan]
    return separable_backward(dY, taps, X.shape)


# --------------------------------------------------------------------------- schema

ATTRIBUTES = [
    ("mode", "nearest", "As Resize: 'nearest' (default), 'linear' or 'cubic'."),
    ("coordinate_transformation_mode", "half_pixel",
     "As Resize: " + ", ".join(repr(m) for m in COORDINATE_MODES) + "."),
    ("nearest_mode", "round_prefer_floor", "As Resize: " + ", ".join(repr(m) for m in NEAREST_MODES) + "."),
    ("cubic_coeff_a", -0.75, "As Resize: the cubic coefficient A."),
    ("exclude_outside", 0, "As Resize: 1 drops the cubic (and antialias) taps outside the input and renormalises."),
    ("extrapolation_value", 0.0, "As Resize (tf_crop_and_resize); extrapolated outputs get no gradient, so the value "
                                 "does not change dX."),
    ("antialias", 0, "As Resize-18: 1 stretches the linear / cubic filter by the downscale factor."),
    ("axes", defs.OpSchema.AttrType.INTS, "As Resize-18: the axes roi, scales and sizes refer to (negative counts "
                                          "from the end); default all."),
    ("keep_aspect_ratio_policy", "stretch", "As Resize-18: " + ", ".join(repr(p) for p in POLICIES) + " (with sizes)."),
]


def _infer(ctx):
    values = {name: attribute_value(ctx, name, None) for name, _, _ in ATTRIBUTES}
    attrs = _attributes(values)
    dy_shape, x_shape = input_shape(ctx, 0), input_shape(ctx, 1)
    if dy_shape is not None and x_shape is not None:
        if len(dy_shape) != len(x_shape):
            raise ResampleGradError(OP_TYPE, f"input 'dY' must have the rank of X ({len(x_shape)}), got shape "
                                             f"{list(dy_shape)}")
        constants = {name: constant_input(ctx, 2 + k) if ctx.has_input(2 + k) else np.zeros(0)
                     for k, name in enumerate(OPTIONAL_INPUTS)}
        known = all(v is not None for v in constants.values()) and None not in x_shape
        if known:
            expected = expected_output_shape(attrs, x_shape, *[constants[n] for n in OPTIONAL_INPUTS])
            _check_output([d if d is not None else e for d, e in zip(dy_shape, expected, strict=True)], x_shape,
                          expected)
        elif attrs.axes is not None:
            _onnx_resize._axes(OP_TYPE, attrs.axes, len(x_shape))
    if dy_shape is not None and x_shape is None:
        x_shape = [None] * len(dy_shape)
    ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 1), x_shape))


SCHEMA = make_schema(
    OP_TYPE,
    "The gradient of ONNX Resize (opsets 11 to 19) as onnxruntime computes the forward: dX = the adjoint of "
    "Resize(X, roi, scales, sizes) applied to dY. Every attribute as Resize; roi, scales and sizes are the forward's "
    "own (run-time) inputs, exactly one of scales and sizes non-empty.",
    inputs=[("dY", "Gradient of Resize's output.", False),
            ("X", "The forward input; only its shape is read.", False),
            ("roi", "As Resize (read by tf_crop_and_resize only); optional, empty means none.", True, "T2"),
            ("scales", "As Resize: float scales; optional, empty means none.", True, "tensor(float)"),
            ("sizes", "As Resize: int64 output sizes; optional, empty means none.", True, "tensor(int64)")],
    outputs=[("dX", "Gradient of X, shaped like it.", False)],
    attributes=ATTRIBUTES, infer=_infer, since_version=2,
    type_constraints=[("T2", FLOAT_TYPES, "The roi's type, as Resize's T2.")])


# --------------------------------------------------------------------------- the row


@dataclasses.dataclass(frozen=True)
class ResizeGradSpec:
    """The op's row, as the families' spec classes (opset/__init__.py makes the evaluator from it)."""
    op_type: str = OP_TYPE
    schema: onnx.defs.OpSchema = SCHEMA
    rank_input: int = 1  # the body depends on X's rank (attach() puts it in the key as "rank")

    reference = staticmethod(resize_grad)

    @staticmethod
    def body(key: BodyKey) -> onnx.FunctionProto:
        """The function body of a node of these attributes (_resize_body.resize_grad_body)."""
        return resize_grad_body(key, ["dY", "X", *OPTIONAL_INPUTS], key.attribute("rank"))


SPEC = ResizeGradSpec()
