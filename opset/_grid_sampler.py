"""What GridSampler2DGrad and GridSampler3DGrad share: the checks, the schema and the NumPy reference.

Grid sampling is not separable in the output (every grid point has its own coordinates), but it
is separable per point: along each spatial axis a point reads K taps (1 nearest, 2 bilinear, 4
bicubic) with weights and d weight / d coordinate, and the point reads the Cartesian product of
the axes' taps. The reference below is written once for 2-D and 3-D on that product; coordinates
follow aten's GridSampler.h (_coords.py).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import defs

from resample_grad.constants import PADDING_MODES

from . import _coords
from ._common import (
    ResampleGradError,
    attribute_value,
    check_bool_attr,
    check_choice_attr,
    check_dim_equal,
    check_float_dtypes,
    check_positive_spatial,
    check_rank,
    compute_dtype,
    input_elem_type,
    input_shape,
    make_schema,
    make_tensor_type,
)
from ._graph import BodyKey
from ._grid_body import grid_sampler_body

AXES = ("x", "y", "z")  # grid channel order: the last spatial axis first


@dataclasses.dataclass(frozen=True)
class GridSamplerSpec:
    """An op's row: what its schema, reference, function body and evaluator are made from (opset/__init__.py)."""
    op_type: str
    since_version: int
    spatial: int  # 2 or 3
    inputs: tuple[str, str, str]  # grad_output, input, grid names
    outputs: tuple[str, str]  # grad_input, grad_grid names
    modes: tuple[str, ...]
    doc: str = ""  # the schema's description
    rank_input = None  # the body depends on no input's rank

    @property
    def names(self) -> tuple[str, ...]:
        return ("H", "W") if self.spatial == 2 else ("D", "H", "W")

    def layouts(self) -> tuple[str, str, str]:
        out = ", ".join(f"{n}_out" for n in self.names)
        return (f"[N, C, {out}]", "[N, C, " + ", ".join(f"{n}_in" for n in self.names) + "]",
                f"[N, {out}, {self.spatial}]")

    def validate(self, interpolation_mode: str, padding_mode: str, align_corners: int, grad_output: Sequence | None,
                 input: Sequence | None, grid: Sequence | None) -> None:
        """The aclnn 161002 list: ranks, modes, matching dims, a non-empty image, the grid's last dimension.
        Shapes may be None (unknown rank) or hold None for a symbolic dimension."""
        op = self.op_type
        g_name, x_name, grid_name = self.inputs
        check_choice_attr(op, "interpolation_mode", interpolation_mode, self.modes)
        check_choice_attr(op, "padding_mode", padding_mode, PADDING_MODES)
        check_bool_attr(op, "align_corners", align_corners)
        rank = 2 + self.spatial
        g_layout, x_layout, grid_layout = self.layouts()
        if grad_output is not None:
            check_rank(op, g_name, grad_output, rank, g_layout)
        if input is not None:
            check_rank(op, x_name, input, rank, x_layout)
            check_positive_spatial(op, x_name, input, self.names, "_in")
        if grid is not None:
            check_rank(op, grid_name, grid, rank, grid_layout)
            if grid[-1] is not None and grid[-1] != self.spatial:
                raise ResampleGradError(op, f"input '{grid_name}' must have last dimension {self.spatial} "
                                            f"({', '.join(AXES[:self.spatial])}), got shape {list(grid)}")
        if input is not None and grid is not None:
            check_dim_equal(op, grid_name, 0, grid[0], x_name, 0, input[0])
        if input is not None and grad_output is not None:
            check_dim_equal(op, g_name, 0, grad_output[0], x_name, 0, input[0])
            check_dim_equal(op, g_name, 1, grad_output[1], x_name, 1, input[1])
        if grid is not None and grad_output is not None:
            for axis in range(2, rank):
                check_dim_equal(op, g_name, axis, grad_output[axis], grid_name, axis - 1, grid[axis - 1])

    # ----------------------------------------------------------------------- reference

    def reference(self, grad_output: np.ndarray, input: np.ndarray, grid: np.ndarray,
                  interpolation_mode: str = "bilinear", padding_mode: str = "zeros", align_corners: int = 0,
                  output_mask=(True, True)):
        """aten::grid_sampler_{2,3}d_backward in NumPy: (grad_input, grad_grid), None for an output masked off."""
        dtype = check_float_dtypes(self.op_type, **dict(zip(self.inputs, (grad_output, input, grid), strict=True)))
        self.validate(interpolation_mode, padding_mode, int(align_corners), grad_output.shape, input.shape, grid.shape)
        acc = compute_dtype(dtype)
        n, c = input.shape[:2]
        sizes = input.shape[2:]  # D, H, W (spatial order)
        points = int(np.prod(grid.shape[1:-1]))
        pixels = int(np.prod(sizes))
        g_out = grad_output.astype(acc).reshape(n, c, points)
        image = input.astype(acc).reshape(n, c, pixels)
        coords = grid.astype(acc).reshape(n, points, self.spatial)
        corners = bool(align_corners)

        # per spatial axis (spatial order): the taps of every point and d pixel / d grid
        with np.errstate(invalid="ignore", over="ignore"):
            axes = [_axis_taps(coords[..., self.spatial - 1 - a], sizes[a], interpolation_mode, padding_mode, corners)
                    for a in range(self.spatial)]

        grad_input = np.zeros((n, c, pixels), acc) if output_mask[0] else None
        grad_coord = [np.zeros((n, points), acc) for _ in range(self.spatial)]
        batch = np.broadcast_to(np.arange(n)[:, None], (n, points))
        strides = [int(np.prod(sizes[a + 1:])) for a in range(self.spatial)]
        for combo in itertools.product(*[taps for taps, _ in axes]):
            inside = np.logical_and.reduce([(i >= 0) & (i <= sizes[a] - 1) for a, (i, _, _) in enumerate(combo)])
            offset = sum(i * stride for (i, _, _), stride in zip(combo, strides, strict=True))
            flat = np.where(inside, offset, 0).astype(np.int64)
            weight = np.prod([w for _, w, _ in combo], axis=0)
            if grad_input is not None:
                np.add.at(grad_input, (batch[inside], slice(None), flat[inside]),
                          (g_out * weight[:, None, :]).transpose(0, 2, 1)[inside])
            if output_mask[1] and interpolation_mode != "nearest":
                value = np.take_along_axis(image, np.broadcast_to(flat[:, None, :], g_out.shape), axis=2)
                dot = np.where(inside, (value * g_out).sum(axis=1), 0)
                for a in range(self.spatial):
                    others = np.prod([w for b, (_, w, _) in enumerate(combo) if b != a], axis=0)
                    grad_coord[a] += dot * combo[a][2] * others

        out_input = grad_input.reshape(input.shape).astype(dtype) if grad_input is not None else None
        out_grid = None
        if output_mask[1]:
            # grid channels are x, y(, z): the last spatial axis first
            channels = [grad_coord[a] * axes[a][1] for a in reversed(range(self.spatial))]
            out_grid = np.stack(channels, axis=-1).reshape(grid.shape).astype(dtype)
        return out_input, out_grid

    # ----------------------------------------------------------------------- schema

    @functools.cached_property
    def schema(self) -> defs.OpSchema:
        g_layout, x_layout, grid_layout = self.layouts()
        g_name, x_name, grid_name = self.inputs
        modes = ", ".join(repr(m) for m in self.modes)

        def infer(ctx):
            image, grid = input_shape(ctx, 1), input_shape(ctx, 2)
            self.validate(attribute_value(ctx, "interpolation_mode", "bilinear"),
                          attribute_value(ctx, "padding_mode", "zeros"), attribute_value(ctx, "align_corners", 0),
                          input_shape(ctx, 0), image, grid)
            if ctx.has_output(0):
                ctx.set_output_type(0, make_tensor_type(input_elem_type(ctx, 1), image))
            if ctx.has_output(1):
                ctx.set_output_type(1, make_tensor_type(input_elem_type(ctx, 2), grid))

        coords = ", ".join(AXES[:self.spatial])
        return make_schema(
            self.op_type, self.doc,
            inputs=[(g_name, f"Gradient of the sampled output, {g_layout}.", False),
                    (x_name, f"The forward input image, {x_layout}; spatial sizes > 0.", False),
                    (grid_name, f"The forward sampling grid, {grid_layout}, ({coords}) normalised to [-1, 1].", False)],
            outputs=[(self.outputs[0], f"Gradient of {x_name}, shaped like it. Optional.", True),
                     (self.outputs[1], f"Gradient of {grid_name}, shaped like it (zero in nearest mode). Optional.",
                      True)],
            attributes=[
                ("interpolation_mode", "bilinear",
                 f"One of {modes}: 'nearest' rounds half to even"
                 + (", 'bicubic' uses A = -0.75." if "bicubic" in self.modes else ".")),
                ("padding_mode", "zeros",
                 "'zeros' (default), 'border' or 'reflection': how points outside the image read."),
                ("align_corners", 0,
                 "1: -1 and 1 are the centres of the corner pixels; 0 (default): their outer edges."),
            ],
            infer=infer, since_version=self.since_version)

    # ----------------------------------------------------------------------- function body

    def body(self, key: BodyKey) -> onnx.FunctionProto:
        """The function body for a node of this mode, padding and align_corners (_grid_body.grid_sampler_body)."""
        return grid_sampler_body(key, list(self.inputs), list(self.outputs), self.spatial,
                                 key.attribute("interpolation_mode"), key.attribute("padding_mode"),
                                 bool(key.attribute("align_corners")))


def _axis_taps(coord: np.ndarray, size: int, interpolation_mode: str, padding_mode: str, align_corners: bool):
    """One axis of every point: ([(index, weight, d weight / d pixel)] per tap, d pixel / d grid).

    Bilinear and nearest pad the coordinate, bicubic pads each tap (as aten). Indices are floats
    (pixel units); taps outside [0, size - 1] are dropped by the caller.
    """
    if interpolation_mode == "bicubic":
        pixel, mult = _coords.unnormalize(coord, size, align_corners)
        finite = np.isfinite(pixel)  # a non-finite point reads nothing: zero weights on this axis zero its products
        safe = np.where(finite, pixel, 0)
        base = np.floor(safe)
        coeffs, grads = _coords.cubic_coefficients(safe - base)
        taps = [(_coords.apply_padding(base + (k - 1), size, padding_mode, align_corners)[0],
                 np.where(finite, coeffs[k], 0), np.where(finite, -grads[k], 0)) for k in range(4)]
        return taps, mult
    pixel, mult = _coords.source_index(coord, size, padding_mode, align_corners)
    if interpolation_mode == "nearest":
        return [(np.rint(pixel), np.ones_like(pixel), np.zeros_like(pixel))], mult
    low = np.floor(pixel)
    one = pixel.dtype.type(1)
    return [(low, low + one - pixel, -np.ones_like(pixel)), (low + one, pixel - low, np.ones_like(pixel))], mult
