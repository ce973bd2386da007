"""The function body of ResizeGrad, one per mode, coordinate mode, nearest mode, policy, axes and X's rank.

The twin of _onnx_resize.py: every axis's plan from the run-time roi, scales and sizes (_plan), and the dense
float32 matrix M [R, out, in] of every axis at once, all float32 arithmetic as onnxruntime's Resize; then dY
contracted with the matrices: a MatMul for a rank-1 X, else the band contraction of _separable_body per axis Resize
changes (the portable form: a MatMul per listed axis). Run-time values the kernel refuses, and a dY whose shape
Resize would not produce, give NaN shaped like X (a function cannot raise).

Shapes: each plan value holds one entry per axis of X, as a column [R, 1] that broadcasts against the axis's
outputs [R, out] (rank 1: the vector [1], which broadcasts as it is); the matrices take each output's coordinate as
[R, out, 1], its taps along the last axis, and add the taps on each input up in their order (tap_sum: onnxruntime
adds a pixel's weights up in float32, in order).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx

from ._graph import BOOL, FLOAT, INT64, BodyKey, Graph
from ._separable_body import Axes, axis_matrix, band, contract, matmul_axis

CROP = "tf_crop_and_resize"
TIE_TOLERANCE = 1e-6  # onnxruntime 1.32: a fraction within 1e-6 of one half is a tie (_onnx_resize.TIE_TOLERANCE)
CUBIC_OFFSETS = [-1, 0, 1, 2]


def _f(g: Graph, value) -> str:
    """A float32 constant (the plan and the matrices are float32 in every body)."""
    return g.constant(np.array(value, np.float32))


@dataclasses.dataclass
class Plan:
    """Per axis of X (columns, see the module's docstring): its lengths in and out (int64; in_float: float32), the
    scale of its coordinate transform and its roi; `valid`: the kernel accepts the inputs (bool, one element); `shape`:
    X's shape; `listed`: the axes Resize lists (the others it keeps)."""
    shape: str
    in_dims: str
    out_dims: str
    in_float: str
    scale: str
    starts: str | None
    ends: str | None
    valid: str
    listed: list[int]


def _plan(g: Graph, attrs: dict, rank: int, d_y: str | None, x: str, roi: str, scales: str, sizes: str) -> Plan:
    """_onnx_resize.plan: scales or sizes (the absent one empty; both padded so that every value has a shape), the
    policy, the roi; the checks it makes, as one `valid`. d_y None: the forward Resize, whose output lengths are
    the ones the plan computes."""
    ctm, policy = attrs["coordinate_transformation_mode"], attrs["keep_aspect_ratio_policy"]
    axes = attrs.get("axes")
    listed = list(range(rank)) if not axes else [a % rank for a in axes]
    count = len(listed)
    column = [-1] if rank == 1 else [-1, 1]
    every = listed == list(range(rank))

    def per_axis(values):  # a constant, shaped as the plan's values
        return g.constant(np.array(values).reshape(column))

    def full(value: str, rest) -> str:  # a value of the listed axes as one of every axis, `rest` on the others (a
        if every:  # value, or a Python one)
            return value
        return g.ScatterElements(rest if isinstance(rest, str) else per_axis([rest] * rank), per_axis(listed), value,
                                 axis=0)

    shape = in_dims = g.Shape(x)
    out_dims = None if d_y is None else g.Shape(d_y)
    if rank > 1:
        in_dims = g.Unsqueeze(in_dims, [1])
        out_dims = None if d_y is None else g.Unsqueeze(out_dims, [1])
    in_float = g.Cast(in_dims, to=FLOAT)
    listed_float = in_float if every else g.Gather(in_float, listed, axis=0)
    n_scales, n_sizes = g.Size(scales), g.Size(sizes)
    flat_sizes = g.Reshape(sizes, column)
    ones = per_axis(np.ones(count, np.float32))
    sizes_float = g.Cast(flat_sizes, to=FLOAT)
    if count > 1 or policy != "stretch":  # padded to a value per listed axis (one listed axis: any number broadcasts)
        sizes_float = g.Slice(g.Concat(sizes_float, ones, axis=0), [0], [count], [0])
    if policy == "stretch":  # the scales given, or the sizes over X's lengths
        valid = [g.Equal(g.Add(n_scales, n_sizes), [count])]  # one of them, a value per listed axis
        if count > 1:
            valid.append(g.Equal(g.Mul(n_scales, n_sizes), [0]))
        scale = g.Slice(g.Concat(g.Reshape(scales, column), g.Div(sizes_float, listed_float), ones, axis=0), [0],
                        [count], [0])
        # ComputeOutputShape: the float product truncated; or the sizes
        expected = g.Slice(g.Concat(flat_sizes, g.Cast(g.Mul(scale, listed_float), to=INT64), axis=0), [0], [count],
                           [0])
        scale = full(scale, np.float32(1))
        # finite scales > 0; sizes > 0 on an axis of X not empty (size / 0 is infinite)
        valid.append(g.And(g.Greater(scale, _f(g, 0.0)), g.Less(scale, _f(g, np.inf))))
    else:  # sizes only, one scale for the listed axes
        valid = [g.Equal(n_scales, [0]), g.Equal(n_sizes, [count]), full(g.Greater(sizes_float, _f(g, 0.0)), True)]
        ratios = g.Where(g.Equal(listed_float, _f(g, 0.0)), _f(g, 1.0), g.Div(sizes_float, listed_float))
        joint = ratios if count == 1 else (g.ReduceMin if policy == "not_larger" else g.ReduceMax)(ratios, keepdims=1)
        expected = g.Cast(g.Floor(g.Add(g.Mul(joint, listed_float), _f(g, 0.5))), to=INT64)  # std::round
        scale = joint if rank == 1 else full(g.Expand(joint, [count, 1]), np.float32(1))
    if out_dims is None:
        out_dims = full(expected, in_dims)
    valid.append(g.Equal(full(expected, in_dims), out_dims))
    starts = ends = None
    if ctm == CROP:  # the roi, starts then ends; a missing one is [0, 1] per axis
        valid.append(g.Equal(g.Abs(g.Sub(g.Size(roi), [count])), [count]))  # none or 2 values per listed axis
        default = per_axis(np.array([0.0] * count + [1.0] * count, np.float32))
        values = g.Slice(g.Concat(g.Cast(g.Reshape(roi, column), to=FLOAT), default, axis=0), [0], [2 * count], [0])
        starts, ends = g.Split(values, axis=0, num_outputs=2, outputs=2)
        starts, ends = full(starts, np.float32(0)), full(ends, np.float32(1))
    ok = valid[0]
    for condition in valid[1:]:
        ok = g.And(ok, condition)
    if rank > 1:  # every axis's
        ok = g.Cast(g.ReduceMin(g.Cast(ok, to=INT64), keepdims=0), to=BOOL)
    return Plan(shape, in_dims, out_dims, in_float, scale, starts, ends, ok, listed)


def coordinate(g: Graph, ctm: str, x: str, scale: str, size_out: str, size_in: str, starts, ends) -> str:
    """GetOriginalCoordinateFromResizedCoordinate for every output x [out] of every axis."""
    one, half, zero = _f(g, 1.0), _f(g, 0.5), _f(g, 0.0)
    if ctm == "asymmetric":
        return g.Div(x, scale)
    if ctm == "tf_half_pixel_for_nn":
        return g.Div(g.Add(x, half), scale)
    several = g.Greater(size_out, one)
    if ctm == "pytorch_half_pixel":
        return g.Where(several, g.Sub(g.Div(g.Add(x, half), scale), half), zero)
    if ctm == "align_corners":
        return g.Where(several, g.Div(g.Mul(x, g.Sub(size_in, one)), g.Sub(size_out, one)), zero)
    if ctm == CROP:
        span = g.Sub(size_in, one)
        many = g.Add(g.Mul(starts, span), g.Div(g.Mul(g.Mul(x, g.Sub(ends, starts)), span), g.Sub(size_out, one)))
        # one output: 0.5 (start + end) span, in double there; the same in float32, as halving is exact
        return g.Where(several, many, g.Mul(g.Mul(g.Add(starts, ends), span), half))
    if ctm == "half_pixel_symmetric":  # a float32 offset, then double
        double = onnx.TensorProto.DOUBLE
        offset = g.Mul(g.Div(size_in, _f(g, 2.0)), g.Sub(one, g.Div(size_out, g.Mul(scale, size_in))))
        shifted = g.Div(g.Add(g.Cast(x, to=double), g.typed(0.5, double)), g.Cast(scale, to=double))
        return g.Cast(g.Sub(g.Add(g.Cast(offset, to=double), shifted), g.typed(0.5, double)), to=FLOAT)
    return g.Sub(g.Div(g.Add(x, half), scale), half)  # half_pixel


def nearest_index(g: Graph, coord: str, nearest_mode: str) -> str:
    """GetNearestPixelFromOriginal, with onnxruntime's tie tolerance: floor(c) + 1 when the fraction is above one half
    by more than it (round_prefer_ceil: below it by no more). The index is clamped to 0 and up, where std::round's
    answer for a negative c is 0 as this one's."""
    if nearest_mode in ("floor", "ceil"):
        return g.Cast(g.Floor(coord) if nearest_mode == "floor" else g.Ceil(coord), to=INT64)
    floor = g.Floor(coord)
    excess = g.Sub(g.Sub(coord, floor), _f(g, 0.5))
    up = (g.Greater(excess, _f(g, TIE_TOLERANCE)) if nearest_mode == "round_prefer_floor"
          else g.GreaterOrEqual(excess, _f(g, -TIE_TOLERANCE)))
    return g.Cast(g.Add(floor, g.Cast(up, to=FLOAT)), to=INT64)


def running_sum(g: Graph, values: str, axis: int, keep: bool = False) -> str:
    """The float sum along `axis`, in order (onnxruntime's running sums); keep: the axis kept, of length 1."""
    return g.Gather(g.CumSum(values, g.typed(axis, INT64)), [-1] if keep else -1, axis=axis)


def tap_sum(g: Graph, index: str, weight: str, columns: str, scatter_free: bool = False, taps: int = 0) -> str:
    """The matrix [R, out, in] of the taps [R, out, K]: each tap's weight added into its input's column, in tap order
    (onnxruntime's ScatterElements adds its updates in order: Resize's float32 sum of a pixel's weights).
    scatter_free (runtimes without a scatter-add: onnx2tf / TFLite): each tap's weight where its index equals the
    column, added up tap by tap when their number `taps` is static (tables of the taps' rank: rank 2 per axis, which
    onnx2tf takes for no image), else by the running sum of a one-hot table of one rank more; the same sums, in the
    same order, as adding a 0 is exact (a ReduceSum's order is the runtime's: float32 sums that differ)."""
    if scatter_free and taps:
        total = None
        for k in range(taps):
            term = g.Where(g.Equal(g.Gather(index, [k], axis=-1), columns), g.Gather(weight, [k], axis=-1), _f(g, 0.0))
            total = term if total is None else g.Add(total, term)
        return total
    if scatter_free:
        hits = g.Equal(g.Unsqueeze(index, [-1]), columns)
        return running_sum(g, g.Where(hits, g.Unsqueeze(weight, [-1]), _f(g, 0.0)), -2)
    zeros = g.Expand(_f(g, 0.0), g.Concat(g.Shape(index, end=-1), g.Shape(columns), axis=0))
    return g.ScatterElements(zeros, index, weight, axis=-1, reduction="add")


def keys(g: Graph, x: str, a: float, outer: str) -> str:
    """Keys' cubic with coefficient a at |x| (x [.., K]); `outer` says where to use the outer piece."""
    near = g.Add(g.Mul(g.Mul(g.Sub(g.Mul(_f(g, a + 2), x), _f(g, a + 3)), x), x), _f(g, 1.0))
    far = g.Sub(g.Mul(g.Add(g.Mul(g.Sub(g.Mul(_f(g, a), x), _f(g, 5 * a)), x), _f(g, 8 * a)), x), _f(g, 4 * a))
    return g.Where(outer, far, near)


# The matrices below take each output's coordinate as coord [R, out, 1], and each axis's L - 1 (last, last_float)
# shaped to broadcast against it.

def linear_matrix(g: Graph, coord: str, last_float: str, last: str, columns: str) -> str:
    """SetupUpsampleBilinear: the coordinate clamped to [0, L - 1]; taps (x1, |c - x2|), (x2, |c - x1|), both 0.5
    when x1 == x2."""
    c = g.Max(g.Min(coord, last_float), _f(g, 0.0))
    x1 = g.Min(g.Cast(c, to=INT64), last)
    x2 = g.Min(g.Add(x1, 1), last)
    same = g.Equal(x1, x2)
    d1 = g.Where(same, _f(g, 0.5), g.Abs(g.Sub(c, g.Cast(x1, to=FLOAT))))
    d2 = g.Where(same, _f(g, 0.5), g.Abs(g.Sub(c, g.Cast(x2, to=FLOAT))))
    zero = _f(g, 0.0)
    return g.Add(g.Where(g.Equal(x1, columns), d2, zero), g.Where(g.Equal(x2, columns), d1, zero))


def cubic_matrix(g: Graph, coord: str, last: str, columns: str, a: float, exclude_outside: bool,
                 scatter_free: bool = False) -> str:
    """ResizeBiCubic: taps floor(c) - 1 .. + 2 (GetCubicCoeffs at the distances |s + 1|, |s|, |1 - s|, |2 - s|),
    clamped to the edge and added up per input in tap order; exclude_outside zeroes the taps outside and
    renormalises by their running sum."""
    base = g.Floor(coord)
    # (the tap constants [1, 4]: onnx2tf 1.29.24 cannot broadcast a constant [4] against a run-time [out, 1],
    # test_runtime_bugs.py)
    distance = g.Abs(g.Sub(_f(g, [CUBIC_OFFSETS]), g.Sub(coord, base)))  # [R, out, 4]
    weights = keys(g, distance, a, g.constant(np.array([[True, False, False, True]])))
    taps = g.Add(g.Cast(base, to=INT64), g.constant(np.array([CUBIC_OFFSETS], np.int64)))
    clamped = g.Max(g.Min(taps, last), 0)
    if exclude_outside:  # (a tap outside is one the clamp moves)
        weights = g.Where(g.Equal(clamped, taps), weights, _f(g, 0.0))
        weights = g.Div(weights, running_sum(g, weights, -1, keep=True))
    return tap_sum(g, clamped, weights, columns, scatter_free, len(CUBIC_OFFSETS))


def antialias_matrix(g: Graph, coord: str, scale: str, size: str, last: str, columns: str, cubic: bool, a: float,
                     exclude_outside: bool, crop: bool, scatter_free: bool = False) -> str:
    """SetupUpsampleFilterAntiAlias: Pillow's window [lo, hi) around 0.5 + coord, the filter stretched by 1 / scale
    when downscaling; the taps outside the input fold onto the edge pixel after its own weight (exclude_outside:
    they are dropped), normalised by the float reciprocal of the window's running sum. scale and size (L): shaped
    as last."""
    # reciprocals by Reciprocal: onnxruntime rewrites Mul(Div(1, a), b) as Div(b, a), rounded differently
    stretch = g.Max(g.Reciprocal(scale), _f(g, 1.0))
    support = g.Mul(stretch, _f(g, 2.0)) if cubic else stretch
    reach = g.Add(g.Mul(g.Cast(g.Ceil(support), to=INT64), 2), 1)  # Pillow's window size
    center = g.Add(coord, _f(g, 0.5))
    lo = g.Cast(g.Floor(g.Add(g.Sub(center, support), _f(g, 0.5))), to=INT64)
    hi = g.Cast(g.Floor(g.Add(g.Add(center, support), _f(g, 0.5))), to=INT64)
    # (onnxruntime caps hi - lo at the window size, which float32 rounding can pass only at coordinates of 2^23 or
    # more: beyond any X whose dense matrices fit, or outside a crop's roi, whose rows are zeroed)
    if exclude_outside:
        lo, hi = g.Min(g.Max(lo, 0), size), g.Min(g.Max(hi, 0), size)
    k = g.Range(0, g.ReduceMax(reach, keepdims=0), 1)
    j = g.Add(lo, k)  # [R, out, K]: tap k reads lo + k
    x = g.Abs(g.Mul(g.Add(g.Sub(g.Cast(j, to=FLOAT), center), _f(g, 0.5)), g.Reciprocal(stretch)))
    if cubic:  # Keys in Pillow's form; the outer piece is 0 from 2 on
        x = g.Min(x, _f(g, 2.0))
        near = g.Add(g.Mul(g.Mul(g.Sub(g.Mul(_f(g, a + 2), x), _f(g, a + 3)), x), x), _f(g, 1.0))
        far = g.Mul(g.Sub(g.Mul(g.Add(g.Mul(g.Sub(x, _f(g, 5.0)), x), _f(g, 8.0)), x), _f(g, 4.0)), _f(g, a))
        weight = g.Where(g.Less(x, _f(g, 1.0)), near, far)
    else:
        weight = g.Max(g.Sub(_f(g, 1.0), x), _f(g, 0.0))
    weight = g.Where(g.Less(j, hi), weight, _f(g, 0.0))
    total = running_sum(g, weight, -1, keep=True)
    index = g.Max(g.Min(j, last), 0)
    if exclude_outside:
        matrix = tap_sum(g, index, weight, columns, scatter_free)
    else:  # the taps inside first, then those outside, in order: an edge pixel's own weight before those it gets
        inside = g.Equal(index, j)
        zero = _f(g, 0.0)
        inner, outer = g.Where(inside, weight, zero), g.Where(inside, zero, weight)
        if scatter_free:  # as one tap list of twice the length
            matrix = tap_sum(g, g.Concat(index, index, axis=-1), g.Concat(inner, outer, axis=-1), columns, True)
        else:
            matrix = g.ScatterElements(tap_sum(g, index, inner, columns), index, outer, axis=-1, reduction="add")
    inverse_total = g.Reciprocal(total)
    if cubic or exclude_outside:  # (a whole window of the tent adds up to 1/2 or more: the tap nearest its centre)
        inverse_total = g.Where(g.Equal(total, _f(g, 0.0)), _f(g, 1.0), inverse_total)
    if not (exclude_outside or crop):  # a window wholly right of the input reads nothing (a policy's rounding up can
        # place one there; tf_crop_and_resize zeroes the rows outside after)
        inverse_total = g.Where(g.Less(lo, size), inverse_total, _f(g, 0.0))
    return g.Mul(matrix, inverse_total)


def resize_grad_body(key: BodyKey, inputs: list[str], rank: int) -> onnx.FunctionProto:
    """The body of a ResizeGrad node whose X has rank `rank` (inputs dY, X, roi, scales, sizes: attach() gives
    every node all five, an absent one as an empty tensor)."""
    g = key.graph()
    attrs = dict(key.attributes)
    d_y, x, roi, scales, sizes = inputs
    plan = _plan(g, attrs, rank, d_y, x, roi, scales, sizes)
    if key.portable:  # NaN by a Where, as resize()'s (onnx2tf 1.29.24 fails on an If branch that reads a main-graph
        # initializer, which an If left by inline()'s folding does): inputs that give dY another shape than Resize's
        # fail in the MatMuls instead
        gradient = _gradient(g, attrs, d_y, plan, rank, True, key.scatter_free)
        return g.function(key.op_type, key.overload, inputs, {"dX": g.like(g.Where(plan.valid, gradient, float("nan")),
                                                                          x)})
    nan = g.branch()
    gradient = g.branch()
    if g.dtype in (onnx.TensorProto.FLOAT16, FLOAT, onnx.TensorProto.DOUBLE):  # (onnxruntime: no bfloat16 Expand)
        refusal = nan.Expand(nan.typed(float("nan"), g.dtype), plan.shape)
    else:
        refusal = nan.CastLike(nan.Expand(float("nan"), plan.shape), x)
    result = gradient.like(_gradient(gradient, attrs, d_y, plan, rank, False, False), x)
    dx = g.If(plan.valid, then_branch=gradient.graph([result]), else_branch=nan.graph([refusal]))
    return g.function(key.op_type, key.overload, inputs, {"dX": dx})


def _matrix(g: Graph, attrs: dict, coord: str, scale: str, size: str, columns: str, scatter_free: bool) -> str:
    """The float32 matrix of the outputs at `coord` ([.., out, 1]) over the inputs `columns`; the axis's scale and
    length L (`size`) shaped to broadcast against coord."""
    mode, ctm = attrs["mode"], attrs["coordinate_transformation_mode"]
    a, exclude = float(attrs["cubic_coeff_a"]), bool(attrs["exclude_outside"])
    last = g.Sub(size, 1)
    last_float = g.Cast(last, to=FLOAT) if mode == "linear" or ctm == CROP else None
    if attrs["antialias"]:
        matrix = antialias_matrix(g, coord, scale, size, last, columns, mode == "cubic", a, exclude, ctm == CROP,
                                  scatter_free)
    elif mode == "nearest":
        matrix = g.Cast(g.Equal(g.Max(g.Min(nearest_index(g, coord, attrs["nearest_mode"]), last), 0), columns),
                        to=FLOAT)
    elif mode == "linear":
        matrix = linear_matrix(g, coord, last_float, last, columns)
    else:
        matrix = cubic_matrix(g, coord, last, columns, a, exclude, scatter_free)
    if ctm == CROP:  # an extrapolated output reads nothing
        matrix = g.Where(g.Or(g.Less(coord, _f(g, 0.0)), g.Greater(coord, last_float)), _f(g, 0.0), matrix)
    return matrix


def _kept(g: Graph, attrs: dict, plan: Plan, rank: int) -> str:
    """Whether Resize keeps each axis (bool [R, 1]; rank 1: [1]): one whose scale is 1 (antialias: whose length is),
    every axis when no length changes (rank 1: when its length does not, as a scale of 1 keeps it)."""
    kept = g.Equal(plan.out_dims, plan.in_dims)
    if rank > 1 and not attrs["antialias"]:
        kept = g.Or(g.Equal(plan.scale, _f(g, 1.0)), g.Cast(g.ReduceMin(g.Cast(kept, to=INT64), keepdims=1), to=BOOL))
    return kept


def _matrices(g: Graph, attrs: dict, plan: Plan, rank: int, scatter_free: bool = False):
    """Every axis's matrix M [R, out, in] (rank 1: [out, in]) in the arithmetic type, whether Resize keeps the axis
    (_kept), and the input positions 0 .. in_max - 1. scatter_free: taps summed without ScatterElements (tap_sum)."""
    def deeper(value):  # a value of the axis ([R, 1]) one axis deeper, to broadcast against [R, out, 1] (rank 1: as it
        # is, a vector of one value broadcasts)
        return value if rank == 1 else g.Unsqueeze(value, [-1])

    out_float = g.Cast(plan.out_dims, to=FLOAT)
    outputs = g.Range(_f(g, 0.0), g.ReduceMax(out_float, keepdims=0), _f(g, 1.0))  # 0 .. out - 1 as float32
    columns = g.Range(0, g.ReduceMax(plan.in_dims, keepdims=0), 1)
    coord = g.Unsqueeze(coordinate(g, attrs["coordinate_transformation_mode"], outputs, plan.scale, out_float,
                                   plan.in_float, plan.starts, plan.ends), [-1])
    matrix = _matrix(g, attrs, coord, deeper(plan.scale), deeper(plan.in_dims), columns, scatter_free)
    if g.opmath != FLOAT:
        matrix = g.Cast(matrix, to=g.opmath)
    return matrix, _kept(g, attrs, plan, rank), columns


def _identity(g: Graph, dst: str, columns: str) -> str:
    """[out, in] in the arithmetic type, dst the output positions: the matrix of an axis Resize keeps."""
    return g.Cast(g.Equal(g.Unsqueeze(dst, [-1]), columns), to=g.opmath)


def _kept_as_identity(g: Graph, matrix: str, kept: str, out_dims: str, columns: str):
    """The matrices [R, out, in] with the identity on the axes Resize keeps (rank 2 or more), and the output
    positions 0 .. out_max - 1."""
    dst = g.Range(0, g.ReduceMax(out_dims, keepdims=0), 1)
    return g.Where(g.Unsqueeze(kept, [-1]), _identity(g, dst, columns), matrix), dst


def _axis_matrices(g: Graph, attrs: dict, plan: Plan, rank: int) -> list:
    """(axis, its matrix [out, in] in the arithmetic type, the identity where Resize keeps the axis) for every axis
    Resize lists, without ScatterElements, each from its own plan as a rank-1 X's: tables of rank 2 (antialias: its
    window's one-hot table, of rank 3) for the scatter-free form (onnx2tf takes tensors of rank 3 or more for images
    and transposes them)."""
    kept = _kept(g, attrs, plan, rank)
    result = []
    for axis in plan.listed:
        rows = {name: _row(g, getattr(plan, name), axis) for name in ("in_dims", "out_dims", "in_float", "scale",
                                                                      "starts", "ends")}
        own = dataclasses.replace(plan, **rows)
        matrix, _, columns = _matrices(g, attrs, own, 1, scatter_free=True)
        dst = g.Range(0, g.ReduceMax(own.out_dims, keepdims=0), 1)
        result.append((axis, g.Where(_row(g, kept, axis), _identity(g, dst, columns), matrix)))
    return result


def _row(g: Graph, value: str | None, axis: int) -> str | None:
    """The axis's entry [1] of a plan value [R, 1]."""
    return None if value is None else g.Slice(g.Reshape(value, [-1]), [axis], [axis + 1])


def _listed_matrices(g: Graph, plan: Plan, matrix: str) -> list:
    """(axis, its matrix [out, in]) for every axis Resize lists, of the matrices [R, out_max, in_max]."""
    out_lengths = g.Reshape(plan.out_dims, [-1])
    return [(axis, axis_matrix(g, matrix, axis, g.Slice(out_lengths, [axis], [axis + 1]),
                               g.Slice(plan.shape, [axis], [axis + 1]))) for axis in plan.listed]


def _gradient(g: Graph, attrs: dict, d_y: str, plan: Plan, rank: int, portable: bool, scatter_free: bool) -> str:
    """dY (in the arithmetic type) contracted along every axis Resize changes with its matrix (portable: along every
    axis it lists, a kept one with the identity, rather than an If per axis; scatter_free: see tap_sum)."""
    grad = g.in_opmath(d_y)
    if scatter_free and rank > 1:  # a MatMul per listed axis with its dense matrix, built axis by axis
        for axis, one in _axis_matrices(g, attrs, plan, rank):
            grad = matmul_axis(g, grad, one, axis, rank)
        return grad
    matrix, kept, columns = _matrices(g, attrs, plan, rank, scatter_free)
    in_dims, out_dims = plan.in_dims, plan.out_dims
    if rank == 1:  # the matrix is [out, in]
        copy, contracted = g.branch(), g.branch()
        return g.If(kept, then_branch=copy.graph([grad]),
                    else_branch=contracted.graph([contracted.MatMul(grad, matrix)]))
    matrix, dst = _kept_as_identity(g, matrix, kept, out_dims, columns)
    if portable:  # a MatMul per listed axis with its dense matrix
        for axis, one in _listed_matrices(g, plan, matrix):
            grad = matmul_axis(g, grad, one, axis, rank)
        return grad
    bands = band(g, Axes(in_dims, out_dims, None, dst), matrix)
    rows = g.Split(bands.rows, axis=0, num_outputs=rank, outputs=rank)
    weights = g.Split(bands.weight, axis=0, num_outputs=rank, outputs=rank)
    for axis in plan.listed:  # an axis Resize keeps is skipped (most often N and C): a pass over dY less
        resize = g.branch()
        end = resize.Slice(plan.shape, [axis], [axis + 1])
        contracted = contract(resize, grad, resize.Slice(rows[axis], [0], end, [2]),
                              resize.Slice(weights[axis], [0], end, [2]), axis, rank)
        grad = g.If(g.Gather(kept, axis), then_branch=g.branch().graph([grad]), else_branch=resize.graph([contracted]))
    return grad


def resize(g: Graph, attrs: dict, rank: int, x: str, roi: str, scales: str, sizes: str,
           scatter_free: bool = False) -> str:
    """ONNX Resize of x (rank 2 or more; not tf_crop_and_resize, whose extrapolated outputs are a constant), in the
    arithmetic type: x times every listed axis's matrix M (the adjoint of the gradient above), a MatMul per axis;
    NaN where ResizeGrad's body would give NaN (inputs onnxruntime's Resize refuses). scatter_free: see tap_sum."""
    plan = _plan(g, attrs, rank, None, x, roi, scales, sizes)
    if scatter_free:
        listed = _axis_matrices(g, attrs, plan, rank)
    else:
        matrix, kept, columns = _matrices(g, attrs, plan, rank)
        listed = _listed_matrices(g, plan, _kept_as_identity(g, matrix, kept, plan.out_dims, columns)[0])
    y = g.in_opmath(x)
    for axis, one in listed:  # y = M x along the axis: the gradient's contraction with M^T
        y = matmul_axis(g, y, g.Transpose(one, perm=[1, 0]), axis, rank)
    return g.Where(plan.valid, y, float("nan"))
