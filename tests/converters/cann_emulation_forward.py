"""What CANN's forward resampling kernels compute, in NumPy, written from their public source (hicann/ops-cv at
commit 6ae87653464d2afb064c829e529abba2e278b0c4): the test oracle for the GE forward ops converters/ascend_forward.py
emits. Each formula cites its file and line; float32 arithmetic as in the kernels.

GridSampler3D, the GE op the converter emits, runs as an AI CPU task whose kernel is not public; its AI Core sibling
(the GE op GridSample on a 5-D x, which aclnnGridSampler3D prefers where it can, image/grid_sample/op_api/
aclnn_grid_sampler3d.cpp:334-344) is, and is emulated here: trilinear, zeros and border padding.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32
GRID_3D = "image/grid_sample/op_kernel/grid_sampler_3d.h"
GRID_3D_COMMON = "image/grid_sample/op_kernel/grid_sampler_3d_common.h"


def grid_sampler_3d(x: np.ndarray, grid: np.ndarray, interpolation_mode: str, padding_mode: str,
                    align_corners: int, data_format: str = "NCDHW") -> np.ndarray:
    """x [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] (x, y, z) -> [N, C, Do, Ho, Wo]."""
    if interpolation_mode != "bilinear" or padding_mode not in ("zeros", "border") or data_format != "NCDHW":
        raise NotImplementedError(f"emulated: bilinear, zeros / border, NCDHW; got {interpolation_mode}, "
                                  f"{padding_mode}, {data_format}")
    x, grid = x.astype(F32), grid.astype(F32)
    n, c, d, h, w = x.shape
    sizes = (w, h, d)  # grid channel k indexes axis W, H, D (GRID_3D:832-834: GatherMask x, y, z)
    coords = []
    for k, size in enumerate(sizes):
        g = grid[..., k] + F32(1.0)  # GRID_3D:823
        if align_corners:  # GRID_3D:838-841
            i = g * F32(F32(0.5) * F32(size - 1))
        else:  # GRID_3D:843-847
            i = g * F32(F32(0.5) * F32(size)) + F32(-0.5)
        if padding_mode == "border":  # GRID_3D_COMMON:350-366: clamp to [0, size - 1]; NaN to 0 (l.357-366)
            i = np.where(np.isnan(i), F32(0), np.clip(i, F32(0), F32(size - 1)))
        coords.append(i.astype(F32))
    ix, iy, iz = coords
    x0, y0, z0 = (np.floor(v).astype(np.int64) for v in coords)  # GRID_3D:965-967 CAST_FLOOR; +1, l.972-979
    out = np.zeros((n, c) + grid.shape[1:4], F32)
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                cx, cy, cz = x0 + dx, y0 + dy, z0 + dz
                # trilinear weights: the distance to the opposite corner
                weight = ((ix - x0) if dx else (x0 + 1 - ix)) * ((iy - y0) if dy else (y0 + 1 - iy)) \
                    * ((iz - z0) if dz else (z0 + 1 - iz))
                # a corner outside the volume reads nothing (GRID_3D_COMMON:296-330: the range mask, the index
                # clamped to the frame)
                inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h) & (cz >= 0) & (cz < d)
                gx, gy, gz = np.clip(cx, 0, w - 1), np.clip(cy, 0, h - 1), np.clip(cz, 0, d - 1)
                for b in range(n):
                    values = x[b][:, gz[b], gy[b], gx[b]]  # [C, Do, Ho, Wo]
                    out[b] += np.where(inside[b], weight[b], F32(0)).astype(F32) * values
    return out


TRILINEAR_TILING = "image/resize_upsample_trilinear/op_host/resize_upsample_trilinear_tiling.cpp"
TRILINEAR_KERNEL = "image/resize_upsample_trilinear/op_kernel/resize_upsample_trilinear.h"


def _trilinear_scale(align_corners: int, size_in: int, size_out: int, scale: float) -> np.float32:
    """The per-axis step the tiling hands the kernel (TRILINEAR_TILING:119-155, set at l.596-603)."""
    if size_out == size_in:
        return F32(1)
    if align_corners:
        return F32(F32(size_in - 1) / F32(size_out - 1)) if size_out > 1 else F32(0)
    if scale > 0:
        return F32(scale)
    return F32(F32(size_in) / F32(size_out)) if size_out else F32(0)


def _trilinear_matrix(align_corners: int, size_in: int, size_out: int, scale: float) -> np.ndarray:
    """[size_out, size_in] interpolation weights of one axis (TRILINEAR_KERNEL:500-520 and 567-578)."""
    step = _trilinear_scale(align_corners, size_in, size_out, scale)
    matrix = np.zeros((size_out, size_in), F32)
    for o in range(size_out):
        if align_corners:  # TRILINEAR_KERNEL:571-572
            real = F32(step * F32(o))
        else:  # TRILINEAR_KERNEL:574-576: half-pixel, negative source clamped to 0
            real = max(F32(step * F32(F32(o) + F32(0.5)) - F32(0.5)), F32(0))
        i0 = min(int(real), size_in - 1)  # TRILINEAR_KERNEL:511
        lambda0 = min(max(F32(real - F32(i0)), F32(0)), F32(1))  # l.512
        i1 = i0 + (1 if i0 < size_in - 1 else 0)  # l.513-514
        matrix[o, i0] += F32(1) - lambda0  # l.515-516
        if i1 == i0:  # l.518-519: one tap of weight 1
            matrix[o, i0] = F32(1)
        else:
            matrix[o, i1] += lambda0  # l.517
    return matrix


def resize_upsample_trilinear(x: np.ndarray, output_size, align_corners: int, scales_d: float = 0.0,
                              scales_h: float = 0.0, scales_w: float = 0.0) -> np.ndarray:
    """x [N, C, D, H, W] -> [N, C, *output_size]: the three axes one after the other, as the kernel's W, H, D
    passes (TRILINEAR_KERNEL:280-380)."""
    out = x.astype(F32)
    for axis, size_out, scale in zip((2, 3, 4), output_size, (scales_d, scales_h, scales_w), strict=True):
        matrix = _trilinear_matrix(align_corners, out.shape[axis], int(size_out), float(scale))
        out = np.moveaxis(np.tensordot(matrix, np.moveaxis(out, axis, 0), axes=(1, 0)), 0, axis).astype(F32)
    return out


# --------------------------------------------------------------------------- ResizeNearestNeighborV2 (forward)

RNN_950 = "image/resize_nearest_neighbor_v2/op_kernel/arch35/resize_nearest_neighbor_v2_simt.h"
RNN_TBE = "ops/built-in/tbe/impl/dynamic/resize_nearest_neighbor_v2.py (canndev mirror @57af4a1)"


def resize_nearest_neighbor_v2(x: np.ndarray, size: tuple[int, int], align_corners: bool, half_pixel_centers: bool,
                               ties: str = "up", reciprocal: bool = False) -> np.ndarray:
    """The forward kernel CANN's Resize plugin runs for a nearest Resize, x [N, C, H, W] -> [N, C, *size].

    Scale per axis in float32: (in - 1) / (out - 1) with align_corners and out > 1, else 0; otherwise in / out
    (950: op_host/arch35/resize_nearest_neighbor_v2_tiling_base.cpp:240-263, the plugin passing no scales; TBE:
    calculate_scale, RNN_TBE:298-360, by vdiv, or, `reciprocal`, by vrec refined by Newton, modelled as in * (1 / out)).
    Source index (RNN_950:106-123; the data-copy and gather kernels alike, _base.h:42-49 Floor = truncation, Round =
    truncation of x + 0.5; RNN_TBE:264-296): floor((o + 0.5) * s) with half_pixel_centers, floor(o * s) without,
    rounded with align_corners (950: up; TBE: vconv f322s32r, `ties` "up" or "even", the source does not say),
    then min(index, in - 1) (RNN_950:122-123)."""
    rows = []
    for size_in, size_out in zip(x.shape[2:], size, strict=True):
        if align_corners:
            scale = F32(size_in - 1) / F32(size_out - 1) if size_out > 1 else F32(0)
        elif reciprocal:
            scale = F32(F32(size_in) * F32(F32(1) / F32(size_out)))
        else:
            scale = F32(size_in) / F32(size_out)
        o = np.arange(size_out, dtype=F32)
        value = ((o + F32(0.5)) * scale if half_pixel_centers else o * scale).astype(F32)
        if align_corners:
            index = np.rint(value) if ties == "even" else np.floor(value + F32(0.5))
        else:
            index = np.floor(value)
        rows.append(np.minimum(index.astype(np.int64), size_in - 1))
    return x[:, :, rows[0][:, None], rows[1][None, :]]
