"""The case table: every op case with its inputs, attributes and oracle, in one place.

Each case runs on every path (NumPy reference, onnxscript function in onnxruntime,
native kernel) and every listed dtype, against its oracle:
- aten's backward ops through torch.ops.aten (torch is a test-only dependency);
- for ResizeBilinearV2Grad's TensorFlow legacy mode, which torch lacks: torch
  autograd of TensorFlow's ResizeBilinear forward written with gathers.
Half types are compared with the float32 oracle on the half-rounded inputs (what
"accumulate in float32, round once" gives), to within one rounding of the half type.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np

INTERPOLATION = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDING = {"zeros": 0, "border": 1, "reflection": 2}

# largest |ours - oracle| / max |oracle| allowed per dtype
TOLERANCE = {"float32": 1e-5, "float64": 1e-10, "float16": 1e-3, "bfloat16": 8e-3}
ALL_DTYPES = ("float32", "float64", "float16", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Case:
    op_type: str
    name: str
    inputs: Dict[str, Tuple[int, ...]]  # input name -> shape
    attrs: dict
    outputs: Tuple[str, ...]  # output names; "" leaves an optional output out
    oracle: Callable  # (float inputs as torch tensors) -> tuple of torch tensors, one per named output
    dtypes: Tuple[str, ...] = ("float32", "float64")
    grid: Optional[Callable] = None  # rng -> grid values (GridSampler2DGrad), default uniform [-1.2, 1.2]

    @property
    def id(self) -> str:
        return f"{self.op_type}-{self.name}"


def _torch():
    import torch
    return torch


# --------------------------------------------------------------------------- oracles

def grid_sampler_oracle(interpolation, padding, align_corners, mask):
    def oracle(grad_output, input, grid):
        torch = _torch()
        gi, gg = torch.ops.aten.grid_sampler_2d_backward(
            grad_output, input, grid, INTERPOLATION[interpolation], PADDING[padding], bool(align_corners), list(mask))
        return tuple(t for t, keep in zip((gi, gg), mask) if keep)
    return oracle


def _scale_arg(value):
    # the ONNX attribute is float32: give torch the same value
    return float(np.float32(value)) if value else None


def nearest_exact1d_oracle(input_size, scales):
    def oracle(grad_output):
        torch = _torch()
        size = [grad_output.shape[i] if v == -1 else v for i, v in enumerate(input_size)]
        return (torch.ops.aten._upsample_nearest_exact1d_backward(
            grad_output, [grad_output.shape[2]], size, _scale_arg(scales)),)
    return oracle


def nearest_exact2d_oracle(input_size, scales_h, scales_w):
    def oracle(grad_output):
        torch = _torch()
        size = [grad_output.shape[i] if v == -1 else v for i, v in enumerate(input_size)]
        return (torch.ops.aten._upsample_nearest_exact2d_backward(
            grad_output, list(grad_output.shape[2:]), size, _scale_arg(scales_h), _scale_arg(scales_w)),)
    return oracle


def bilinear_oracle(align_corners, half_pixel_centers, scales):
    def oracle(grads, original_image):
        torch = _torch()
        if align_corners or half_pixel_centers:
            return (torch.ops.aten.upsample_bilinear2d_backward(
                grads, list(grads.shape[2:]), list(original_image.shape), bool(align_corners),
                _scale_arg(scales[0]), _scale_arg(scales[1])),)
        return (tf_legacy_resize_grad(grads, original_image.shape, scales),)
    return oracle


def tf_legacy_resize_grad(grads, image_shape, scales):
    """Gradient of TensorFlow's ResizeBilinear(align_corners=False, half_pixel_centers=False) by autograd.

    Forward per axis (tensorflow/core/kernels/image/resize_bilinear_op.cc, LegacyScaler):
    in = out_index * scale, top = floor(in), bottom = min(ceil(in), size - 1), lerp = in - floor(in).
    """
    torch = _torch()
    image = torch.zeros(image_shape, dtype=grads.dtype, requires_grad=True)

    def axis(in_len, out_len, scale):
        ratio = np.float32(1.0 / float(np.float32(scale))) if scale else np.float32(in_len) / np.float32(out_len)
        src = torch.arange(out_len, dtype=torch.float32) * float(ratio)
        top = torch.floor(src).long().clamp(max=in_len - 1)
        bottom = torch.ceil(src).long().clamp(max=in_len - 1)
        return top, bottom, (src - torch.floor(src)).to(grads.dtype)

    top, bottom, ly = axis(image_shape[2], grads.shape[2], scales[0])
    left, right, lx = axis(image_shape[3], grads.shape[3], scales[1])
    rows = image[:, :, top, :] * (1 - ly)[:, None] + image[:, :, bottom, :] * ly[:, None]
    out = rows[:, :, :, left] * (1 - lx) + rows[:, :, :, right] * lx
    (grad,) = torch.autograd.grad(out, image, grads)
    return grad


# --------------------------------------------------------------------------- grids

def exact_grid(values):
    """Grid points drawn from values that are exact in binary, so every path computes the same pixel."""
    def make(rng, shape):
        return rng.choice(np.asarray(values, np.float64), size=shape)
    return make


def uniform_grid(bound):
    def make(rng, shape):
        return rng.uniform(-bound, bound, size=shape)
    return make


ON_PIXELS = exact_grid([-1.5, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5])


# --------------------------------------------------------------------------- the table

def _grid_cases():
    layouts = {
        # name: (N, C, H_in, W_in, H_out, W_out, grid maker, dtypes)
        "basic": (2, 3, 5, 7, 4, 6, uniform_grid(1.2), ALL_DTYPES),
        "on_pixels_and_borders": (2, 2, 4, 4, 5, 3, ON_PIXELS, ("float32", "float64")),
        "many_periods": (1, 2, 6, 5, 7, 4, uniform_grid(7.0), ("float32", "float64")),
        "one_pixel_input": (2, 2, 1, 1, 3, 4, uniform_grid(1.5), ("float32", "float64")),
        "one_pixel_output": (1, 3, 6, 4, 1, 1, uniform_grid(1.1), ("float32", "float64")),
        "single_row_input": (1, 1, 1, 9, 2, 5, uniform_grid(1.2), ("float32", "float64")),
    }
    cases = []
    for (interp, pad, corners), (name, (n, c, hi, wi, ho, wo, grid, dtypes)) in itertools.product(
            itertools.product(INTERPOLATION, PADDING, (0, 1)), layouts.items()):
        attrs = dict(interpolation_mode=interp, padding_mode=pad, align_corners=corners)
        cases.append(Case(
            "GridSampler2DGrad", f"{interp}-{pad}-ac{corners}-{name}",
            {"grad_output": (n, c, ho, wo), "input": (n, c, hi, wi), "grid": (n, ho, wo, 2)}, attrs,
            ("grad_input", "grad_grid"), grid_sampler_oracle(interp, pad, corners, (True, True)), dtypes, grid))
    # the optional outputs: each alone
    for mask, outputs in (((True, False), ("grad_input", "")), ((False, True), ("", "grad_grid"))):
        for interp in INTERPOLATION:
            attrs = dict(interpolation_mode=interp, padding_mode="border", align_corners=0)
            cases.append(Case(
                "GridSampler2DGrad", f"{interp}-only-{'input' if mask[0] else 'grid'}",
                {"grad_output": (2, 3, 4, 5), "input": (2, 3, 6, 6), "grid": (2, 4, 5, 2)}, attrs, outputs,
                grid_sampler_oracle(interp, "border", 0, mask), ("float32",), uniform_grid(1.2)))
    return cases


def _nearest_cases():
    lengths = {  # name: (L_in, L_out, scales)
        "up2": (8, 16, 0.0), "up_fractional": (5, 13, 0.0), "down": (13, 5, 0.0), "same": (7, 7, 0.0),
        "one_to_many": (1, 9, 0.0), "many_to_one": (9, 1, 0.0), "scale_given": (10, 25, 2.5),
        "scale_not_ratio": (6, 13, 2.2), "down50x": (500, 10, 0.0), "down64x": (640, 10, 0.0),
        "down_scale_given": (30, 7, 0.23),
    }
    cases = []
    for name, (li, lo, scale) in lengths.items():
        size = [2, 3, li]
        cases.append(Case("UpsampleNearestExact1dGrad", name, {"grad_output": (2, 3, lo)},
                          dict(input_size=size, scales=scale), ("grad_input",), nearest_exact1d_oracle(size, scale),
                          ALL_DTYPES if name == "up_fractional" else ("float32", "float64")))
    cases.append(Case("UpsampleNearestExact1dGrad", "dynamic_batch_output_size", {"grad_output": (3, 2, 11)},
                      dict(input_size=[-1, -1, 4], output_size=[11]), ("grad_input",),
                      nearest_exact1d_oracle([-1, -1, 4], 0.0)))
    pairs = {  # name: ((H_in, H_out, scales_h), (W_in, W_out, scales_w))
        "up2": ((4, 8, 0.0), (5, 10, 0.0)), "mixed": ((5, 13, 0.0), (13, 5, 0.0)), "same": ((6, 6, 0.0), (7, 7, 0.0)),
        "one_pixel_input": ((1, 4, 0.0), (1, 3, 0.0)), "one_pixel_output": ((7, 1, 0.0), (5, 1, 0.0)),
        "scales_given": ((10, 25, 2.5), (6, 13, 2.2)), "down50x_and_beyond": ((150, 3, 0.0), (640, 10, 0.0)),
    }
    for name, ((hi, ho, sh), (wi, wo, sw)) in pairs.items():
        size = [2, 3, hi, wi]
        cases.append(Case("UpsampleNearestExact2dGrad", name, {"grad_output": (2, 3, ho, wo)},
                          dict(input_size=size, scales_h=sh, scales_w=sw), ("grad_input",),
                          nearest_exact2d_oracle(size, sh, sw), ALL_DTYPES if name == "mixed" else ("float32", "float64")))
    cases.append(Case("UpsampleNearestExact2dGrad", "dynamic_batch_output_size", {"grad_output": (1, 4, 9, 6)},
                      dict(input_size=[-1, 4, 3, 4], output_size=[9, 6]), ("grad_input",),
                      nearest_exact2d_oracle([-1, 4, 3, 4], 0.0, 0.0)))
    return cases


def _bilinear_cases():
    modes = {"align_corners": (1, 0), "half_pixel": (0, 1), "tf_legacy": (0, 0)}
    sizes = {  # name: (H_in, W_in, H_out, W_out, scales)
        "up2": (4, 6, 8, 12, (0.0, 0.0)), "mixed": (5, 7, 11, 3, (0.0, 0.0)), "same": (6, 6, 6, 6, (0.0, 0.0)),
        "one_pixel_input": (1, 1, 5, 6, (0.0, 0.0)), "one_pixel_output": (8, 6, 1, 1, (0.0, 0.0)),
        "down50x": (100, 150, 2, 3, (0.0, 0.0)), "scales_given": (5, 7, 11, 5, (2.2, 0.7)),
        "same_size_scale_given": (6, 6, 6, 6, (1.5, 0.5)),
    }
    cases = []
    for (mode, (corners, half)), (name, (hi, wi, ho, wo, scales)) in itertools.product(modes.items(), sizes.items()):
        attrs = dict(align_corners=corners, half_pixel_centers=half, scales=list(scales))
        cases.append(Case("ResizeBilinearV2Grad", f"{mode}-{name}",
                          {"grads": (2, 3, ho, wo), "original_image": (2, 3, hi, wi)}, attrs, ("y",),
                          bilinear_oracle(corners, half, scales), ALL_DTYPES if name == "mixed" else ("float32", "float64")))
    return cases


CASES = _grid_cases() + _nearest_cases() + _bilinear_cases()


def make_inputs(case: Case, seed: int) -> Dict[str, np.ndarray]:
    """float64 inputs for a case (the caller casts them to the dtype under test)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in case.inputs.items():
        if name == "grid":
            arrays[name] = (case.grid or uniform_grid(1.2))(rng, shape)
        else:
            arrays[name] = rng.standard_normal(shape)
    return arrays
