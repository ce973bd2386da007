"""The torch-style Upsample*Grad family: one row per op, the attribute checks and the reference.

Every op here is the backward of an aten upsample: grad_output [N, C, *out] -> grad_input
[N, C, *in], separable, with one tap function of _taps.py per spatial axis. A row says
which tap function, how many spatial axes the op takes (the 2-D ops also serve aten's 1-D
op with a 3-D grad_output, the axis then being W), and the GE attribute names that carry
the forward scales (torch-style: output / input; 0 or absent: the size ratio).
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
    check_float_dtypes,
    check_output_size,
    check_scale_attr,
    compute_dtype,
    input_elem_type,
    input_shape,
    make_schema,
    make_tensor_type,
    resolve_input_size,
)
from ._graph import BodyKey
from ._separable_body import upsample_body

AXIS_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


@dataclasses.dataclass(frozen=True)
class UpsampleSpec:
    """An op's row: what its schema, reference, function body, evaluator (opset/__init__.py) and C++ row
    (opset/_native_rows.py) are made from."""
    op_type: str
    since_version: int
    spatial_ranks: tuple[int, ...]  # spatial axes the op accepts, the main form first
    taps: str  # a key of _taps.TAP_KINDS
    scales: tuple[str, ...] = ()  # one float attribute per spatial axis of the main form
    scales_list: str = ""  # or one list attribute holding them all
    align_corners: bool = False
    output_size_required: bool = False
    output_size_or_scales: bool = False  # GE: exactly one of output_size and scales
    axis_names: tuple[str, ...] | None = None  # default AXIS_NAMES by rank
    output: str = "grad_input"
    doc: str = ""  # the schema's description
    rank_input = None  # the body depends on no input's rank

    # ----------------------------------------------------------------------- checks

    def names(self, spatial: int) -> tuple[str, ...]:
        return self.axis_names if self.axis_names and len(self.axis_names) == spatial else AXIS_NAMES[spatial]

    def layout(self, spatial: int, suffix: str = "") -> str:
        return "[N, C, " + ", ".join(f"{n}{suffix}" for n in self.names(spatial)) + "]"

    def scale_values(self, attrs: dict, spatial: int) -> list:
        """The forward scale of each spatial axis (0 when not given), last axis last."""
        if self.scales_list:
            values = [float(v) for v in (attrs.get(self.scales_list) or [])]
            if values and len(values) != spatial:
                raise ResampleGradError(self.op_type, f"attribute '{self.scales_list}' must have {spatial} values "
                                                      f"[{', '.join(self.names(spatial))}], got {values}")
            names = [f"{self.scales_list}[{k}]" for k in range(spatial)]
            values = values or [0.0] * spatial
            for name, value in zip(names, values, strict=True):
                check_scale_attr(self.op_type, name, value)
            return values
        # every scale attribute, as the kernel: the 1-D form of a 2-D op does not read scales_h, but a bad value
        # there is still a bad node
        for name in self.scales:
            check_scale_attr(self.op_type, name, float(attrs.get(name) or 0.0))
        return [float(attrs.get(name) or 0.0) for name in self.scales[len(self.scales) - spatial:]]

    def validate(self, grad_shape: Sequence | None, attrs: dict) -> tuple[list, int]:
        """Checks the attributes against grad_output's shape: (grad_input shape with None where unknown,
        number of spatial axes)."""
        op = self.op_type
        if self.align_corners:
            check_bool_attr(op, "align_corners", int(attrs.get("align_corners") or 0))
        input_size = attrs.get("input_size")
        if grad_shape is not None:
            spatial = len(grad_shape) - 2
            if spatial not in self.spatial_ranks:
                forms = " or ".join(f"{2 + r}-D {self.layout(r, '_out')}" for r in self.spatial_ranks)
                raise ResampleGradError(op, f"input 'grad_output' must be {forms}, got shape {list(grad_shape)}")
        elif input_size is not None and len(input_size) - 2 in self.spatial_ranks:
            spatial = len(input_size) - 2
        else:
            spatial = self.spatial_ranks[0]
        grad_shape = [None] * (2 + spatial) if grad_shape is None else list(grad_shape)
        scales = self.scale_values(attrs, spatial)
        output_size = attrs.get("output_size")
        if self.output_size_required and not output_size:
            raise ResampleGradError(op, f"attribute 'output_size' is required: {spatial} ints "
                                        f"[{', '.join(self.names(spatial))}]")
        if self.output_size_or_scales and output_size and any(scales):
            raise ResampleGradError(op, f"give exactly one of the attributes 'output_size' and '{self.scales_list}', "
                                        f"got both ({list(output_size)} and {scales})")
        names = self.names(spatial)
        check_output_size(op, output_size, grad_shape[2:], names)
        if input_size is not None and len(input_size) != 2 + spatial:
            raise ResampleGradError(op, f"attribute 'input_size' must have {2 + spatial} values "
                                        f"{self.layout(spatial)}, got {[int(v) for v in input_size]}")
        return resolve_input_size(op, input_size, grad_shape, names), spatial

    # ----------------------------------------------------------------------- reference

    def reference(self, grad_output: np.ndarray, **attrs) -> np.ndarray:
        check_float_dtypes(self.op_type, grad_output=grad_output)
        shape, spatial = self.validate(grad_output.shape, attrs)
        opmath = compute_dtype(grad_output.dtype)
        scales = self.scale_values(attrs, spatial)
        corners = bool(attrs.get("align_corners") or 0)
        taps = [None, None] + _taps.axes_taps(self.taps, shape[2:], grad_output.shape[2:], scales, corners, False,
                                              opmath)
        return _taps.separable_backward(grad_output, taps, shape)

    # ----------------------------------------------------------------------- schema

    @functools.cached_property
    def schema(self) -> defs.OpSchema:
        main = self.spatial_ranks[0]
        attributes = [("input_size", defs.OpSchema.AttrType.INTS,
                       f"Required. {self.layout(main)}, the forward input's shape"
                       + (f" ({self.layout(1)} for the 1-D form)" if 1 in self.spatial_ranks[1:] else "")
                       + ". N or C may be -1: taken from grad_output.")]
        attributes.append(("output_size", defs.OpSchema.AttrType.INTS,
                           ("Required. " if self.output_size_required else "Optional. ")
                           + f"[{', '.join(self.names(main))}] of grad_output; checked against it."))
        if self.align_corners:
            attributes.append(("align_corners", 0, "1: the corner pixels of input and output are aligned "
                                                   "(torch align_corners=True); 0 (default): half-pixel centres."))
        scale_doc = ("Forward scale output / input of that axis, as torch's scale argument. 0 (default): the size "
                     "ratio is used; > 0: the index scale is 1 / scale. Negative is an error.")
        if self.scales_list:
            attributes.append((self.scales_list, defs.OpSchema.AttrType.FLOATS,
                               f"Optional. [{', '.join(self.names(main))}]. " + scale_doc
                               + (" Give output_size or scales, not both." if self.output_size_or_scales else "")))
        for name in self.scales:
            attributes.append((name, 0.0, scale_doc))

        def infer(ctx):
            attrs = {name: attribute_value(ctx, name, None) for name, *_ in attributes}
            shape, _ = self.validate(input_shape(ctx, 0), attrs)
            ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 0), shape))

        forms = " or ".join(f"{2 + r}-D {self.layout(r, '_out')}" for r in self.spatial_ranks)
        return make_schema(
            self.op_type, self.doc,
            inputs=[("grad_output", f"Gradient of the upsampled tensor, {forms}.", False)],
            outputs=[(self.output, "Gradient of the forward input, shaped as input_size.", False)],
            attributes=attributes, infer=infer, since_version=self.since_version)

    # ----------------------------------------------------------------------- function body

    def body(self, key: BodyKey) -> onnx.FunctionProto:
        return upsample_body(self, key)
