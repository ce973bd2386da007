"""What CANN's GridSampler2DGrad / GridSampler3DGrad kernels compute: NumPy, read from their public source.

A test oracle for the Ascend converter (test_ascend_emulation_grid.py), part of cann_emulation.py's picture (whose
ge_node dispatches the GridSampler ops here). Every formula cites its file and line at

    OPS_CV   hicann/ops-cv @ 6ae87653464d2afb064c829e529abba2e278b0c4

    GS    image/grid_sampler2_d_grad/op_kernel/grid_sampler2_d_grad.h         (A2 / A3, bilinear and nearest)
    GSB   image/grid_sampler2_d_grad/op_kernel/grid_sampler2_d_grad_bicubic.h (A2 / A3, bicubic)
    GS3   image/grid_sampler3_d_grad/op_kernel/grid_sampler3_d_grad.h         (A2 / A3; 950's SIMD key 7)
    SIMT3 image/grid_sampler3_d_grad/op_kernel/arch35/grid_sampler3_d_grad_simt_base.h, _simt.h (Ascend 950)

Which kernel runs (op_kernel/grid_sampler2_d_grad.cpp:67-178, grid_sampler3_d_grad.cpp:43-83):
- GridSampler2DGrad on A2 / A3 (__CCE_AICORE__ 220): keys 1 / 2 / 7 float32 bilinear / nearest / bicubic
  (GridSampler2DGrad<float>, GridSampler2DGradBicubic<float>); keys 3-6 and 8-9 float16 / bfloat16
  (GridSampler2DGradFP16<float, half>, GridSampler2DGradBicubicFP16<float, half>): the inputs cast to float32, the
  same float32 arithmetic, dx accumulated in a float32 workspace and cast to the tensor dtype at the end
  (grid_sampler2_d_grad_cast.h). So a half node computes the float32 result rounded once: what the converter's Casts
  around it give too.
- GridSampler3DGrad on A2 / A3: only key 1 exists, GridSampler3DGradNS<float> (grid_sampler3_d_grad.cpp:44-49); the
  tiling gives float16 / bfloat16 keys 2 / 3 (op_host/grid_sampler3_d_grad_tiling.cpp:440-452), for which this SoC has
  no kernel body: a half node computes nothing defined (aclnn casts to float32 first,
  aclnn_grid_sampler3d_backward.cpp:270-280).
- GridSampler3DGrad on Ascend 950: keys 1-6 the SIMT kernels, which index grad, x and dx channels FIRST
  (SIMT3 base:135-140 `batchNum * channel * gridD * gridH * gridW + channelIndex * ...`, simt.h:284), whatever format
  the tensors carry; key 7 (float32, channel >= 128, not deterministic: tiling.cpp:315-317, 432-439) the SIMD kernel
  GS3, channels last. SIMT coordinates in the tensor dtype T (SIMT3 base:51-66 returns static_cast<T>).

The A2 / A3 kernels read grad and x channels last (NHWC / NDHWC: aclnn transposes them,
aclnn_grid_sampler2d_backward.cpp:266-280, aclnn_grid_sampler3d_backward.cpp:260-285).
"""
from __future__ import annotations

import itertools

import numpy as np
from cann_emulation import NotEmulated, Undefined, rounded

F32 = np.float32
GS = "image/grid_sampler2_d_grad/op_kernel/grid_sampler2_d_grad.h"
GSB = "image/grid_sampler2_d_grad/op_kernel/grid_sampler2_d_grad_bicubic.h"
GS3 = "image/grid_sampler3_d_grad/op_kernel/grid_sampler3_d_grad.h"


# --------------------------------------------------------------------------- coordinates

def _grid_clip(ix: np.ndarray, mult: np.ndarray, size: int):
    """ClipCoordinatesSetGrad: ix kept where > 0 else 0, then where < size - 1 else size - 1; the multiplier 0 where
    clipped (GS:525-536; GS3:878-891; SIMT3 base:69-85)."""
    keep = ix > 0
    ix, mult = np.where(keep, ix, F32(0)), np.where(keep, mult, F32(0))
    keep = ix < F32(size - 1)
    return np.where(keep, ix, F32(size - 1)), np.where(keep, mult, F32(0))


def _grid_reflect(ix: np.ndarray, mult: np.ndarray, twice_low: int, twice_high: int):
    """ReflectCoordinatesSetGrad (GS:539-593; GS3:893-946): t = |x - min|, sign -1 below min; extra = t - floor(t *
    (1/span)) * span, flips = floor(t * (1/span)), in float32 (a multiplication by 1/span, not fmod); even flips:
    extra + min, else span - extra + min, the sign flipped. (SIMT3 base:88-115 uses fmodf and a division: equal for
    the coordinates of the tests.)"""
    if twice_low == twice_high:
        return np.zeros_like(ix), np.zeros_like(mult)
    low, span = F32(twice_low) / F32(2), F32(twice_high - twice_low) / F32(2)
    t = np.abs(ix + F32(-1) * low).astype(F32)
    sign = np.where(ix >= low, F32(1), F32(-1))
    quotient = np.floor(t * F32(F32(1) / span)).astype(F32)
    extra = (t - quotient * span).astype(F32)
    even = (quotient - np.floor(quotient * F32(0.5)) * F32(2)) == 0
    ix = np.where(even, extra + low, (extra * F32(-1) + span) + low).astype(F32)
    return ix, (mult * np.where(even, sign, -sign)).astype(F32)


def _unnormalize(coord: np.ndarray, size: int, corners: bool):
    """((c + 1) * 0.5) * (size - 1), multiplier (size - 1) / 2 with align_corners, else ((c + 1) * size - 1) * 0.5,
    multiplier size / 2 (GS:439-470; GSB:510-529; GS3:796-818 dividing by 2; SIMT3 base:51-66)."""
    c = coord.astype(F32)
    if corners:
        return (((c + F32(1)) * F32(0.5)) * F32(size - 1)).astype(F32), np.full_like(c, F32(size - 1) / F32(2))
    return (((c + F32(1)) * F32(size) + F32(-1)) * F32(0.5)).astype(F32), np.full_like(c, F32(size) / F32(2))


def _source(coord: np.ndarray, size: int, corners: bool, padding: str):
    """ComputeSourceIndexSetGrad (GS:439-522; GS3:796-850): unnormalize, border clips, reflection reflects over
    [0, 2(size-1)] or [-1, 2 size - 1] then clips; a non-finite or out-of-int32 coordinate becomes -100
    (GS:478-496; GS3:834-846)."""
    ix, mult = _unnormalize(coord, size, corners)
    if padding == "border":
        ix, mult = _grid_clip(ix, mult, size)
    elif padding == "reflection":
        ix, mult = _grid_reflect(ix, mult, *((0, 2 * (size - 1)) if corners else (-1, 2 * size - 1)))
        ix, mult = _grid_clip(ix, mult, size)
    bad = ~np.isfinite(ix) | (ix > F32(2 ** 31 - 2)) | (ix < F32(-2 ** 31))
    return np.where(bad, F32(-100), ix).astype(F32), mult


# --------------------------------------------------------------------------- bilinear / trilinear, nearest

def _scatter(dx, batch, corner, weight, g):
    """dx[n, corner] += weight * grad where every coordinate of the corner is inside (GS:704-735 WithinBounds2d;
    GS3:1074-1109, 949-980); returns the mask and the indices for the grid gradient."""
    spatial = dx.shape[1:-1]
    inside = np.ones(batch.shape, bool)
    for c, size in zip(corner, spatial, strict=True):
        inside &= (c >= 0) & (c < size)
    index = (batch[inside],) + tuple(c[inside].astype(np.int64) for c in corner)
    np.add.at(dx, index, (weight[inside][:, None] * g[inside]).astype(F32))
    return inside, index


def linear_or_nearest(grad, x, grid, mode: str, padding: str, corners: bool) -> list:
    """The A2 / A3 kernels (and the arithmetic of 950's): channels-last grad [N, (D,) H, W, C] and x, grid
    [N, (D,) H, W, 2 or 3] in (x, y (, z)) order.

    Bilinear / trilinear: corners floor(i) and floor(i) + 1 per axis (GS:901-916; GS3:1313-1337 CAST_FLOOR), weight
    the product of the distances to the opposite corner (GS:774-783, 918-925; GS3:777-793, 1267-1285); each corner
    inside adds weight * grad to dx and x * grad * (+-1) * (the product of the other axes' distances) to the grid
    gradient (GS:662-700, 946-960; GS3:1012-1072 with the tags -1 / +1, 1413-1440), which is then multiplied by the
    coordinate's multiplier (GS:955-960; GS3:1386-1388). Nearest: rint (CAST_RINT, ties to even: GS:974-1043;
    GS3:1503-1515), dx += grad where inside, dgrid 0 (GS:1040; GS3:1499)."""
    g, image = grad.astype(F32), x.astype(F32)
    spatial = image.shape[1:-1]
    axes = len(spatial)  # the grid's last axis: x (W), y (H), z (D): reversed against the spatial axes
    src = [_source(grid[..., k], spatial[axes - 1 - k], corners, padding) for k in range(axes)]
    coords = [src[axes - 1 - a][0] for a in range(axes)]  # per spatial axis (D, H, W)
    mults = [src[axes - 1 - a][1] for a in range(axes)]
    dx, dgrid = np.zeros(image.shape, np.float64), np.zeros(grid.shape, F32)
    batch = np.broadcast_to(np.arange(image.shape[0]).reshape((-1,) + (1,) * axes), coords[0].shape)
    if mode == "nearest":
        _scatter(dx, batch, [np.rint(c) for c in coords], np.ones_like(coords[0]), g)
        return [dx.astype(F32), dgrid]
    low = [np.floor(c).astype(F32) for c in coords]
    high = [lo + F32(1) for lo in low]
    grads = [np.zeros(coords[0].shape, np.float64) for _ in range(axes)]
    for bits in itertools.product((0, 1), repeat=axes):
        dist = [(c - lo) if b else (hi - c) for c, lo, hi, b in zip(coords, low, high, bits, strict=True)]
        dist = [d.astype(F32) for d in dist]
        weight = np.prod(dist, axis=0, dtype=F32)
        corner = [hi if b else lo for lo, hi, b in zip(low, high, bits, strict=True)]
        inside, index = _scatter(dx, batch, corner, weight, g)
        along = (image[index] * g[inside]).sum(axis=-1, dtype=np.float64)
        for a in range(axes):
            others = np.prod([dist[o][inside] for o in range(axes) if o != a], axis=0, dtype=F32)
            grads[a][inside] += (1 if bits[a] else -1) * along * others
    for a in range(axes):
        dgrid[..., axes - 1 - a] = (grads[a] * mults[a]).astype(F32)
    return [dx.astype(F32), dgrid]


# --------------------------------------------------------------------------- bicubic (2-D, A2 / A3)

A = F32(-0.75)


def _cubic(t):
    """GetCubicUpsampleCoefficients (GSB:469-508): CubicConvolution2(t + 1), CubicConvolution1(t),
    CubicConvolution1(1 - t), CubicConvolution2(2 - t) with A = -0.75: (1.25 x - 2.25) x x + 1 (GSB:382-402) and
    ((-0.75 x + 3.75) x - 6) x + 3 (GSB:404-428), in float32."""
    def one(u):
        return ((F32(1.25) * u + F32(-2.25)) * u * u + F32(1)).astype(F32)

    def two(u):
        return (((A * u + F32(3.75)) * u + F32(-6)) * u + F32(3)).astype(F32)
    minus = (t * F32(-1) + F32(1)).astype(F32)
    return [two((t + F32(1)).astype(F32)), one(t), one(minus), two((minus + F32(1)).astype(F32))]


def _cubic_grad(t):
    """d coefficient / dt (GSB:430-467 and their use, GSB:720-770): CubicConvolution2Grad(t + 1) =
    (-2.25 u + 7.5) u - 6, CubicConvolution1Grad(t) = (3.75 t - 4.5) t, -CubicConvolution1Grad(1 - t),
    -CubicConvolution2Grad(2 - t)."""
    def one(u):
        return ((F32(3.75) * u + F32(-4.5)) * u).astype(F32)

    def two(u):
        return ((F32(-2.25) * u + F32(7.5)) * u + F32(-6)).astype(F32)
    minus = (t * F32(-1) + F32(1)).astype(F32)
    return [two((t + F32(1)).astype(F32)), one(t), -one(minus), -two((minus + F32(1)).astype(F32))]


def _reflect_tap(coord: np.ndarray, size: int, corners: bool) -> np.ndarray:
    """ReflectCoordinatesCommon on a tap's integer coordinate (GSB:551-579): in = |coord - min|, extra = in -
    int(in / span) * span (a division), even flips: extra + min, else span - extra + min; then clipped to
    [0, size - 1] and truncated to int (GSB:861-877)."""
    twice_low, twice_high = (0, 2 * (size - 1)) if corners else (-1, 2 * size - 1)
    if twice_low == twice_high:
        return np.zeros(coord.shape, np.int64)
    low, span = F32(twice_low) / F32(2), F32(twice_high - twice_low) / F32(2)
    t = np.abs((coord - low).astype(F32))
    quotient = np.trunc((t / span).astype(F32))
    extra = (t - quotient * span).astype(F32)
    out = np.where(quotient % 2 == 0, extra + low, span - extra + low).astype(F32)
    return np.clip(out, 0, size - 1).astype(np.int64)


def bicubic_2d(grad, x, grid, padding: str, corners: bool) -> list:
    """GridSampler2DGradBicubic (A2 / A3, keys 7-9), channels last. Coordinates unnormalized only: no clipping or
    reflection of the sampling point, -100 for non-finite values with zeros / border (GSB:510-549); nw = floor(i),
    t = i - nw (GSB:672-680); the 4 x 4 taps nw - 1 .. nw + 2 (GSB:700-718), each: zeros skips a tap outside for dx
    and dgrid, border clips the tap's integer index, reflection reflects it (GSB:844-878); dx[tap] += grad * coeff_y
    * coeff_x (GSB:886-895); gix += x[tap] * grad * coeff_y * dcoeff_x, giy += x[tap] * grad * dcoeff_y * coeff_x
    (GSB:897-921); dgrid = (gix, giy) times the unnormalization multipliers (GSB:927-932)."""
    g, image = grad.astype(F32), x.astype(F32)
    n_, height, width, _ = image.shape
    ix, mx = _unnormalize(grid[..., 0], width, corners)
    iy, my = _unnormalize(grid[..., 1], height, corners)
    if padding != "reflection":
        ix, iy = (np.where(np.isfinite(c) & (c <= F32(2 ** 31 - 2)) & (c >= F32(-2 ** 31)), c, F32(-100))
                  for c in (ix, iy))
    nx, ny = np.floor(ix), np.floor(iy)
    tx, ty = (ix - nx).astype(F32), (iy - ny).astype(F32)
    cx, cy, dcx, dcy = _cubic(tx), _cubic(ty), _cubic_grad(tx), _cubic_grad(ty)
    dx = np.zeros(image.shape, np.float64)
    gix, giy = np.zeros(ix.shape, np.float64), np.zeros(ix.shape, np.float64)
    batch = np.broadcast_to(np.arange(n_)[:, None, None], ix.shape)
    for jy in range(4):
        for jx in range(4):
            tap_x, tap_y = (nx - 1 + jx).astype(np.int64), (ny - 1 + jy).astype(np.int64)
            if padding == "zeros":
                inside = (tap_x >= 0) & (tap_x < width) & (tap_y >= 0) & (tap_y < height)
            elif padding == "border":
                inside = np.ones(ix.shape, bool)
                tap_x, tap_y = np.clip(tap_x, 0, width - 1), np.clip(tap_y, 0, height - 1)
            else:
                inside = np.ones(ix.shape, bool)
                tap_x = _reflect_tap(tap_x.astype(F32), width, corners)
                tap_y = _reflect_tap(tap_y.astype(F32), height, corners)
            index = (batch[inside], tap_y[inside], tap_x[inside])
            weight = (cy[jy] * cx[jx]).astype(F32)
            np.add.at(dx, index, (weight[inside][:, None] * g[inside]).astype(F32))
            along = (image[index] * g[inside]).sum(axis=-1, dtype=np.float64)
            gix[inside] += along * (cy[jy] * dcx[jx])[inside]
            giy[inside] += along * (dcy[jy] * cx[jx])[inside]
    dgrid = np.stack([(gix * mx).astype(F32), (giy * my).astype(F32)], axis=-1)
    return [dx.astype(F32), dgrid]


def _channels_last(grad, x, grid, mode, padding, corners) -> list:
    if mode == "bicubic":
        return bicubic_2d(grad, x, grid, padding, corners)
    return linear_or_nearest(grad, x, grid, mode, padding, corners)


# --------------------------------------------------------------------------- Ascend 950

def _simd_on_950(op: str, channels: int, padding: str, dtype, deterministic: bool) -> bool:
    """Whether 950's tiling picks the channels-last SIMD kernel: float32, a non-deterministic context and
    GridSampler3DGrad >= 128 channels (grid_sampler3_d_grad_tiling.cpp:315-317, 432-439), GridSampler2DGrad >= 32
    channels with border or >= 128 with reflection (grid_sampler2_d_grad_tiling.cpp:449-452; keys 19-21 run the A2
    kernels, grid_sampler2_d_grad.cpp:262-281). Otherwise the SIMT kernels (keys 1-18 / 1-6)."""
    if dtype != np.float32 or deterministic:
        return False
    if op == "GridSampler3DGrad":
        return channels >= 128
    return channels >= 32 and padding == "border" or channels >= 128 and padding == "reflection"


def _ascend950(op, grad, x, grid, mode, padding, corners, dtype, deterministic) -> list:
    """950's kernels on tensors the converter laid out channels last. The SIMD kernel reads them so (the A2 / A3
    arithmetic above). The SIMT kernels index grad, x and dx channels first whatever the tensors' format
    (grid_sampler2_d_grad_simt.h:202-208, 252; grid_sampler3_d_grad_simt_base.h:135-140, _simt.h:284), with C and the
    spatial sizes the tiling read from the channels-last shape (grid_sampler2_d_grad_tiling.cpp:406-420 reads NHWC
    unless the format is another; grid_sampler3_d_grad_tiling.cpp:338-348 likewise): the same memory read as
    [N, C, spatial]. Their arithmetic is aten's (SIMT3 base:51-115, 2-D simt.h:60-80), in float32 here (the SIMT
    kernels compute coordinates in the tensor dtype: half types not emulated)."""
    channels = x.shape[-1]
    if _simd_on_950(op, channels, padding, dtype, deterministic):
        return _channels_last(grad, x, grid, mode, padding, corners)
    if dtype != np.float32:
        raise NotEmulated(f"{op}'s SIMT kernels on Ascend 950 in {np.dtype(dtype).name} (coordinates in that dtype)")
    first = [t.reshape((t.shape[0], channels) + t.shape[1:-1]) for t in (grad, x)]  # the memory, reinterpreted
    dx, dgrid = _channels_last(*(np.moveaxis(t, 1, -1) for t in first), grid, mode, padding, corners)
    return [np.moveaxis(dx, -1, 1).reshape(x.shape), dgrid]


# --------------------------------------------------------------------------- one GE node

def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def ge_node(op: str, inputs: list, attrs: dict, family: str, dtype, deterministic: bool = False) -> list:
    """GridSampler2DGrad / GridSampler3DGrad's outputs (dx, dgrid) on `family`, given the inputs as the GE node gets
    them (grad and x in the layout the converter wrote). `deterministic`: the run-time setting that picks 950's
    kernel."""
    mode = _text(attrs.get("interpolation_mode", "bilinear"))
    padding = _text(attrs.get("padding_mode", "zeros"))
    corners = bool(attrs.get("align_corners", 0))
    grad, x, grid = inputs
    if family == "Atlas training series":
        raise NotEmulated(f"{op} on the training series runs as an AI CPU task (source not public)")
    if op == "GridSampler2DGrad" and family in ("Atlas A2", "Atlas A3"):
        out = _channels_last(grad, x, grid, mode, padding, corners)
    elif op == "GridSampler3DGrad" and family in ("Atlas A2", "Atlas A3"):
        if dtype != np.float32:
            raise Undefined(f"{op} in {np.dtype(dtype).name} on {family}: the tiling picks key 2 / 3, the kernel "
                            "has only key 1 (float32): grid_sampler3_d_grad.cpp:44-49, tiling.cpp:440-452")
        out = linear_or_nearest(grad, x, grid, mode, padding, corners)
    elif family == "Ascend 950":
        out = _ascend950(op, grad, x, grid, mode, padding, corners, dtype, deterministic)
    else:
        raise NotEmulated(f"{op} on {family}")
    return [rounded(o, dtype).astype(d.dtype) for o, d in zip(out, inputs[1:], strict=True)]
