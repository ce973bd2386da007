"""The case table: every op case with its inputs, attributes and oracle, in one place.

Each case runs on every path (NumPy reference, onnxscript function in onnxruntime,
native kernel) and every listed dtype, against its oracle:
- aten's backward ops through torch.ops.aten (torch is a test-only dependency): the grid
  samplers, and every Upsample*Grad / Resize*V2Grad with torch semantics;
- for the TensorFlow modes torch lacks (ResizeBilinearV2Grad's legacy mode,
  ResizeNearestNeighborV2Grad): torch autograd of TensorFlow's forward written with gathers;
- for ResizeGrad: torch autograd of F.interpolate where onnxruntime's Resize computes the
  same forward (tests/ops/test_resize_grad.py checks every configuration against onnxruntime).
The tables are generated from the lists of modes and sizes, so a missing combination is a
visible row. Half types are compared with the float32 oracle on the half-rounded inputs (what
"accumulate in float32, round once" gives), to within one rounding of the half type.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

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
    inputs: dict[str, tuple[int, ...]]  # input name -> shape
    attrs: dict
    outputs: tuple[str, ...]  # output names; "" leaves an optional output out
    oracle: Callable  # (float inputs as torch tensors) -> tuple of torch tensors, one per named output
    dtypes: tuple[str, ...] = ("float32", "float64")
    grid: Callable | None = None  # rng -> grid values (grid samplers), default uniform [-1.2, 1.2]
    ints: dict | None = None  # inputs that are int64 tensors with these values (sizes)
    empty: tuple[str, ...] = ()  # float inputs given as empty tensors (absent roi / scales)

    @property
    def id(self) -> str:
        return f"{self.op_type}-{self.name}"


def _torch():
    import torch
    return torch


# --------------------------------------------------------------------------- oracles

def grid_sampler_oracle(interpolation, padding, align_corners, mask, spatial=2):
    """aten::grid_sampler_2d_backward (spatial 2) or grid_sampler_3d_backward (3)."""
    def oracle(grad_output, input, grid):
        backward = getattr(_torch().ops.aten, f"grid_sampler_{spatial}d_backward")
        gi, gg = backward(grad_output, input, grid, INTERPOLATION[interpolation], PADDING[padding], bool(align_corners),
                          list(mask))
        return tuple(t for t, keep in zip((gi, gg), mask, strict=True) if keep)
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
        # nearest's grad_input adds 4 channels per walk over the points, in blocks of 5 here (160 / 32 tasks)
        "many_channels": (1, 160, 5, 6, 4, 5, uniform_grid(1.2), ALL_DTYPES),
        # more points than half the pixels with their margins: the functions' box-tap sort (SortBoxTaps) for
        # bilinear and bicubic with zeros padding; the layouts above sort tap keys
        "dense": (2, 3, 3, 4, 10, 9, uniform_grid(1.3), ALL_DTYPES),
        "dense_on_pixels": (1, 2, 3, 3, 8, 8, ON_PIXELS, ("float32", "float64")),
        # channels, pixels and points in sixteens: AVX-512 float32 nearest sums 16 channels channels-last
        "sixteens": (2, 32, 4, 8, 8, 4, uniform_grid(1.2), ("float32", "float64")),
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
                          nearest_exact2d_oracle(size, sh, sw),
                          ALL_DTYPES if name == "mixed" else ("float32", "float64")))
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
                          bilinear_oracle(corners, half, scales),
                          ALL_DTYPES if name == "mixed" else ("float32", "float64")))
    return cases


# --------------------------------------------------------------------------- the torch-style family

def _scale_list(scales):
    return [_scale_arg(s) for s in scales]


def upsample_oracle(aten_name, input_size, align_corners, scales):
    """aten.<aten_name>(grad_output, output_size, input_size[, align_corners], *scales)."""
    def oracle(grad_output):
        torch = _torch()
        size = [grad_output.shape[i] if v == -1 else v for i, v in enumerate(input_size)]
        args = [grad_output, list(grad_output.shape[2:]), size]
        if align_corners is not None:
            args.append(bool(align_corners))
        return (getattr(torch.ops.aten, aten_name)(*args, *_scale_list(scales)),)
    return oracle


# op type: (aten op of the main form, aten op of the 1-D form or None, spatial axes, align_corners?, scale attrs or
# "list:<name>" for a list attribute, output_size required)
UPSAMPLE_FAMILY = {
    "UpsampleNearest2dGrad": ("upsample_nearest2d_backward", "upsample_nearest1d_backward", 2, False,
                              ("scales_h", "scales_w"), True),
    "UpsampleNearest3dGrad": ("upsample_nearest3d_backward", None, 3, False, "list:scales", False),
    "UpsampleNearestExact3dGrad": ("_upsample_nearest_exact3d_backward", None, 3, False, "list:scales", False),
    "UpsampleBilinear2dGrad": ("upsample_bilinear2d_backward", "upsample_linear1d_backward", 2, True,
                               ("scales_h", "scales_w"), True),
    "UpsampleTrilinear3dBackward": ("upsample_trilinear3d_backward", None, 3, True, ("scale_d", "scale_h", "scale_w"),
                                    True),
    "UpsampleBicubic2dGrad": ("upsample_bicubic2d_backward", None, 2, True, ("scales_h", "scales_w"), False),
    "UpsampleBilinear2dAABackward": ("_upsample_bilinear2d_aa_backward", None, 2, True, ("scales_h", "scales_w"),
                                     False),
    "UpsampleBicubic2dAAGrad": ("_upsample_bicubic2d_aa_backward", None, 2, True, ("scales_h", "scales_w"), True),
}

# per-axis (in, out, scale): the size situations every op meets, on each of its axes
AXIS_SIZES = {
    "up2": ((4, 8, 0.0), (5, 10, 0.0), (3, 6, 0.0)),
    "up_fractional": ((5, 13, 0.0), (3, 7, 0.0), (4, 9, 0.0)),
    "down": ((13, 5, 0.0), (9, 4, 0.0), (7, 3, 0.0)),
    "mixed": ((5, 13, 0.0), (13, 5, 0.0), (4, 4, 0.0)),
    "same": ((6, 6, 0.0), (7, 7, 0.0), (3, 3, 0.0)),
    "one_pixel_input": ((1, 4, 0.0), (1, 3, 0.0), (1, 2, 0.0)),
    "one_pixel_output": ((7, 1, 0.0), (5, 1, 0.0), (4, 1, 0.0)),
    "scales_given": ((10, 25, 2.5), (6, 13, 2.2), (4, 7, 1.75)),
    "scales_not_ratio": ((6, 13, 1.7), (7, 11, 1.5), (5, 9, 1.8)),
    "down_large": ((150, 3, 0.0), (64, 5, 0.0), (40, 4, 0.0)),
    "same_size_scale_given": ((6, 6, 1.5), (5, 5, 0.5), (4, 4, 2.0)),
    # an axis keeps its size under its scale while another is resized (bicubic then resizes it: aten copies only
    # a tensor whose every axis keeps its size)
    "one_kept_scale_given": ((5, 5, 1.1), (6, 12, 2.0), (4, 9, 2.25)),
}


def upsample_attrs(op_type, input_size, output_size, scales, align_corners):
    _, _, spatial, has_corners, scale_attrs, _ = UPSAMPLE_FAMILY[op_type]
    attrs = dict(input_size=list(input_size))
    if has_corners:
        attrs["align_corners"] = align_corners
    if isinstance(scale_attrs, str):  # a list attribute: scales or output_size, as GE wants
        if any(scales):
            attrs[scale_attrs.split(":")[1]] = list(scales)
        else:
            attrs["output_size"] = list(output_size)
        return attrs
    attrs["output_size"] = list(output_size)
    attrs.update(zip(scale_attrs[len(scale_attrs) - len(scales):], scales, strict=True))
    return attrs


def _upsample_cases():
    cases = []
    for op_type, (aten2, aten1, spatial, has_corners, _, _) in UPSAMPLE_FAMILY.items():
        forms = [(spatial, aten2)] + ([(1, aten1)] if aten1 else [])
        for (rank, aten_name), (name, axes), corners in itertools.product(
                forms, AXIS_SIZES.items(), (0, 1) if has_corners else (None,)):
            axes = axes[3 - rank:] if rank == 3 else axes[:rank]
            if rank == 3 and name == "down_large":
                axes = ((40, 4, 0.0), (20, 3, 0.0), (12, 2, 0.0))  # keeps the 5-D case small
            ins, outs, scales = zip(*axes, strict=True)
            if corners and any(scales):
                continue  # align_corners ignores scales (checked once below)
            input_size = (2, 3, *ins)
            attrs = upsample_attrs(op_type, input_size, outs, scales, corners or 0)
            dtypes = ALL_DTYPES if name == "mixed" else ("float32", "float64")
            label = f"{rank}d-{name}" + (f"-ac{corners}" if has_corners else "")
            cases.append(Case(op_type, label, {"grad_output": (2, 3, *outs)}, attrs, ("grad_input" if op_type not in (
                "UpsampleNearest3dGrad", "UpsampleNearestExact3dGrad") else "y",),
                upsample_oracle(aten_name, input_size, corners, scales), dtypes))
        if has_corners:  # align_corners ignores a given scale, as aten
            axes = AXIS_SIZES["scales_given"][:spatial]
            ins, outs, scales = zip(*axes, strict=True)
            input_size = (1, 2, *ins)
            cases.append(Case(op_type, f"{spatial}d-align_corners_ignores_scales", {"grad_output": (1, 2, *outs)},
                              upsample_attrs(op_type, input_size, outs, scales, 1), ("grad_input",),
                              upsample_oracle(aten2, input_size, 1, [0.0] * spatial)))
    # a dynamic batch: N and C taken from grad_output (-1)
    cases.append(Case("UpsampleNearest2dGrad", "dynamic_batch", {"grad_output": (3, 2, 9, 6)},
                      dict(input_size=[-1, -1, 4, 5], output_size=[9, 6]), ("grad_input",),
                      upsample_oracle("upsample_nearest2d_backward", [-1, -1, 4, 5], None, [0.0, 0.0])))
    return cases


# --------------------------------------------------------------------------- the Resize*V2 family

def _v2_cases():
    cases = []
    for name, axes in AXIS_SIZES.items():
        (hi, ho, sh), (wi, wo, sw) = axes[:2]
        for corners in (0, 1):
            if corners and (sh or sw):
                continue
            dtypes = ALL_DTYPES if name == "mixed" else ("float32", "float64")
            cases.append(Case("ResizeBicubicV2Grad", f"{name}-ac{corners}",
                              {"grads": (2, 3, ho, wo), "original_image": (2, 3, hi, wi)},
                              dict(align_corners=corners, scales=[sh, sw]), ("y",),
                              _v2_oracle("upsample_bicubic2d_backward", corners, [sh, sw]), dtypes))
            cases.append(Case("ResizeLinearGrad", f"{name}-ac{corners}",
                              {"grads": (2, 3, wo), "original_image": (2, 3, wi)},
                              dict(align_corners=corners, scale=sw),
                              ("y",), _v2_oracle("upsample_linear1d_backward", corners, [sw]), dtypes))
            for half in (0, 1):
                if corners and half:
                    continue
                cases.append(Case("ResizeNearestNeighborV2Grad", f"{name}-ac{corners}-hp{half}",
                                  {"grads": (2, 3, ho, wo), "size": (2,)},
                                  dict(align_corners=corners, half_pixel_centers=half, scales=[sh, sw]), ("y",),
                                  tf_nearest_oracle(corners, half, (hi, wi), (sh, sw)), dtypes,
                                  ints={"size": [hi, wi]}))
    return cases


def _v2_oracle(aten_name, align_corners, scales):
    def oracle(grads, original_image):
        torch = _torch()
        return (getattr(torch.ops.aten, aten_name)(grads, list(grads.shape[2:]), list(original_image.shape),
                                                   bool(align_corners), *_scale_list(scales)),)
    return oracle


def tf_nearest_oracle(align_corners, half_pixel_centers, spatial_in, scales):
    """Gradient of TensorFlow's ResizeNearestNeighbor by autograd of its forward written with gathers
    (tensorflow/core/kernels/image/resize_nearest_neighbor_op.cc: in float32, scale (in-1)/(out-1) with
    align_corners else in/out (CANN: 1/scale when given); roundf(i s) / floorf((i + 0.5) s) / floorf(i s),
    clamped to [0, in - 1])."""
    def axis(in_len, out_len, scale):
        torch = _torch()
        if align_corners:
            s = np.float32(in_len - 1) / np.float32(out_len - 1) if out_len > 1 else np.float32(0)
        else:
            s = np.float32(1) / np.float32(scale) if scale else np.float32(in_len) / np.float32(out_len)
        i = torch.arange(out_len, dtype=torch.float32)
        if align_corners:
            v = i * float(s)
            index = torch.floor(v) + ((v - torch.floor(v)) >= 0.5).float()  # roundf: half away from zero
        elif half_pixel_centers:
            index = torch.floor((i + 0.5) * float(s))
        else:
            index = torch.floor(i * float(s))
        return index.long().clamp(0, in_len - 1)

    def oracle(grads):
        torch = _torch()
        image = torch.zeros((*grads.shape[:2], *spatial_in), dtype=grads.dtype, requires_grad=True)
        rows = axis(spatial_in[0], grads.shape[2], scales[0])
        cols = axis(spatial_in[1], grads.shape[3], scales[1])
        out = image[:, :, rows, :][:, :, :, cols]
        (grad,) = torch.autograd.grad(out, image, grads)
        return (grad,)
    return oracle


# --------------------------------------------------------------------------- GridSampler3DGrad

def _grid3d_cases():
    layouts = {  # name: (N, C, D_in, H_in, W_in, D_out, H_out, W_out, grid maker, dtypes)
        "basic": (2, 3, 4, 5, 6, 3, 4, 5, uniform_grid(1.2), ALL_DTYPES),
        "on_voxels_and_borders": (1, 2, 4, 4, 4, 3, 2, 3, ON_PIXELS, ("float32", "float64")),
        "many_periods": (1, 2, 3, 4, 5, 2, 3, 4, uniform_grid(7.0), ("float32", "float64")),
        "one_voxel_input": (2, 2, 1, 1, 1, 2, 3, 2, uniform_grid(1.5), ("float32", "float64")),
        # the functions' box-tap sort (more points than half the voxels with their margins)
        "dense": (2, 2, 2, 2, 2, 5, 5, 5, uniform_grid(1.2), ALL_DTYPES),
        "dense_on_voxels": (1, 2, 2, 2, 2, 5, 5, 5, ON_PIXELS, ("float32", "float64")),
        "sixteens": (2, 16, 2, 2, 4, 4, 2, 2, uniform_grid(1.2), ("float32", "float64")),
    }
    cases = []
    for (interp, pad, corners), (name, (n, c, di, hi, wi, do, ho, wo, grid, dtypes)) in itertools.product(
            itertools.product(("bilinear", "nearest"), PADDING, (0, 1)), layouts.items()):
        cases.append(Case(
            "GridSampler3DGrad", f"{interp}-{pad}-ac{corners}-{name}",
            {"grad": (n, c, do, ho, wo), "x": (n, c, di, hi, wi), "grid": (n, do, ho, wo, 3)},
            dict(interpolation_mode=interp, padding_mode=pad, align_corners=corners), ("dx", "dgrid"),
            grid_sampler_oracle(interp, pad, corners, (True, True), spatial=3), dtypes, grid))
    for mask, outputs in (((True, False), ("dx", "")), ((False, True), ("", "dgrid"))):
        cases.append(Case("GridSampler3DGrad", f"bilinear-only-{'dx' if mask[0] else 'dgrid'}",
                          {"grad": (1, 2, 3, 2, 4), "x": (1, 2, 4, 3, 5), "grid": (1, 3, 2, 4, 3)},
                          dict(interpolation_mode="bilinear", padding_mode="border"), outputs,
                          grid_sampler_oracle("bilinear", "border", 0, mask, spatial=3), ("float32",),
                          uniform_grid(1.2)))
    return cases


# ---------------------------------------------------------------------- ResizeGrad where torch has the same forward

def interpolate_oracle(size, **kwargs):
    """torch autograd of F.interpolate: the gradient of the input for grad_output."""
    def oracle(dy, x):
        torch = _torch()
        x = x.detach().clone().requires_grad_(True)
        y = torch.nn.functional.interpolate(x, size=size, **kwargs)
        (grad,) = torch.autograd.grad(y, x, dy)
        return (grad,)
    return oracle


# name: (ResizeGrad attributes, F.interpolate keyword arguments, spatial in, spatial out)
RESIZE_LIKE_TORCH = {
    "nearest_asymmetric_floor": (dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                      nearest_mode="floor"),
                                 dict(mode="nearest"), ((4, 5), (8, 10))),
    "nearest_1d": (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                   dict(mode="nearest"), ((6,), (12,))),
    "nearest_3d": (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                   dict(mode="nearest"), ((2, 3, 4), (4, 6, 8))),
    "nearest_down": (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                     dict(mode="nearest"), ((8, 12), (4, 6))),
    "nearest_exact": (dict(mode="nearest", coordinate_transformation_mode="half_pixel",
                           nearest_mode="round_prefer_ceil"),
                      dict(mode="nearest-exact"), ((5, 6), (10, 12))),
    "linear_1d": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(mode="linear"), ((6,), (12,))),
    "linear_1d_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                                dict(mode="linear", align_corners=True), ((6,), (11,))),
    "bilinear": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(mode="bilinear"),
                 ((4, 5), (8, 10))),
    "bilinear_down": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(mode="bilinear"),
                      ((8, 12), (4, 6))),
    "bilinear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                               dict(mode="bilinear", align_corners=True), ((4, 5), (9, 7))),
    "trilinear": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(mode="trilinear"),
                  ((2, 3, 4), (4, 6, 8))),
    "trilinear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                                dict(mode="trilinear", align_corners=True), ((2, 3, 4), (5, 4, 7))),
    "bicubic": (dict(mode="cubic", coordinate_transformation_mode="half_pixel"), dict(mode="bicubic"),
                ((4, 5), (8, 10))),
    "bicubic_down": (dict(mode="cubic", coordinate_transformation_mode="half_pixel"), dict(mode="bicubic"),
                     ((8, 12), (4, 6))),
    "bicubic_align_corners": (dict(mode="cubic", coordinate_transformation_mode="align_corners"),
                              dict(mode="bicubic", align_corners=True), ((4, 5), (9, 7))),
    # torch's antialias drops the taps outside the image and renormalises: Resize's exclude_outside=1; its
    # bicubic filter is Keys with a = -0.5
    "antialias_bilinear": (dict(mode="linear", antialias=1, exclude_outside=1), dict(mode="bilinear", antialias=True),
                           ((16, 12), (5, 4))),
    "antialias_bicubic": (dict(mode="cubic", antialias=1, exclude_outside=1, cubic_coeff_a=-0.5),
                          dict(mode="bicubic", antialias=True), ((16, 12), (5, 4))),
}


def _resize_grad_cases():
    cases = []
    for name, (attrs, kwargs, (spatial_in, spatial_out)) in RESIZE_LIKE_TORCH.items():
        x_shape, y_shape = (2, 3, *spatial_in), (2, 3, *spatial_out)
        cases.append(Case("ResizeGrad", name, {"dY": y_shape, "X": x_shape, "roi": (0,), "scales": (0,),
                                               "sizes": (2 + len(spatial_in),)},
                          attrs, ("dX",), interpolate_oracle(spatial_out, **kwargs),
                          ("float32", "float16", "bfloat16") if name == "bilinear" else ("float32",),
                          ints={"sizes": list(y_shape)}, empty=("roi", "scales")))
    return cases


def _half_step_cases():
    """2x downsampling on a wide last axis: the column gather's half-step run (separable.h StridedRun, phases 2),
    inputs 2m and 2m + 1 reading outputs from m on, in its one-tap (linear) and two-tap (cubic, antialiased: each
    phase its own offsets) forms, and irregular ends through the table; bfloat16 takes the blocked loop."""
    cases = []
    for w_in, scale in ((80, 0.0), (81, 0.5)):  # 81: the last input reads nothing, the run ends before it
        cases.append(Case("ResizeLinearGrad", f"half_step-{w_in}-40",
                          {"grads": (2, 3, 40), "original_image": (2, 3, w_in)},
                          dict(align_corners=0, scale=scale), ("y",),
                          _v2_oracle("upsample_linear1d_backward", 0, [scale]), ALL_DTYPES))
    for op_type, aten_name in (("UpsampleBilinear2dGrad", "upsample_bilinear2d_backward"),
                               ("UpsampleBicubic2dGrad", "upsample_bicubic2d_backward"),
                               ("UpsampleBilinear2dAABackward", "_upsample_bilinear2d_aa_backward")):
        input_size, output_size = (2, 3, 6, 80), (3, 40)
        cases.append(Case(op_type, "half_step-80-40", {"grad_output": (2, 3, *output_size)},
                          upsample_attrs(op_type, input_size, output_size, (0.0, 0.0), 0), ("grad_input",),
                          upsample_oracle(aten_name, input_size, 0, (0.0, 0.0)), ("float32", "float64", "bfloat16")))
    return cases


CASES = (_grid_cases() + _nearest_cases() + _bilinear_cases() + _upsample_cases() + _v2_cases() + _grid3d_cases()
         + _resize_grad_cases() + _half_step_cases())


def make_inputs(case: Case, seed: int) -> dict[str, np.ndarray]:
    """float64 inputs for a case (the caller casts the float ones to the dtype under test); int inputs as given."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in case.inputs.items():
        if case.ints and name in case.ints:
            arrays[name] = np.array(case.ints[name], np.int64)
        elif name in case.empty:
            arrays[name] = np.zeros(0, np.float32)
        elif name == "grid":
            arrays[name] = (case.grid or uniform_grid(1.2))(rng, shape)
        else:
            arrays[name] = rng.standard_normal(shape)
    return arrays


def oracle_outputs(case: Case, arrays: dict, dtype: str) -> list:
    """The oracle's outputs for a case's float64 inputs, as float64 arrays."""
    # half types: the float32 oracle on the half-rounded inputs; int and empty inputs are the op's, not the oracle's
    from conftest import NUMPY_DTYPES
    torch = _torch()
    as_torch = {name: torch.from_numpy(np.asarray(a.astype(NUMPY_DTYPES[dtype]),
                                                  np.float64 if dtype == "float64" else np.float32))
                for name, a in arrays.items() if not is_fixed(case, name)}
    return [t.detach().numpy().astype(np.float64) for t in case.oracle(*as_torch.values())]


def relative_error(ours, expected):
    """max |ours - expected| over max |expected|; inputs are O(1), so a gradient that is exactly zero
    (rounding residue only) is measured against 1."""
    ours = np.asarray(ours).astype(np.float64)
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    return float(np.abs(ours - expected).max(initial=0.0)) / scale


def is_fixed(case: Case, name: str) -> bool:
    """An input whose dtype is not the case's float dtype (int sizes, empty float32 roi / scales)."""
    return bool(case.ints and name in case.ints) or name in case.empty
