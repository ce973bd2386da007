"""The function bodies of the separable ops: per resized axis, its taps, and the contraction with them.

The taps are the ONNX twins of _taps.py's tap functions (same arithmetic, dtype for dtype), computed for every
resized axis at once: [A, out, K] index and weight tensors, A the resized axes, `out` the longest output axis.
They sum into each axis's matrix M [out, in] (rows past an axis's own output length are 0; the antialias filters
write M directly). The backward of y = M x along an axis is dx = M^T dy, contracted in its gather form: input i
gathers the band of outputs that read it, rows first_i .. first_i + J - 1 (J the widest band of any axis),
weighted by M[o, i] (0 past the band): a Gather, a Mul and a ReduceSum per axis. The portable form
(BodyKey.portable) contracts with M itself, a MatMul per axis: with static shapes M folds into a constant and no
index tensor is left (onnx2tf reads index tensors of rank 3 or more as images and transposes them).

The tap functions take the static attributes (align_corners, the forward scales, input_size) as Python values;
the other lengths are run-time values (int64 [A]), so one body serves every shape.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import onnx

from ._graph import DOUBLE, FLOAT, INT64, BodyKey, Graph
from ._grid_body import CUBIC_OFFSETS, cubic_weights

ANY = 2 ** 62  # an upper bound no length reaches


@dataclasses.dataclass
class Axes:
    """The resized axes' lengths: in_len and out_len int64 [A, 1], the longest output `out_max` (scalar), and
    dst: 0 .. out_max - 1 (int64 [out_max])."""
    in_len: str | None  # None when known_in
    out_len: str
    out_max: str
    dst: str
    known_in: list[int] | None = None  # the input lengths when they are attributes

    def input_lengths(self, g: Graph, dtype: int) -> str:
        """in_len [A, 1] as `dtype`."""
        if self.known_in is None:
            return g.Cast(self.in_len, to=dtype)
        return g.constant(np.array([[n] for n in self.known_in], onnx.helper.tensor_dtype_to_np_dtype(dtype)))

    def input_ints(self, g: Graph) -> str:
        """in_len [A, 1], int64."""
        return g.value([[n] for n in self.known_in]) if self.known_in else self.in_len

    def columns(self, g: Graph) -> str:
        """0 .. in_max - 1 (int64), in_max the longest input axis."""
        in_max = max(self.known_in) if self.known_in else g.ReduceMax(self.in_len, keepdims=0)
        return g.Range(0, in_max, 1)

    def last_input(self, g: Graph, dtype: int = INT64) -> str:
        """in_len - 1 [A, 1] as `dtype`."""
        if self.known_in is None:
            ones = g.typed(1, INT64) if dtype == INT64 else g.typed(1.0, dtype)
            return g.Sub(self.in_len if dtype == INT64 else g.Cast(self.in_len, to=dtype), ones)
        return g.constant(np.array([[n - 1] for n in self.known_in], onnx.helper.tensor_dtype_to_np_dtype(dtype)))


@dataclasses.dataclass
class Taps:
    """Output o of axis a reads input index[a, o, k] with weight[a, o, k] (opmath); [A, out_max, K]."""
    index: str
    weight: str


def axes_of(g: Graph, in_lens, out_lens: str) -> Axes:
    """Axes from the input lengths (a list of ints, or an int64 [A] value) and the output lengths (int64 [A])."""
    out_max = g.ReduceMax(out_lens, keepdims=0)
    in_len = None if isinstance(in_lens, list) else g.Unsqueeze(in_lens, [1])
    return Axes(in_len, g.Unsqueeze(out_lens, [1]), out_max, g.Range(0, out_max, 1),
                list(in_lens) if isinstance(in_lens, list) else None)


def _stack(g: Graph, *columns: str) -> str:
    """[A, out] columns -> [A, out, K]."""
    return g.Concat(*[g.Unsqueeze(c, [-1]) for c in columns], axis=-1)


def aten_scale(g: Graph, axes: Axes, scales: Sequence[float], align_corners: bool, opmath=None):
    """_taps.aten_scale per axis, [A, 1] in opmath (default: the body's)."""
    opmath = opmath or g.opmath
    size_out = g.Cast(axes.out_len, to=opmath)
    if align_corners:
        one, zero = g.typed(1.0, opmath), g.typed(0.0, opmath)
        return g.Where(g.Greater(axes.out_len, 1), g.Div(axes.last_input(g, opmath), g.Sub(size_out, one)), zero)
    dtype = np.float64 if opmath != FLOAT else np.float32  # 1 / scale in double, as aten, rounded to opmath
    given = np.array([[1.0 / float(np.float32(s)) if s > 0 else 0.0] for s in scales], dtype)
    return _given_or_ratio(g, axes, scales, given, size_out, opmath)


def _given_or_ratio(g: Graph, axes: Axes, scales, given: np.ndarray, size_out: str, opmath) -> str:
    """Per axis [A, 1]: the index scale `given` where the forward scale is > 0, else the ratio in / out."""
    if all(s > 0 for s in scales):
        return g.constant(given)
    ratio = g.Div(axes.input_lengths(g, opmath), size_out)
    if any(s > 0 for s in scales):
        ratio = g.Where(np.array([[s > 0] for s in scales]), given, ratio)
    return ratio


def _guard_index(g: Graph, src: str, axes: Axes):
    """guard_index_and_lambda: min(floorf(src), in - 1) and src - index clamped to [0, 1]."""
    as_float = src if g.opmath == FLOAT else g.Cast(src, to=FLOAT)
    index = g.Min(g.Cast(g.Floor(as_float), to=INT64), axes.last_input(g))
    return index, g.Clip(g.Sub(src, g.Cast(index, to=g.opmath)), 0.0, 1.0)


def _copies(g: Graph, axes: Axes, ratio: str, scales: Sequence[float]) -> str:
    """out == in copies whatever the scale: a ratio of 1 then (without a scale the ratio is 1 already)."""
    if any(s > 0 for s in scales):
        ratio = g.Where(g.Equal(axes.out_len, axes.input_ints(g)), 1.0, ratio)
    return ratio


def linear_taps(g: Graph, axes: Axes, scales, align_corners: bool) -> Taps:
    """_taps.aten_linear: the half-pixel source index as one fused multiply-add, clamped at 0."""
    ratio = _copies(g, axes, aten_scale(g, axes, scales, align_corners), scales)
    dst = g.Cast(axes.dst, to=g.opmath)
    if align_corners:
        src = g.Mul(ratio, dst)
    else:
        # fmaf(ratio, dst + 0.5, -0.5): the exact product in double, rounded once (_taps.aten_source_index)
        wide = g.Sub(g.Mul(g.Cast(ratio, to=DOUBLE), g.Cast(g.Add(dst, 0.5), to=DOUBLE)), g.typed(0.5, DOUBLE))
        src = g.Max(g.Cast(wide, to=g.opmath), 0.0)
    index0, lam = _guard_index(g, src, axes)
    index1 = g.Min(g.Add(index0, 1), axes.last_input(g))
    return Taps(_stack(g, index0, index1), _stack(g, g.Sub(1.0, lam), lam))


def cubic_taps(g: Graph, axes: Axes, scales, align_corners: bool) -> Taps:
    """_taps.aten_cubic: four taps at floor - 1 .. floor + 2, clamped to the border; _taps.cubic_scales: a ratio of 1
    (a copy) on every axis when every axis keeps its size, whatever the scales."""
    ratio = aten_scale(g, axes, scales, align_corners)
    if any(s > 0 for s in scales):
        kept = g.ReduceMin(g.Cast(g.Equal(axes.out_len, axes.input_ints(g)), to=INT64), keepdims=0)
        ratio = g.Where(g.Equal(kept, 1), 1.0, ratio)
    dst = g.Cast(axes.dst, to=g.opmath)
    src = g.Mul(ratio, dst) if align_corners else g.Sub(g.Mul(ratio, g.Add(dst, 0.5)), 0.5)
    index, t = _guard_index(g, src, axes)
    weight, _ = cubic_weights(g, t, slopes=False)
    offsets = [int(o) for o in CUBIC_OFFSETS]
    last = g.Unsqueeze(axes.last_input(g), [-1])
    return Taps(g.Max(g.Min(g.Add(g.Unsqueeze(index, [-1]), offsets), last), 0), weight)


def _single(g: Graph, index: str) -> Taps:
    return Taps(g.Unsqueeze(index, [-1]), g.Expand(1.0, [1, 1, 1]))


def nearest_taps(g: Graph, axes: Axes, scales) -> Taps:
    """_taps.aten_nearest: out == in copies, out == 2 in halves, else min(floorf(dst * scale), in - 1)."""
    ratio = aten_scale(g, axes, scales, False, FLOAT)
    if any(s > 0 for s in scales):
        ratio = g.Where(g.Equal(axes.out_len, axes.input_ints(g)), g.typed(1.0, FLOAT),
                        g.Where(g.Equal(axes.out_len, g.Mul(axes.input_ints(g), 2)), g.typed(0.5, FLOAT), ratio))
    product = g.Mul(g.Cast(axes.dst, to=FLOAT), ratio)
    return _single(g, g.Min(g.Cast(g.Floor(product), to=INT64), axes.last_input(g)))


def nearest_exact_taps(g: Graph, axes: Axes, scales) -> Taps:
    """_taps.aten_nearest_exact: min(floorf((dst + 0.5) * scale), in - 1), the product in double."""
    ratio = aten_scale(g, axes, scales, False, FLOAT)
    product = g.Mul(g.Add(g.Cast(axes.dst, to=DOUBLE), g.typed(0.5, DOUBLE)), g.Cast(ratio, to=DOUBLE))
    return _single(g, g.Min(g.Cast(g.Floor(g.Cast(product, to=FLOAT)), to=INT64), axes.last_input(g)))


def tf_scale(g: Graph, axes: Axes, scales, align_corners: bool) -> str:
    """_taps.tf_scale: the float32 index scale of the Resize*V2Grad kernels."""
    size_out = g.Cast(axes.out_len, to=FLOAT)
    if align_corners:
        ratio = g.Div(axes.last_input(g, FLOAT), g.Sub(size_out, g.typed(1.0, FLOAT)))
        return g.Where(g.Greater(axes.out_len, 1), ratio, g.typed(0.0, FLOAT))
    given = np.array([[np.float32(1) / np.float32(s) if s > 0 else 0] for s in scales], np.float32)
    return _given_or_ratio(g, axes, scales, given, size_out, FLOAT)


def tf_nearest_taps(g: Graph, axes: Axes, scales, align_corners: bool, half_pixel_centers: bool) -> Taps:
    """_taps.tf_nearest: roundf(i s) (half away from zero) with align_corners, floorf((i + 0.5) s) with
    half_pixel_centers, else floorf(i s); clamped to [0, in - 1]; float32."""
    s = tf_scale(g, axes, scales, align_corners)
    i = g.Cast(axes.dst, to=FLOAT)
    if align_corners:
        product = g.Mul(i, s)
        low = g.Floor(product)
        index = g.Add(low, g.Cast(g.GreaterOrEqual(g.Sub(product, low), g.typed(0.5, FLOAT)), to=FLOAT))
    elif half_pixel_centers:
        index = g.Floor(g.Mul(g.Add(i, g.typed(0.5, FLOAT)), s))
    else:
        index = g.Floor(g.Mul(i, s))
    return _single(g, g.Max(g.Min(g.Cast(index, to=INT64), axes.last_input(g)), 0))


def tf_linear_taps(g: Graph, axes: Axes, scales, align_corners: bool, half_pixel_centers: bool) -> Taps:
    """_taps._tf_linear: aten's linear taps for align_corners and half-pixel; else TensorFlow's legacy scaler,
    float32 src = i s, top floor(src), bottom min(ceil(src), in - 1), lerp src - floor(src)."""
    if align_corners or half_pixel_centers:
        return linear_taps(g, axes, scales, align_corners)
    ratio = aten_scale(g, axes, scales, False, FLOAT)
    src = g.Mul(g.Cast(axes.dst, to=FLOAT), ratio)
    low = g.Floor(src)
    last = axes.last_input(g)
    lerp = g.Cast(g.Sub(src, low), to=g.opmath)
    return Taps(_stack(g, g.Min(g.Cast(low, to=INT64), last), g.Min(g.Cast(g.Ceil(src), to=INT64), last)),
                _stack(g, g.Sub(1.0, lerp), lerp))


def antialias_matrix(g: Graph, axes: Axes, scales, align_corners: bool, cubic: bool) -> str:
    """_taps.aten_antialias as the matrix M [A, out, in]: the filter (a tent, or Keys with A = -0.5 when cubic)
    over a window of its support (stretched by the downscale factor) around each output's centre, normalised to
    sum 1."""
    ratio = aten_scale(g, axes, scales, align_corners)
    stretch = g.Unsqueeze(g.Max(ratio, 1.0), [-1])  # [A, 1, 1]: the downscale factor, 1 when upscaling
    support = g.Mul(stretch, 2.0 if cubic else 1.0)
    invscale = g.Reciprocal(stretch)  # (onnxruntime rewrites Mul(Div(1, a), b) as Div(b, a): other rounding)
    center = g.Unsqueeze(g.Mul(ratio, g.Add(g.Cast(axes.dst, to=g.opmath), 0.5)), [-1])  # [A, out, 1]
    # the window [xmin, xmax): truncating casts, as aten's; aten's cap of its size at 2 ceil(support) + 1 never binds
    xmin = g.Max(g.Cast(g.Add(g.Sub(center, support), 0.5), to=INT64), 0)
    in_len = g.value([[[n]] for n in axes.known_in]) if axes.known_in else g.Unsqueeze(axes.in_len, [-1])
    xmax = g.Min(g.Cast(g.Add(g.Add(center, support), 0.5), to=INT64), in_len)
    j = axes.columns(g)
    x = g.Abs(g.Mul(g.Add(g.Sub(g.Cast(j, to=g.opmath), center), 0.5), invscale))
    if cubic:
        a = -0.5
        x = g.Min(x, 2.0)  # the outer piece is 0 from 2 on
        near = g.Add(g.Mul(g.Mul(g.Sub(g.Mul(a + 2, x), a + 3), x), x), 1.0)
        far = g.Mul(g.Sub(g.Mul(g.Add(g.Mul(g.Sub(x, 5.0), x), 8.0), x), 4.0), a)
        weight = g.Where(g.Less(x, 1.0), near, far)
    else:
        weight = g.Max(g.Sub(1.0, x), 0.0)
    weight = g.Where(g.And(g.GreaterOrEqual(j, xmin), g.Less(j, xmax)), weight, 0.0)
    total = g.ReduceSum(weight, [-1], keepdims=1)
    return g.Where(g.Equal(total, 0.0), weight, g.Div(weight, total))


# --------------------------------------------------------------------------- contraction

@dataclasses.dataclass
class Band:
    """The gather form of every axis's M^T: input i of axis a reads output rows[a, j, i] with weight[a, j, i]
    ([A, J, in_max]; weight 0 past the band)."""
    rows: str
    weight: str


def matrix_of(g: Graph, axes: Axes, taps: Taps) -> str:
    """M [A, out_max, in_max]: the weight of input i in output o of axis a, the taps' weights summed per input."""
    hits = g.Equal(g.Unsqueeze(taps.index, [-1]), axes.columns(g))
    return g.ReduceSum(g.Where(hits, g.Unsqueeze(taps.weight, [-1]), 0.0), [2], keepdims=0)


def band(g: Graph, axes: Axes, matrix: str) -> Band:
    """The bands of the matrices M [A, out_max, in_max]: each input's band runs from its first non-zero row, J rows
    long (the widest band). Rows past an axis's own output length read nothing."""
    out_len = g.Unsqueeze(axes.out_len, [-1])  # [A, 1, 1]
    row = g.Unsqueeze(axes.dst, [-1])  # [out_max, 1]
    matrix = g.Where(g.Less(row, out_len), matrix, 0.0)
    used = g.Abs(g.Sign(matrix))  # 1 where non-zero
    first = g.ArgMax(used, axis=1, keepdims=0)  # [A, in]: 0 for an unread input
    # the last row read, 0 for an unread input (not ArgMax's select_last_index: IREE 3.13 computes it wrongly over
    # dynamic dims, docs/ops.md)
    last = g.ReduceMax(g.Where(g.Greater(used, 0.0), row, 0), [1], keepdims=0)
    runs = g.Sub(last, first)
    steps = g.Range(0, g.Add(g.ReduceMax(runs, keepdims=0), 1), 1)
    rows = g.Add(g.Unsqueeze(first, [1]), g.Unsqueeze(steps, [0, 2]))  # [A, J, in]
    inside = g.Less(rows, out_len)
    rows = g.Where(inside, rows, 0)
    return Band(rows, g.Where(inside, g.GatherElements(matrix, rows, axis=1), 0.0))


def contract(g: Graph, grad: str, rows: str, weight: str, axis: int, rank: int) -> str:
    """grad's axis `axis` contracted with one axis's band (rows and weight [1, J, in]): a Gather of the band's rows,
    times its weights, summed over the band."""
    trailing = list(range(3, rank - axis + 2))
    if trailing:
        weight = g.Unsqueeze(weight, trailing)
    return g.ReduceSum(g.Mul(g.Gather(grad, rows, axis=axis), weight), [axis, axis + 1], keepdims=0)


def matmul_axis(g: Graph, grad: str, matrix: str, axis: int, rank: int) -> str:
    """grad's axis `axis` contracted with one axis's matrix M [out, in] (dx = M^T dy along it) by a MatMul: the last
    axis as grad M; another as M^T grad with the axis moved next to last (a Transpose) and back."""
    if axis == rank - 1:
        return g.MatMul(grad, matrix)
    transposed = g.Transpose(matrix, perm=[1, 0])
    if axis == rank - 2:
        return g.MatMul(transposed, grad)
    perm = list(range(rank))
    perm[axis], perm[rank - 2] = rank - 2, axis
    return g.Transpose(g.MatMul(transposed, g.Transpose(grad, perm=perm)), perm=perm)


def axis_matrix(g: Graph, matrices: str, position: int, out_len, in_len) -> str:
    """Axis `position`'s matrix [out, in] of matrices [A, out_max, in_max], cut to its own lengths (int64 [1] each):
    its rows by a Gather of a Range (tract 0.23 evaluates a Slice to a run-time length wrongly)."""
    rows = g.Gather(g.Gather(matrices, position, axis=0), g.Range(0, g.Squeeze(out_len, [0]), 1), axis=0)
    return g.Slice(rows, [0], in_len, [1])


# The twins of _taps.TAP_KINDS: (graph, axes, scales, align_corners, half_pixel_centers) -> M [A, out, in]
MATRICES = {
    "nearest": lambda g, axes, s, ac, hp: matrix_of(g, axes, nearest_taps(g, axes, s)),
    "nearest_exact": lambda g, axes, s, ac, hp: matrix_of(g, axes, nearest_exact_taps(g, axes, s)),
    "linear": lambda g, axes, s, ac, hp: matrix_of(g, axes, linear_taps(g, axes, s, ac)),
    "cubic": lambda g, axes, s, ac, hp: matrix_of(g, axes, cubic_taps(g, axes, s, ac)),
    "antialias_linear": lambda g, axes, s, ac, hp: antialias_matrix(g, axes, s, ac, cubic=False),
    "antialias_cubic": lambda g, axes, s, ac, hp: antialias_matrix(g, axes, s, ac, cubic=True),
    "tf_nearest": lambda g, axes, s, ac, hp: matrix_of(g, axes, tf_nearest_taps(g, axes, s, ac, hp)),
    "tf_linear": lambda g, axes, s, ac, hp: matrix_of(g, axes, tf_linear_taps(g, axes, s, ac, hp)),
}


def separable(g: Graph, grad: str, in_lens, out_lens: str, kind: str, scales, align_corners: bool,
              half_pixel_centers: bool, first_axis: int, rank: int, portable: bool = False) -> str:
    """grad (opmath) contracted along axes first_axis .. first_axis + A - 1 with the taps of `kind`; in_lens a
    list of ints or an int64 [A] value, out_lens an int64 [A] value. portable: by MatMuls (BodyKey.portable)."""
    axes = axes_of(g, in_lens, out_lens)
    matrices = MATRICES[kind](g, axes, scales, align_corners, half_pixel_centers)
    count = len(scales)
    if portable:  # a MatMul per axis with its dense matrix (runtimes that guess layouts read no index tensors)
        for position in range(count):
            in_len = [axes.known_in[position]] if axes.known_in else g.Slice(in_lens, [position], [position + 1])
            matrix = axis_matrix(g, matrices, position, g.Slice(out_lens, [position], [position + 1]), in_len)
            grad = matmul_axis(g, grad, matrix, first_axis + position, rank)
        return grad
    bands = band(g, axes, matrices)
    rows = g.Split(bands.rows, axis=0, num_outputs=count, outputs=count) if count > 1 else bands.rows
    weights = g.Split(bands.weight, axis=0, num_outputs=count, outputs=count) if count > 1 else bands.weight
    rows, weights = ([rows], [weights]) if count == 1 else (rows, weights)
    for position in range(count):
        row, weight = rows[position], weights[position]
        if axes.known_in is None or axes.known_in[position] < max(axes.known_in):  # the axis's own inputs
            end = [axes.known_in[position]] if axes.known_in else g.Slice(in_lens, [position], [position + 1])
            row, weight = g.Slice(row, [0], end, [2]), g.Slice(weight, [0], end, [2])
        grad = contract(g, grad, row, weight, first_axis + position, rank)
    return grad


def checked(g: Graph, x: str, low, high) -> str:
    """x, when low <= its dims <= high (int64 vectors, or lists of ints); else a run-time error: a dim out of its
    bounds becomes -2 in the shape x is reshaped to. attach() cannot check symbolic dims, and a function cannot
    raise a message of its own. With bounds as lists, an axis any length passes (0 .. ANY) is not read: its dim in
    the shape is 0 (Reshape's copy), so that with static bounded dims the shape folds into a constant and x keeps its
    static shape (tract types no Reshape to a computed shape), however many free dims are symbolic."""
    if not (isinstance(low, list) and isinstance(high, list)):
        shape = g.Shape(x)
        return g.Reshape(x, g.Where(g.And(g.GreaterOrEqual(shape, low), g.LessOrEqual(shape, high)), shape, -2),
                         allowzero=1)
    bounded = [k for k, (lo, hi) in enumerate(zip(low, high, strict=True)) if lo > 0 or hi < ANY]
    if not bounded:
        return x
    first, end = bounded[0], bounded[-1] + 1
    shape = g.Shape(x, start=first, end=end)
    low, high = low[first:end], high[first:end]
    ok = g.GreaterOrEqual(shape, low)
    # an upper bound only where there is one (tract 0.23.9 fails on a comparison with a constant of 2^31 or more
    # that the folding leaves, where ONNX's shape inference does not know x's shape): the others' dims times 0
    capped = [int(h < ANY) for h in high]
    if all(capped):
        ok = g.And(ok, g.LessOrEqual(shape, high))
    elif any(capped):
        ok = g.And(ok, g.LessOrEqual(g.Mul(shape, capped), [h * c for h, c in zip(high, capped, strict=True)]))
    dims = g.Where(ok, shape, -2)
    pieces = ([[0] * first] if first else []) + [dims] + ([[0] * (len(low) - end)] if end < len(low) else [])
    return g.Reshape(x, g.Concat(*pieces, axis=0) if len(pieces) > 1 else dims)


def upsample_body(spec, key: BodyKey) -> onnx.FunctionProto:
    """The body of an Upsample*Grad node (_upsample.UpsampleSpec): every spatial axis of grad_output contracted with
    its taps; the lengths in from input_size, out from grad_output, checked against output_size when given."""
    g = key.graph()
    input_size = [int(v) for v in key.attribute("input_size")]
    output_size = [int(v) for v in key.attribute("output_size") or ()]
    rank = len(input_size)
    attrs = dict(key.attributes)
    scales = spec.scale_values(attrs, rank - 2)
    # N and C as input_size's (-1: any), the spatial lengths as output_size (or any positive one)
    low = [0 if n == -1 else n for n in input_size[:2]] + (output_size or [1] * (rank - 2))
    high = [ANY if n == -1 else n for n in input_size[:2]] + (output_size or [ANY] * (rank - 2))
    grad = g.in_opmath(checked(g, "grad_output", low, high))
    grad = separable(g, grad, input_size[2:], g.Shape(grad, start=2), spec.taps, scales,
                     bool(attrs.get("align_corners", 0)), False, 2, rank, key.portable)
    return g.function(key.op_type, key.overload, ["grad_output"], {spec.output: g.like(grad, "grad_output")})


def resize_v2_body(spec, key: BodyKey) -> onnx.FunctionProto:
    """The body of a Resize*V2Grad / ResizeLinearGrad node (_resize_v2.ResizeV2Spec): the lengths in from
    original_image's shape (or `size`), out from grads."""
    g = key.graph()
    attrs = dict(key.attributes)
    rank = 2 + spec.spatial
    scales = spec.scale_values(attrs.get(spec.scale_attr))
    spatial = [1] * spec.spatial, [ANY] * spec.spatial
    if spec.shape_input == "size":  # a size without `spatial` values fails the Reshape
        in_lens = g.Reshape(g.Cast("size", to=INT64), [spec.spatial])
    else:
        in_lens = g.Shape("original_image", start=2)
    if spec.shape_input == "size" or key.portable:
        # (portable: grads' N and C are not checked against the image's at run time: attach() checks static ones,
        # and tract types no Reshape to a shape computed from two inputs' symbolic dims)
        grad = checked(g, "grads", [0, 0] + spatial[0], [ANY, ANY] + spatial[1])
    else:  # grads of the image's N and C
        batch = g.Shape("original_image", start=0, end=2)
        grad = checked(g, "grads", g.Concat(batch, spatial[0], axis=0), g.Concat(batch, spatial[1], axis=0))
    grad = g.in_opmath(grad)
    # input lengths > 0, else a run-time error (a Reshape to -2)
    in_lens = g.Reshape(in_lens, g.Where(g.Greater(g.ReduceMin(in_lens, keepdims=0), 0), [spec.spatial], [-2]))
    grad = separable(g, grad, in_lens, g.Shape(grad, start=2), spec.taps, scales, bool(attrs.get("align_corners", 0)),
                     bool(attrs.get("half_pixel_centers", 0)), 2, rank, key.portable)
    return g.function(key.op_type, key.overload, ["grads", spec.shape_input], {"y": g.like(grad, "grads")})
