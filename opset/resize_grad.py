"""ResizeGrad: the exact adjoint of ONNX Resize (opsets 11, 13, 18 and 19) as onnxruntime computes it.

    dX = ResizeGrad(dY, X, roi, scales, sizes; the attributes of the forward Resize)

X gives the shape (as onnxruntime training's com.microsoft::ResizeGrad); roi, scales and sizes are
the forward's own inputs, run-time tensors, so scales computed by the graph just work. Resize is
separable: per resized axis a matrix of taps (_onnx_resize.axis_taps), and dX is dY contracted with
their transposes. Outputs that Resize extrapolates (tf_crop_and_resize) get no gradient, so
extrapolation_value does not enter. An axis the forward keeps (scale exactly 1) is the identity.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import defs

from onnxscript import opset18 as op
from onnxscript import script

from . import _onnx_resize
from ._common import (
    FLOAT_TYPES, ReferenceOp, ResampleGradError, attribute_value, check_dim_equal, check_float_dtypes, input_elem_type,
    input_shape, make_schema, make_tensor_type,
)
from ._onnx_resize import COORDINATE_MODES, MODES, NEAREST_MODES, POLICIES, ResizeAttributes
from ._resize_v2 import constant_input
from ._script import DOUBLE, INT64, OPSET, ToOpmath, finish_bodies, ml
from ._script_resize import ResizeAxisMatrix
from ._script_taps import ContractAxis
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


class ResizeGrad(ReferenceOp):
    def _run(self, dY, X, roi=None, scales=None, sizes=None, mode=None, coordinate_transformation_mode=None,
             nearest_mode=None, cubic_coeff_a=None, exclude_outside=None, extrapolation_value=None, antialias=None,
             axes=None, keep_aspect_ratio_policy=None):
        values = dict(mode=mode, coordinate_transformation_mode=coordinate_transformation_mode,
                      nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                      extrapolation_value=extrapolation_value, antialias=antialias, axes=axes,
                      keep_aspect_ratio_policy=keep_aspect_ratio_policy)
        values = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in values.items()}
        return (resize_grad(dY, X, roi, scales, sizes, **values),)


# --------------------------------------------------------------------------- schema

ATTRIBUTES = [
    ("mode", "nearest", "As Resize: 'nearest' (default), 'linear' or 'cubic'."),
    ("coordinate_transformation_mode", "half_pixel", "As Resize: " + ", ".join(repr(m) for m in COORDINATE_MODES) + "."),
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
            _check_output([d if d is not None else e for d, e in zip(dy_shape, expected)], x_shape, expected)
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


# --------------------------------------------------------------------------- onnxscript function

@script(OPSET, default_opset=op)
def _function(dY, X, roi, scales, sizes, mode: str = "nearest", coordinate_transformation_mode: str = "half_pixel",
              nearest_mode: str = "round_prefer_floor", cubic_coeff_a: float = -0.75, exclude_outside: int = 0,
              extrapolation_value: float = 0.0, antialias: int = 0, axes: list[int] = (),
              keep_aspect_ratio_policy: str = "stretch"):
    """Each resized axis contracted with its dense tap matrix (_script_resize.ResizeAxisMatrix), in a Loop over the
    axes, in the body's arithmetic type (_script.ToOpmath). attach() gives every node all five inputs (an absent one as an empty tensor). Run-time values
    the kernel refuses (scales and sizes both or neither given, a wrong count, a scale not finite and > 0, a size <= 0,
    scales with a keep_aspect_ratio_policy, a roi of the wrong length, sizes making an empty axis non-empty) and a dY
    whose shape Resize would not produce give NaN shaped like X (a function cannot raise; the kernel names the fault)."""
    mode_code = ml.LabelEncoder(op.Constant(value_string=mode), default_int64=-1,
                                keys_strings=["nearest", "linear", "cubic"], values_int64s=[0, 1, 2])
    ctm = ml.LabelEncoder(op.Constant(value_string=coordinate_transformation_mode), default_int64=-1,
                          keys_strings=["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"],
                          values_int64s=[0, 1, 2, 3, 4, 5, 6])
    rounding = ml.LabelEncoder(op.Constant(value_string=nearest_mode), default_int64=-1,
                               keys_strings=["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"],
                               values_int64s=[0, 1, 2, 3])
    policy = ml.LabelEncoder(op.Constant(value_string=keep_aspect_ratio_policy), default_int64=-1,
                             keys_strings=["stretch", "not_larger", "not_smaller"], values_int64s=[0, 1, 2])
    a = op.Constant(value_float=cubic_coeff_a)
    outside = op.Constant(value_int=exclude_outside)
    smooth = op.Constant(value_int=antialias)
    in_dims = op.Shape(X)
    out_dims = op.Shape(dY)
    rank = op.Size(in_dims)
    given_axes = op.Constant(value_ints=axes)
    if op.Equal(op.Size(given_axes), 0):
        listed = op.Range(op.Constant(value_int=0), rank, op.Constant(value_int=1))
    else:
        listed = op.Mod(op.Add(given_axes, rank), rank)
    count = op.Size(listed)
    count_1d = op.Reshape(count, op.Constant(value_ints=[1]))
    ones = op.Expand(op.Constant(value_float=1.0), op.Reshape(rank, op.Constant(value_ints=[1])))
    in_float = op.Cast(in_dims, to=onnx.TensorProto.FLOAT)
    # The absent ones of scales / sizes / roi are padded to full length, so every branch has valid shapes.
    listed_in = op.Gather(in_float, listed)
    flat = op.Constant(value_ints=[-1])  # scales and sizes of any rank read flat, as the kernel and the reference
    given_scales = op.Slice(op.Concat(op.Cast(op.Reshape(scales, flat), to=onnx.TensorProto.FLOAT), op.Expand(op.Constant(value_float=1.0),
                                                                                            count_1d), axis=0),
                            op.Constant(value_ints=[0]), count_1d)
    given_sizes = op.Slice(op.Concat(op.Reshape(sizes, flat), op.Gather(in_dims, listed), axis=0), op.Constant(value_ints=[0]), count_1d)
    # per-axis scale and expected output length, as onnxruntime's Resize computes them
    ratios = op.Div(op.Cast(given_sizes, to=onnx.TensorProto.FLOAT), listed_in)
    joint = op.Where(op.Equal(policy, 1), op.ReduceMin(ratios, keepdims=1), op.ReduceMax(ratios, keepdims=1))
    chosen = op.Where(op.Equal(policy, 0), ratios, op.Expand(joint, op.Shape(ratios)))
    has_scales = op.Greater(op.Size(scales), 0)
    scale_of = op.ScatterElements(ones, listed, op.Where(has_scales, given_scales, chosen))
    product = op.Mul(scale_of, in_float)
    from_scales = op.Cast(product, to=INT64)  # ComputeOutputShape: the float product, truncated
    from_policy = op.Cast(op.Floor(op.Add(product, 0.5)), to=INT64)  # std::round of a positive value
    from_sizes = op.Where(op.Equal(policy, 0), op.ScatterElements(in_dims, listed, given_sizes), from_policy)
    expected = op.Where(has_scales, from_scales, from_sizes)
    flat_roi = op.Cast(op.Reshape(roi, op.Constant(value_ints=[-1])), to=onnx.TensorProto.FLOAT)
    default_roi = op.Concat(op.Expand(op.Constant(value_float=0.0), count_1d), op.Expand(op.Constant(value_float=1.0),
                                                                                          count_1d), axis=0)
    use_roi = op.And(op.Equal(ctm, 6), op.Equal(op.Size(roi), op.Mul(count, 2)))
    padded_roi = op.Slice(op.Concat(flat_roi, default_roi, axis=0), op.Constant(value_ints=[0]), op.Mul(count_1d, 2))
    roi_values = op.Where(use_roi, padded_roi, default_roi)
    zeros = op.Sub(ones, ones)
    starts = op.ScatterElements(zeros, listed, op.Slice(roi_values, op.Constant(value_ints=[0]), count_1d))
    ends = op.ScatterElements(ones, listed, op.Slice(roi_values, count_1d, op.Mul(count_1d, 2)))
    # Everything the kernel refuses at run time (the values attach() cannot see) gives NaN shaped like X.
    has_sizes = op.Greater(op.Size(sizes), 0)
    refused = op.Or(op.Equal(has_scales, has_sizes),
                    op.Or(op.And(has_scales, op.Not(op.Equal(op.Size(scales), count))),
                          op.And(has_sizes, op.Not(op.Equal(op.Size(sizes), count)))))
    finite = op.Not(op.IsInf(given_scales))
    bad_scales = op.Equal(op.ReduceMin(op.Cast(op.And(op.Greater(given_scales, 0.0), finite), to=INT64), keepdims=0), 0)
    refused = op.Or(refused, op.And(has_scales, op.Or(bad_scales, op.Not(op.Equal(policy, 0)))))
    bad_sizes = op.Equal(op.ReduceMin(op.Cast(op.Greater(given_sizes, op.Constant(value_int=0)), to=INT64), keepdims=0), 0)
    refused = op.Or(refused, op.And(has_sizes, bad_sizes))
    empty_axis = op.And(op.Equal(in_dims, op.Constant(value_int=0)), op.Not(op.Equal(expected, op.Constant(value_int=0))))
    refused = op.Or(refused, op.Cast(op.ReduceMax(op.Cast(empty_axis, to=INT64), keepdims=0), to=onnx.TensorProto.BOOL))
    bad_roi = op.And(op.And(op.Equal(ctm, 6), op.Greater(op.Size(roi), 0)), op.Not(op.Equal(op.Size(roi), op.Mul(count, 2))))
    refused = op.Or(refused, bad_roi)
    mismatch = op.Equal(op.ReduceMin(op.Cast(op.Equal(expected, out_dims), to=INT64), keepdims=0), 0)
    invalid = op.Or(refused, mismatch)
    grad = ToOpmath(dY)
    changes = op.Equal(op.ReduceMin(op.Cast(op.Equal(out_dims, in_dims), to=INT64), keepdims=0), 0)  # else Resize copies
    if op.And(changes, op.Not(invalid)):
        # the axes Resize changes (antialias keeps an axis whose length is kept, the others one whose scale is 1),
        # first to last: a Loop over them alone carries grad without a copy per kept axis
        smoothing = op.Cast(smooth, to=onnx.TensorProto.BOOL)
        keeps = op.Or(op.And(smoothing, op.Equal(in_dims, out_dims)), op.And(op.Not(smoothing), op.Equal(scale_of, 1.0)))
        changed = op.Compress(op.Range(op.Constant(value_int=0), rank, op.Constant(value_int=1)), op.Not(keeps))
        for k in range(op.Size(changed)):
            axis = op.Gather(changed, k)
            position = op.Reshape(axis, op.Constant(value_ints=[1]))
            matrix = ResizeAxisMatrix(mode_code, ctm, rounding, a, outside, smooth, op.Gather(in_dims, position),
                                      op.Gather(out_dims, position), op.Gather(scale_of, axis),
                                      op.Gather(starts, axis), op.Gather(ends, axis))
            grad = ContractAxis(grad, op.Cast(matrix, to=DOUBLE), position)
    if invalid:
        nan = op.Div(op.Constant(value_float=0.0), op.Constant(value_float=0.0))
        result = op.CastLike(op.Expand(nan, in_dims), X)
    else:
        result = op.CastLike(grad, X)
    return result


FUNCTION, FUNCTION_FLOAT32 = finish_bodies(_function, OP_TYPE, ["dX"])
