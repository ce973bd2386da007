"""Pixel-coordinate helpers of aten's GridSampler.h, vectorised over NumPy arrays.

Each helper returns the coordinate and, where aten has a `_set_grad` twin, the
derivative of the coordinate with respect to its input. They run in the
accumulation dtype (float32 for half types and float, float64 for double) so the
rounding matches aten's scalar_t arithmetic.

Differences from aten, on purpose:
- reflection takes the flip parity from fmod(x, 2 * span) (exact) instead of
  int(floor(x / span)), which aten computes in scalar_t and which overflows or
  loses parity beyond 2**24 periods in float;
- clipping propagates NaN (aten's std::min/std::max return the border for a NaN),
  and safe_downgrade then sends NaN to -100, out of bounds: a NaN grid point
  contributes nothing in every padding mode;
- reflection of a pixel coordinate beyond +-2**23 (where float32 has no fraction
  bits left, and float and double reflect to different pixels) gives NaN: such a
  point reads nothing, the same on every path.
"""
from __future__ import annotations

import numpy as np

from ._common import INT32_MAX, INT32_MIN


def unnormalize(coord: np.ndarray, size: int, align_corners: bool):
    """grid_sampler_unnormalize_set_grad: [-1, 1] to pixel units, with d(pixel)/d(grid)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), coord.dtype.type(size - 1) / 2
    return ((coord + 1) * size - 1) / 2, coord.dtype.type(size) / 2


def clip(coord: np.ndarray, size: int):
    """clip_coordinates_set_grad: clamp to [0, size-1]; the borders count as outside for the gradient."""
    limit = coord.dtype.type(size - 1)
    low, high = coord <= 0, coord >= limit
    out = np.where(low, coord.dtype.type(0), np.where(high, limit, coord))
    return out, np.where(low | high, 0, 1).astype(coord.dtype)


REFLECT_LIMIT = 2.0 ** 23  # pixels; beyond it a reflected coordinate is NaN (see the module doc)


def reflect(coord: np.ndarray, twice_low: int, twice_high: int):
    """reflect_coordinates_set_grad: mirror into [low, high], with the sign of the derivative."""
    if twice_low == twice_high:
        return np.zeros_like(coord), np.zeros_like(coord)
    coord = np.where(np.abs(coord) > REFLECT_LIMIT, coord.dtype.type(np.nan), coord)
    low = coord.dtype.type(twice_low) / 2
    span = coord.dtype.type(twice_high - twice_low) / 2
    shifted = coord - low
    sign = np.where(shifted < 0, -1, 1).astype(coord.dtype)
    rest = np.fmod(np.abs(shifted), 2 * span)
    flipped = rest >= span
    out = np.where(flipped, 2 * span - rest, rest) + low
    return out, np.where(flipped, -sign, sign)


def reflect_for(coord: np.ndarray, size: int, align_corners: bool):
    if align_corners:
        return reflect(coord, 0, 2 * (size - 1))
    return reflect(coord, -1, 2 * size - 1)


def safe_downgrade(coord: np.ndarray) -> np.ndarray:
    """safe_downgrade_to_int_range: non-finite or out-of-int32 coordinates become -100 (out of bounds)."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(coord) | (coord >= INT32_MAX) | (coord < INT32_MIN)
    return np.where(bad, coord.dtype.type(-100), coord)


def apply_padding(coord: np.ndarray, size: int, padding_mode: str, align_corners: bool):
    """compute_coordinates (with its _set_grad multiplier) for a pixel coordinate."""
    grad = np.ones_like(coord)
    if padding_mode == "border":
        coord, grad = clip(coord, size)
    elif padding_mode == "reflection":
        coord, reflect_grad = reflect_for(coord, size, align_corners)
        coord, clip_grad = clip(coord, size)
        grad = reflect_grad * clip_grad
    return safe_downgrade(coord), grad


def source_index(grid_coord: np.ndarray, size: int, padding_mode: str, align_corners: bool):
    """grid_sampler_compute_source_index_set_grad: pixel coordinate and d(pixel)/d(grid)."""
    coord, mult = unnormalize(grid_coord, size, align_corners)
    coord, pad_grad = apply_padding(coord, size, padding_mode, align_corners)
    return coord, mult * pad_grad


def cubic_coefficients(t: np.ndarray):
    """get_cubic_upsample_coefficients (A = -0.75) and get_cubic_coefficients_grad, for taps -1..2."""
    a = t.dtype.type(-0.75)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    coeffs = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    x = -1 - t
    g0 = (-3 * a * x - 10 * a) * x - 8 * a
    x = -t
    g1 = (-3 * (a + 2) * x - 2 * (a + 3)) * x
    x = 1 - t
    g2 = (3 * (a + 2) * x - 2 * (a + 3)) * x
    x = 2 - t
    g3 = (3 * a * x - 10 * a) * x + 8 * a
    return coeffs, [g0, g1, g2, g3]
