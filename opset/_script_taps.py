"""The onnxscript twins of _taps.py: each tap function as taps (index [out, K], weight [out, K]), and the contraction.

A taps helper takes input_len and output_len (int64 [1]), the forward scale (float32 scalar,
0 = not given), align_corners (int64 scalar) and `like`, a scalar zero of the arithmetic type
(aten's opmath: float32 for float and the half types, float64 for double). Callers build the
taps in both types and keep the ones of the input's dtype (`OpmathTaps`), so every index is
rounded as the framework rounds it. The antialias filter (a window of varying width) is built
as a dense matrix M[out, in] instead, small at the sizes it is used for.

The contraction (ContractBand) is the kernels' gather form: each input gathers the run of
outputs that read it, whole blocks of the axes after the contracted one at a time.
"""
from __future__ import annotations

import onnx
from onnxscript import opset18 as op
from onnxscript import script

from ._script import DOUBLE, HELPERS, INT64, helper

FLOAT = onnx.TensorProto.FLOAT
BOOL = onnx.TensorProto.BOOL


@helper
@script(HELPERS, default_opset=op)
def ShapeChecked(x, expected):
    """x when its shape matches `expected` (int64, -1: any) and its spatial dims (from 2 on) are > 0, as the kernel
    checks; otherwise a run-time error (a Reshape to -2). With symbolic dims attach() cannot see a mismatch, and a
    function cannot raise a message: failing beats computing on the grad's own dims as if nothing were wrong."""
    dims = op.Shape(x)
    matches = op.ReduceMin(op.Cast(op.Or(op.Equal(expected, -1), op.Equal(expected, dims)), to=INT64), keepdims=0)
    positive = op.ReduceMin(op.Cast(op.Greater(op.Shape(x, start=2), 0), to=INT64), keepdims=0)
    valid = op.Equal(op.Mul(matches, positive), 1)
    return op.Reshape(x, op.Where(valid, dims, op.Sub(op.Mul(dims, 0), 2)), allowzero=1)


@helper
@script(HELPERS, default_opset=op)
def UpsampleShape(sizes, output_size):
    """The grad_output shape an Upsample op's attributes allow: input_size's N and C (-1: any), then output_size
    (empty: any spatial size)."""
    if op.Equal(op.Size(output_size), 0):
        spatial = op.Reshape(op.Sub(op.Size(sizes), 2), op.Constant(value_ints=[1]))
        outs = op.Expand(op.Constant(value_ints=[-1]), spatial)
    else:
        outs = op.Identity(output_size)
    return op.Concat(op.Slice(sizes, op.Constant(value_ints=[0]), op.Constant(value_ints=[2])), outs, axis=0)


@helper
@script(HELPERS, default_opset=op)
def IsDouble(x):
    """True when x is float64: a third survives the round trip through x's dtype only in double."""
    third = op.Div(op.Cast(op.Constant(value_int=1), to=DOUBLE), op.Cast(op.Constant(value_int=3), to=DOUBLE))
    return op.Equal(op.Cast(op.CastLike(third, x), to=DOUBLE), third)


@helper
@script(HELPERS, default_opset=op)
def OpmathMatrix(is_double, matrix64, matrix32):
    """The matrix built in the input's opmath, as double."""
    return op.Where(is_double, matrix64, op.Cast(matrix32, to=DOUBLE))


@helper
@script(HELPERS, default_opset=op)
def OpmathTaps(is_double, index64, weight64, index32, weight32):
    """The taps built in the input's opmath, weights as double."""
    return op.Where(is_double, index64, index32), op.Where(is_double, weight64, op.Cast(weight32, to=DOUBLE))


@helper
@script(HELPERS, default_opset=op)
def Positions(length, like):
    """0, 1, ..., length - 1 (length int64 [1]) in the type of `like`."""
    return op.CastLike(op.Range(op.CastLike(0, length[0]), length[0], op.CastLike(1, length[0])), like)


@helper
@script(HELPERS, default_opset=op)
def OneHot(index, length, like):
    """[*index.shape, length] with a 1 at index (in the type of `like`); onnxruntime's OneHot has no double kernel."""
    positions = op.Range(op.CastLike(0, length[0]), length[0], op.CastLike(1, length[0]))
    return op.CastLike(op.Equal(op.Unsqueeze(index, op.Constant(value_ints=[-1])), positions), like)


@helper
@script(HELPERS, default_opset=op)
def CubicCoefficients(t):
    """get_cubic_upsample_coefficients and get_cubic_coefficients_grad (A = -0.75), stacked on a new last axis."""
    a = op.CastLike(-0.75, t)
    x = op.Add(t, 1.0)
    c0 = op.Sub(op.Mul(op.Add(op.Mul(op.Sub(op.Mul(a, x), op.Mul(a, 5.0)), x), op.Mul(a, 8.0)), x), op.Mul(a, 4.0))
    c1 = op.Add(op.Mul(op.Mul(op.Sub(op.Mul(op.Add(a, 2.0), t), op.Add(a, 3.0)), t), t), 1.0)
    x = op.Sub(1.0, t)
    c2 = op.Add(op.Mul(op.Mul(op.Sub(op.Mul(op.Add(a, 2.0), x), op.Add(a, 3.0)), x), x), 1.0)
    x = op.Sub(2.0, t)
    c3 = op.Sub(op.Mul(op.Add(op.Mul(op.Sub(op.Mul(a, x), op.Mul(a, 5.0)), x), op.Mul(a, 8.0)), x), op.Mul(a, 4.0))
    x = op.Sub(-1.0, t)
    g0 = op.Sub(op.Mul(op.Sub(op.Mul(op.Mul(a, -3.0), x), op.Mul(a, 10.0)), x), op.Mul(a, 8.0))
    x = op.Neg(t)
    g1 = op.Mul(op.Sub(op.Mul(op.Mul(op.Add(a, 2.0), -3.0), x), op.Mul(op.Add(a, 3.0), 2.0)), x)
    x = op.Sub(1.0, t)
    g2 = op.Mul(op.Sub(op.Mul(op.Mul(op.Add(a, 2.0), 3.0), x), op.Mul(op.Add(a, 3.0), 2.0)), x)
    x = op.Sub(2.0, t)
    g3 = op.Add(op.Mul(op.Sub(op.Mul(op.Mul(a, 3.0), x), op.Mul(a, 10.0)), x), op.Mul(a, 8.0))
    axis = op.Constant(value_ints=[-1])
    coeffs = op.Concat(op.Unsqueeze(c0, axis), op.Unsqueeze(c1, axis), op.Unsqueeze(c2, axis),
                       op.Unsqueeze(c3, axis), axis=-1)
    grads = op.Concat(op.Unsqueeze(g0, axis), op.Unsqueeze(g1, axis), op.Unsqueeze(g2, axis),
                      op.Unsqueeze(g3, axis), axis=-1)
    return coeffs, grads


# --------------------------------------------------------------------------- aten

@helper
@script(HELPERS, default_opset=op)
def AtenScale(input_len, output_len, scale, align_corners, like):
    """area_pixel_compute_scale / compute_scales_value in the type of `like`."""
    size_in = op.CastLike(input_len, like)
    size_out = op.CastLike(output_len, like)
    corners = op.Where(op.Greater(output_len, 1), op.Div(op.Sub(size_in, 1.0), op.Sub(size_out, 1.0)),
                       op.CastLike(0.0, like))
    given = op.CastLike(op.Div(op.Cast(op.Constant(value_float=1.0), to=DOUBLE), op.Cast(scale, to=DOUBLE)), like)
    plain = op.Where(op.Greater(scale, 0.0), given, op.Div(size_in, size_out))
    return op.Where(op.Cast(align_corners, to=BOOL), corners, plain)


@helper
@script(HELPERS, default_opset=op)
def AtenSourceIndex(ratio, output_len, align_corners, linear, like):
    """_taps.aten_source_index: the linear kernels fuse (ratio * (dst + 0.5) - 0.5) into one rounding (the
    product and difference in double, rounded once) and clamp at 0; the cubic one rounds each step."""
    dst = Positions(output_len, like)
    stepwise = op.Sub(op.Mul(ratio, op.Add(dst, 0.5)), 0.5)
    fused = op.CastLike(op.Sub(op.Mul(op.Cast(ratio, to=DOUBLE), op.Cast(op.Add(dst, 0.5), to=DOUBLE)), 0.5), like)
    fused = op.Where(op.Less(fused, 0.0), op.CastLike(0.0, fused), fused)
    half = op.Where(op.Cast(linear, to=BOOL), fused, stepwise)
    return op.Where(op.Cast(align_corners, to=BOOL), op.Mul(ratio, dst), half)


@helper
@script(HELPERS, default_opset=op)
def GuardIndex(src, input_len):
    """guard_index_and_lambda: min(floorf(src), in - 1) and src - index clamped to [0, 1]."""
    index = op.Min(op.Cast(op.Floor(op.Cast(src, to=FLOAT)), to=INT64), op.Sub(input_len, 1))
    lam = op.Clip(op.Sub(src, op.CastLike(index, src)), op.CastLike(0.0, src), op.CastLike(1.0, src))
    return index, lam


@helper
@script(HELPERS, default_opset=op)
def SingleTap(index, like):
    """index [out] as taps: [out, 1] with weight 1."""
    column = op.Unsqueeze(index, op.Constant(value_ints=[1]))
    return column, op.CastLike(op.Expand(op.Constant(value_float=1.0), op.Shape(column)), like)


@helper
@script(HELPERS, default_opset=op)
def NearestTaps(input_len, output_len, scale, like):
    """aten nearest_idx: out == in copies, out == 2 in halves, else min(floorf(dst * scale32), in - 1)."""
    dst = Positions(output_len, op.Constant(value_int=0))
    ratio = AtenScale(input_len, output_len, scale, op.Constant(value_int=0), op.Constant(value_float=0.0))
    scaled = op.Min(op.Cast(op.Floor(op.Mul(op.Cast(dst, to=FLOAT), ratio)), to=INT64), op.Sub(input_len, 1))
    index = op.Where(op.Equal(output_len, input_len), dst,
                     op.Where(op.Equal(output_len, op.Mul(input_len, 2)), op.Div(dst, 2), scaled))
    taps, weights = SingleTap(index, like)
    return taps, weights


@helper
@script(HELPERS, default_opset=op)
def NearestExactTaps(input_len, output_len, scale, like):
    """aten nearest_exact_idx: min(floorf((dst + 0.5) * scale32), in - 1), the product in double."""
    ratio = AtenScale(input_len, output_len, scale, op.Constant(value_int=0), op.Constant(value_float=0.0))
    dst = Positions(output_len, op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    product = op.Cast(op.Mul(op.Add(dst, 0.5), op.Cast(ratio, to=DOUBLE)), to=FLOAT)
    index = op.Min(op.Cast(op.Floor(product), to=INT64), op.Sub(input_len, 1))
    taps, weights = SingleTap(index, like)
    return taps, weights


@helper
@script(HELPERS, default_opset=op)
def Stack2(a, b):
    """[out] and [out] -> [out, 2]."""
    last = op.Constant(value_ints=[-1])
    return op.Concat(op.Unsqueeze(a, last), op.Unsqueeze(b, last), axis=-1)


@helper
@script(HELPERS, default_opset=op)
def LinearTaps(input_len, output_len, scale, align_corners, like):
    """aten compute_source_index_and_lambda: out == in copies (taps (dst, 1), (dst, 0)), else two taps (1 - l, l)."""
    ratio = AtenScale(input_len, output_len, scale, align_corners, like)
    src = AtenSourceIndex(ratio, output_len, align_corners, op.Constant(value_int=1), like)
    index0, lam = GuardIndex(src, input_len)
    index1 = op.Add(index0, op.Cast(op.Less(index0, op.Sub(input_len, 1)), to=INT64))
    copies = op.Equal(output_len, input_len)
    dst = Positions(output_len, op.Constant(value_int=0))
    index0 = op.Where(copies, dst, index0)
    index1 = op.Where(copies, dst, index1)
    lam = op.Where(copies, op.CastLike(0.0, lam), lam)
    return Stack2(index0, index1), Stack2(op.Sub(op.CastLike(1.0, lam), lam), lam)


@helper
@script(HELPERS, default_opset=op)
def CubicTaps(input_len, output_len, scale, align_corners, like):
    """upsample_bicubic2d_backward: out == in copies (tap (dst, 1), three of weight 0), else 4 taps at
    floor - 1 .. + 2, clamped to the border."""
    ratio = AtenScale(input_len, output_len, scale, align_corners, like)
    src = AtenSourceIndex(ratio, output_len, align_corners, op.Constant(value_int=0), like)
    index, t = GuardIndex(src, input_len)
    coeffs, unused = CubicCoefficients(t)
    last = op.Constant(value_ints=[-1])
    taps = op.Clip(op.Add(op.Unsqueeze(index, last), op.Constant(value_ints=[-1, 0, 1, 2])),
                   op.Constant(value_int=0), op.Sub(input_len, 1)[0])
    copies = op.Equal(output_len, input_len)
    dst = op.Unsqueeze(Positions(output_len, op.Constant(value_int=0)), last)
    first = op.CastLike(op.Constant(value_floats=[1.0, 0.0, 0.0, 0.0]), like)
    return op.Where(copies, op.Expand(dst, op.Shape(taps)), taps), op.Where(copies, op.Expand(first, op.Shape(coeffs)), coeffs)


@helper
@script(HELPERS, default_opset=op)
def AntialiasMatrix(input_len, output_len, scale, align_corners, cubic, like):
    """aten _compute_indices_min_size_weights_aa: the filter (linear, or Keys a = -0.5 when cubic) over a
    window of its support (stretched by the downscale factor) around each output centre, normalised."""
    ratio = AtenScale(input_len, output_len, scale, align_corners, like)
    downscale = op.GreaterOrEqual(ratio, op.CastLike(1.0, like))
    half_size = op.Where(op.Cast(cubic, to=BOOL), op.CastLike(2.0, like), op.CastLike(1.0, like))
    support = op.Where(downscale, op.Mul(half_size, ratio), half_size)
    invscale = op.Where(downscale, op.Div(op.CastLike(1.0, like), ratio), op.CastLike(1.0, like))
    last = op.Constant(value_ints=[-1])
    center = op.Unsqueeze(op.Mul(ratio, op.Add(Positions(output_len, like), 0.5)), last)  # [out, 1]
    # xmin, xsize: truncating casts as aten's static_cast<int64_t>; the window never exceeds max_size
    xmin = op.Max(op.Cast(op.Add(op.Sub(center, support), 0.5), to=INT64), op.Constant(value_int=0))
    xmax = op.Min(op.Cast(op.Add(op.Add(center, support), 0.5), to=INT64), input_len)
    max_size = op.Add(op.Mul(op.Cast(op.Ceil(support), to=INT64), 2), 1)
    xsize = op.Min(op.Max(op.Sub(xmax, xmin), op.Constant(value_int=0)), max_size)
    j = op.Range(op.CastLike(0, input_len[0]), input_len[0], op.CastLike(1, input_len[0]))  # [in]
    inside = op.And(op.GreaterOrEqual(j, xmin), op.Less(j, op.Add(xmin, xsize)))
    x = op.Abs(op.Mul(op.Add(op.Sub(op.CastLike(j, like), center), 0.5), invscale))
    tent = op.Where(op.Less(x, 1.0), op.Sub(1.0, x), op.CastLike(0.0, like))
    a = op.CastLike(-0.5, like)
    near = op.Add(op.Mul(op.Mul(op.Sub(op.Mul(op.Add(a, 2.0), x), op.Add(a, 3.0)), x), x), 1.0)
    far = op.Mul(op.Sub(op.Mul(op.Add(op.Mul(op.Sub(x, 5.0), x), 8.0), x), 4.0), a)
    keys = op.Where(op.Less(x, 1.0), near, op.Where(op.Less(x, 2.0), far, op.CastLike(0.0, like)))
    weight = op.Where(inside, op.Where(op.Cast(cubic, to=BOOL), keys, tent), op.CastLike(0.0, like))
    total = op.ReduceSum(weight, last, keepdims=1)
    return op.Where(op.Equal(total, 0.0), weight, op.Div(weight, total))


# --------------------------------------------------------------------------- contraction

@helper
@script(HELPERS, default_opset=op)
def BandRows(first, last, out_len):
    """rows [in, J] = first + 0 .. J - 1 clipped to the axis (J: the longest run, at least 1), and where each lies
    inside its run first..last."""
    run = op.Max(op.Add(op.Sub(last, first), 1), op.Constant(value_int=0))
    longest = op.Max(op.ReduceMax(run, keepdims=1), op.Constant(value_ints=[1]))
    steps = op.Range(op.Constant(value_int=0), longest[0], op.Constant(value_int=1))  # [J]
    column = op.Constant(value_ints=[1])
    rows = op.Min(op.Add(op.Unsqueeze(first, column), steps), op.Sub(out_len, 1))
    return rows, op.Less(steps, op.Unsqueeze(run, column))


@helper
@script(HELPERS, default_opset=op)
def BandOfMatrix(matrix):
    """The gather form of a dense matrix [out, in]: for each input, the run of outputs from its column's first to its
    last non-zero entry, padded to the longest run J. Returns rows [in, J] (int64, clipped to the matrix) and
    weights [in, J] (zero in the padding)."""
    nonzero = op.Cast(op.Not(op.Equal(matrix, op.CastLike(0.0, matrix))), to=FLOAT)
    first = op.ArgMax(nonzero, axis=0, keepdims=0)
    last = op.ArgMax(nonzero, axis=0, keepdims=0, select_last_index=1)
    some = op.Greater(op.ReduceSum(nonzero, op.Constant(value_ints=[0]), keepdims=0), op.Constant(value_float=0.0))
    last = op.Where(some, last, op.Sub(first, 1))  # an empty column: an empty run
    rows, inside = BandRows(first, last, op.Shape(matrix, start=0, end=1))
    weights = op.GatherElements(op.Transpose(matrix, perm=[1, 0]), rows, axis=1)
    return rows, op.Where(inside, weights, op.CastLike(0.0, matrix))


@helper
@script(HELPERS, default_opset=op)
def BandOfTaps(index, weight, input_len):
    """The gather form of taps (index [out, K] into [0, in), weight [out, K]), in O(out K + in J): for each input,
    the run of outputs first..last that read it, padded to the longest run J, and the summed weight of each (in tap
    order, as a column of the dense matrix). Taps ascend along K, and every tap function is monotone (an output's
    lowest and highest tap never decrease along the axis), so an input's first output is the number of outputs whose highest tap lies
    below it, and its last the number whose lowest tap lies at or below it, less one: two histograms."""
    out_len = op.Shape(index, start=0, end=1)
    ones = op.Expand(op.Constant(value_ints=[1]), out_len)
    bins = op.Expand(op.Constant(value_ints=[0]), op.Add(input_len, 1))
    lowest = op.Squeeze(op.Slice(index, op.Constant(value_ints=[0]), op.Constant(value_ints=[1]),
                                 op.Constant(value_ints=[1])), op.Constant(value_ints=[1]))
    highest = op.Squeeze(op.Slice(index, op.Constant(value_ints=[-1]), op.Constant(value_ints=[2147483647]),
                                  op.Constant(value_ints=[1])), op.Constant(value_ints=[1]))
    below = op.ScatterElements(bins, op.Add(highest, 1), ones, reduction="add")
    at_or_below = op.ScatterElements(bins, lowest, ones, reduction="add")
    head = op.Constant(value_ints=[0])
    first = op.Slice(op.CumSum(below, op.Constant(value_int=0)), head, input_len)
    last = op.Sub(op.Slice(op.CumSum(at_or_below, op.Constant(value_int=0)), head, input_len), 1)
    rows, inside = BandRows(first, last, out_len)
    columns = op.Unsqueeze(op.Range(op.Constant(value_int=0), input_len[0], op.Constant(value_int=1)),
                           op.Constant(value_ints=[1, 2]))  # [in, 1, 1]
    hits = op.Equal(op.Gather(index, rows, axis=0), columns)  # [in, J, K]
    summed = op.ReduceSum(op.Where(hits, op.Gather(weight, rows, axis=0), op.CastLike(0.0, weight)),
                          op.Constant(value_ints=[2]), keepdims=0)
    return rows, op.Where(inside, summed, op.CastLike(0.0, weight))


@helper
@script(HELPERS, default_opset=op)
def ContractBand(grad, rows, weights, axis):
    """grad with its axis `axis` (int64 [1], >= 0) contracted in gather form: input i of that axis is
    sum_j weights[i, j] * grad[.., rows[i, j], ..], gathering whole blocks of the axes after it
    (O(J x in x rest), where a dense product is O(out x in x rest)), then weighing and summing
    them as one [1, J] @ [J, block] MatMul per input (one pass; a Mul and a ReduceSum were two).
    The last axis is moved first (its blocks would be single elements) and back. An empty tensor
    skips the gather (onnxruntime's Gather refuses it)."""
    shape = op.Shape(grad)
    one = op.Constant(value_ints=[1])
    before = op.ReduceProd(op.Concat(one, op.Slice(shape, op.Constant(value_ints=[0]), axis), axis=0), keepdims=1)
    after = op.ReduceProd(op.Concat(one, op.Slice(shape, op.Add(axis, 1), op.Constant(value_ints=[2147483647])),
                                    axis=0), keepdims=1)
    out_len = op.Slice(shape, axis, op.Add(axis, 1))
    in_len = op.Shape(rows, start=0, end=1)
    result_shape = op.Concat(op.Slice(shape, op.Constant(value_ints=[0]), axis), in_len,
                             op.Slice(shape, op.Add(axis, 1), op.Constant(value_ints=[2147483647])), axis=0)
    if op.Equal(op.Size(grad), op.Constant(value_int=0)):
        result = op.Expand(op.CastLike(0.0, grad), result_shape)
    else:
        weights = op.CastLike(weights, grad)
        longest = op.Shape(rows, start=1, end=2)
        flat_rows = op.Reshape(rows, op.Constant(value_ints=[-1]))
        if op.Equal(after, one):
            lines = op.Transpose(op.Reshape(grad, op.Concat(before, out_len, axis=0), allowzero=1), perm=[1, 0])  # [out, before]
            picked = op.Reshape(op.Gather(lines, flat_rows, axis=0), op.Concat(in_len, longest, before, axis=0), allowzero=1)
            # per input one [1, J] @ [J, before] product: the weighing and the sum in one pass
            summed = op.MatMul(op.Unsqueeze(weights, op.Constant(value_ints=[1])), picked)  # [in, 1, before]
            flat = op.Transpose(op.Squeeze(summed, op.Constant(value_ints=[1])), perm=[1, 0])
        else:
            blocks = op.Reshape(grad, op.Concat(before, out_len, after, axis=0), allowzero=1)
            picked = op.Reshape(op.Gather(blocks, flat_rows, axis=1), op.Concat(before, in_len, longest, after, axis=0), allowzero=1)
            flat = op.Squeeze(op.MatMul(op.Unsqueeze(weights, op.Constant(value_ints=[1])), picked),
                              op.Constant(value_ints=[2]))
        result = op.Reshape(flat, result_shape, allowzero=1)
    return result


@helper
@script(HELPERS, default_opset=op)
def WholeFactor(out_len, input_len):
    """out // in (at least 1), and whether out is that whole multiple of a non-empty in."""
    factor = op.Max(op.Div(out_len, op.Max(input_len, op.Constant(value_ints=[1]))), op.Constant(value_ints=[1]))
    whole = op.And(op.Equal(op.Mul(factor, input_len), out_len), op.Greater(input_len, 0))
    return factor, whole


@helper
@script(HELPERS, default_opset=op)
def SumGroups(grad, axis, input_len, factor):
    """The nearest upsampling by a whole factor k contracted: input i sums its k outputs k i .. k i + k - 1, as a
    Reshape and a ReduceSum (one pass, no gather; the same sums in the same order as the gather form)."""
    shape = op.Shape(grad)
    grouped = op.Concat(op.Slice(shape, op.Constant(value_ints=[0]), axis), input_len, factor,
                        op.Slice(shape, op.Add(axis, 1), op.Constant(value_ints=[2147483647])), axis=0)
    return op.ReduceSum(op.Reshape(grad, grouped, allowzero=1), op.Add(axis, 1), keepdims=0)


@helper
@script(HELPERS, default_opset=op)
def ContractAxis(grad, matrix, axis):
    """grad's axis `axis` contracted with a dense matrix [out, in]: SumGroups when it is a nearest upsampling by a
    whole factor (row o one 1 at o // k), else ContractBand of BandOfMatrix."""
    out_len = op.Shape(matrix, start=0, end=1)
    input_len = op.Shape(matrix, start=1, end=2)
    factor, whole = WholeFactor(out_len, input_len)
    groups = op.Equal(op.Unsqueeze(op.Div(op.Range(op.Constant(value_int=0), out_len[0], op.Constant(value_int=1)),
                                          factor), op.Constant(value_ints=[1])),
                      op.Range(op.Constant(value_int=0), input_len[0], op.Constant(value_int=1)))  # [out, in]
    same = op.Equal(op.CastLike(groups, matrix), matrix)
    if op.ReduceMin(op.Cast(op.And(whole, op.ReduceMin(op.Cast(same, to=INT64), keepdims=1) == 1), to=INT64),
                    keepdims=0) == 1:
        result = SumGroups(grad, axis, input_len, factor)
    else:
        rows, weights = BandOfMatrix(matrix)
        result = ContractBand(grad, rows, weights, axis)
    return result


@helper
@script(HELPERS, default_opset=op)
def WholeGroups(index, weight, input_len):
    """(k, regular): whether taps are a nearest upsampling by the whole factor k = out // in (one tap of weight 1,
    output o reading input o // k)."""
    out_len = op.Shape(index, start=0, end=1)
    factor, whole = WholeFactor(out_len, input_len)
    single = op.Equal(op.Shape(index, start=1, end=2), op.Constant(value_ints=[1]))
    if op.ReduceMin(op.Cast(op.And(whole, single), to=INT64), keepdims=0) == 1:
        expected = op.Div(op.Range(op.Constant(value_int=0), out_len[0], op.Constant(value_int=1)), factor)
        # (column 0 of the one column: a branch not taken must still pass shape inference with any K)
        first = op.Constant(value_int=0)
        copies = op.And(op.Equal(op.Gather(index, first, axis=1), expected),
                        op.Equal(op.Gather(weight, first, axis=1), op.CastLike(1.0, weight)))
        regular = op.ReduceMin(op.Cast(copies, to=INT64), keepdims=0) == 1
    else:
        regular = op.Constant(value=onnx.helper.make_tensor("false", BOOL, [], [False]))
    return factor, regular


@helper
@script(HELPERS, default_opset=op)
def ContractTaps(grad, index, weight, input_len, axis):
    """grad's axis `axis` contracted with taps: SumGroups when they are a nearest upsampling by a whole factor
    (WholeGroups), else ContractBand of BandOfTaps. An input length of 0 (symbolic dims attach() could not check)
    fails at run time, as the kernel refuses it."""
    input_len = op.Reshape(input_len, op.Where(op.Greater(input_len, 0), op.Constant(value_ints=[1]),
                                               op.Constant(value_ints=[-2])))
    factor, regular = WholeGroups(index, weight, input_len)
    if regular:
        result = SumGroups(grad, axis, input_len, factor)
    else:
        rows, weights = BandOfTaps(index, weight, input_len)
        result = ContractBand(grad, rows, weights, axis)
    return result


@helper
@script(HELPERS, default_opset=op)
def SumAllGroups(grad, input_lens, factors):
    """grad [N, C, *out] whose every spatial axis is a nearest upsampling by a whole factor, contracted in one pass:
    a Reshape to [N, C, in_0, k_0, in_1, k_1, ...] and one ReduceSum over the k axes (an axis at a time reads
    grad once per axis)."""
    column = op.Constant(value_ints=[1])
    pairs = op.Reshape(op.Concat(op.Unsqueeze(input_lens, column), op.Unsqueeze(factors, column), axis=1),
                       op.Constant(value_ints=[-1]))
    grouped = op.Concat(op.Shape(grad, start=0, end=2), pairs, axis=0)
    axes = op.Add(op.Mul(op.Range(op.Constant(value_int=0), op.Size(input_lens), op.Constant(value_int=1)), 2), 3)
    return op.ReduceSum(op.Reshape(grad, grouped, allowzero=1), axes, keepdims=0)


@helper
@script(HELPERS, default_opset=op)
def AxisLength(grad, axis):
    """grad's length on axis `axis` (int64 [1])."""
    return op.Slice(op.Shape(grad), axis, op.Add(axis, 1))


@helper
@script(HELPERS, default_opset=op)
def AxisSize(sizes, axis):
    """sizes[axis:axis + 1] (both int64 [1])."""
    return op.Slice(sizes, axis, op.Add(axis, 1))


@helper
@script(HELPERS, default_opset=op)
def AtenNearestTaps(grad, sizes, axis, scale, exact):
    """The taps of spatial axis `axis` (int64 [1]) of a torch-style nearest op: nearest_exact_idx when `exact`,
    nearest_idx otherwise; lengths from input_size `sizes` and grad."""
    like = op.Cast(op.Constant(value_float=0.0), to=DOUBLE)
    if op.Cast(exact, to=BOOL):
        index, weight = NearestExactTaps(AxisSize(sizes, axis), AxisLength(grad, axis), scale, like)
    else:
        index, weight = NearestTaps(AxisSize(sizes, axis), AxisLength(grad, axis), scale, like)
    return index, weight


@helper
@script(HELPERS, default_opset=op)
def ContractNearest2(grad, sizes, scale_h, scale_w, exact):
    """Axes 2 and 3 of grad contracted with torch-style nearest taps (AtenNearestTaps): SumAllGroups when both are
    whole-factor groups, else one axis at a time."""
    h = op.Constant(value_ints=[2])
    w = op.Constant(value_ints=[3])
    h_index, h_weight = AtenNearestTaps(grad, sizes, h, scale_h, exact)
    w_index, w_weight = AtenNearestTaps(grad, sizes, w, scale_w, exact)
    h_factor, h_regular = WholeGroups(h_index, h_weight, AxisSize(sizes, h))
    w_factor, w_regular = WholeGroups(w_index, w_weight, AxisSize(sizes, w))
    if op.And(h_regular, w_regular):
        result = SumAllGroups(grad, op.Slice(sizes, op.Constant(value_ints=[2]), op.Constant(value_ints=[4])),
                              op.Concat(h_factor, w_factor, axis=0))
    else:
        result = ContractTaps(ContractTaps(grad, h_index, h_weight, AxisSize(sizes, h), h),
                              w_index, w_weight, AxisSize(sizes, w), w)
    return result


@helper
@script(HELPERS, default_opset=op)
def ContractNearest3(grad, sizes, scales, exact):
    """Axes 2, 3 and 4 of grad contracted with torch-style nearest taps (AtenNearestTaps; scales [3]): SumAllGroups
    when all are whole-factor groups, else one axis at a time."""
    d = op.Constant(value_ints=[2])
    h = op.Constant(value_ints=[3])
    w = op.Constant(value_ints=[4])
    d_index, d_weight = AtenNearestTaps(grad, sizes, d, op.Gather(scales, 0), exact)
    h_index, h_weight = AtenNearestTaps(grad, sizes, h, op.Gather(scales, 1), exact)
    w_index, w_weight = AtenNearestTaps(grad, sizes, w, op.Gather(scales, 2), exact)
    d_factor, d_regular = WholeGroups(d_index, d_weight, AxisSize(sizes, d))
    h_factor, h_regular = WholeGroups(h_index, h_weight, AxisSize(sizes, h))
    w_factor, w_regular = WholeGroups(w_index, w_weight, AxisSize(sizes, w))
    if op.And(op.And(d_regular, h_regular), w_regular):
        result = SumAllGroups(grad, op.Slice(sizes, op.Constant(value_ints=[2]), op.Constant(value_ints=[5])),
                              op.Concat(d_factor, h_factor, w_factor, axis=0))
    else:
        by_d = ContractTaps(grad, d_index, d_weight, AxisSize(sizes, d), d)
        by_h = ContractTaps(by_d, h_index, h_weight, AxisSize(sizes, h), h)
        result = ContractTaps(by_h, w_index, w_weight, AxisSize(sizes, w), w)
    return result


# --------------------------------------------------------------------------- TensorFlow / CANN Resize*V2

@helper
@script(HELPERS, default_opset=op)
def TFScale(input_len, output_len, scale, align_corners):
    """_taps.tf_scale: the float32 index scale of the Resize*V2Grad kernels."""
    size_in = op.Cast(input_len, to=FLOAT)
    size_out = op.Cast(output_len, to=FLOAT)
    corners = op.Where(op.Greater(output_len, 1), op.Div(op.Sub(size_in, 1.0), op.Sub(size_out, 1.0)),
                       op.Constant(value_float=0.0))
    plain = op.Where(op.Greater(scale, 0.0), op.Div(op.Constant(value_float=1.0), scale), op.Div(size_in, size_out))
    return op.Where(op.Cast(align_corners, to=BOOL), corners, plain)


@helper
@script(HELPERS, default_opset=op)
def TFNearestTaps(input_len, output_len, scale, align_corners, half_pixel_centers, like):
    """_taps.tf_nearest: roundf(i s) with align_corners, floorf((i + 0.5) s) with half_pixel_centers, else
    floorf(i s); clamped to [0, in - 1]; float32 arithmetic."""
    s = TFScale(input_len, output_len, scale, align_corners)
    i = Positions(output_len, op.Constant(value_float=0.0))
    product = op.Mul(i, s)
    rounded = op.Add(op.Floor(product), op.Cast(op.GreaterOrEqual(op.Sub(product, op.Floor(product)), 0.5), to=FLOAT))
    half = op.Floor(op.Mul(op.Add(i, 0.5), s))
    legacy = op.Floor(op.Mul(i, s))
    index = op.Where(op.Cast(align_corners, to=BOOL), rounded,
                     op.Where(op.Cast(half_pixel_centers, to=BOOL), half, legacy))
    index = op.Clip(op.Cast(index, to=INT64), op.Constant(value_int=0), op.Sub(input_len, 1)[0])
    taps, weights = SingleTap(index, like)
    return taps, weights


@helper
@script(HELPERS, default_opset=op)
def TFLegacyLinearTaps(input_len, output_len, scale, like):
    """_taps.tf_legacy_linear: float32 src = i s, top floor, bottom min(ceil, in - 1), lerp src - floor(src)."""
    ratio = op.Where(op.Greater(scale, 0.0),
                     op.Cast(op.Div(op.Cast(op.Constant(value_float=1.0), to=DOUBLE), op.Cast(scale, to=DOUBLE)), to=FLOAT),
                     op.Div(op.Cast(input_len, to=FLOAT), op.Cast(output_len, to=FLOAT)))
    src = op.Mul(Positions(output_len, op.Constant(value_float=0.0)), ratio)
    low = op.Floor(src)
    top = op.Min(op.Cast(low, to=INT64), op.Sub(input_len, 1))
    bottom = op.Min(op.Cast(op.Ceil(src), to=INT64), op.Sub(input_len, 1))
    lerp = op.CastLike(op.Sub(src, low), like)
    return Stack2(top, bottom), Stack2(op.Sub(op.CastLike(1.0, lerp), lerp), lerp)


# --------------------------------------------------------------------------- one axis of the backward, per tap function
# Each contracts axis `axis` (int64 [1]) of grad (double) with the matrix of its taps, built from input_len
# (int64 [1]), grad's length on that axis, the forward scale (float32 scalar) and the op's flags. The op
# functions call the helper of their tap function once per spatial axis.

@helper
@script(HELPERS, default_opset=op)
def NearestAxis(grad, axis, input_len, scale):
    index, weight = NearestTaps(input_len, AxisLength(grad, axis), scale, op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    return ContractTaps(grad, index, weight, input_len, axis)


@helper
@script(HELPERS, default_opset=op)
def NearestExactAxis(grad, axis, input_len, scale):
    index, weight = NearestExactTaps(input_len, AxisLength(grad, axis), scale,
                                     op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    return ContractTaps(grad, index, weight, input_len, axis)


@helper
@script(HELPERS, default_opset=op)
def LinearAxis(grad, axis, input_len, scale, align_corners, is_double):
    output_len = AxisLength(grad, axis)
    index64, weight64 = LinearTaps(input_len, output_len, scale, align_corners,
                                   op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    index32, weight32 = LinearTaps(input_len, output_len, scale, align_corners, op.Constant(value_float=0.0))
    index, weight = OpmathTaps(is_double, index64, weight64, index32, weight32)
    return ContractTaps(grad, index, weight, input_len, axis)


@helper
@script(HELPERS, default_opset=op)
def CubicAxis(grad, axis, input_len, scale, align_corners, is_double):
    output_len = AxisLength(grad, axis)
    index64, weight64 = CubicTaps(input_len, output_len, scale, align_corners,
                                  op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    index32, weight32 = CubicTaps(input_len, output_len, scale, align_corners, op.Constant(value_float=0.0))
    index, weight = OpmathTaps(is_double, index64, weight64, index32, weight32)
    return ContractTaps(grad, index, weight, input_len, axis)


@helper
@script(HELPERS, default_opset=op)
def AntialiasAxis(grad, axis, input_len, scale, align_corners, cubic, is_double):
    output_len = AxisLength(grad, axis)
    matrix = OpmathMatrix(is_double,
                          AntialiasMatrix(input_len, output_len, scale, align_corners, cubic,
                                          op.Cast(op.Constant(value_float=0.0), to=DOUBLE)),
                          AntialiasMatrix(input_len, output_len, scale, align_corners, cubic,
                                          op.Constant(value_float=0.0)))
    return ContractAxis(grad, matrix, axis)


@helper
@script(HELPERS, default_opset=op)
def TFNearestAxis(grad, axis, input_len, scale, align_corners, half_pixel_centers):
    index, weight = TFNearestTaps(input_len, AxisLength(grad, axis), scale, align_corners, half_pixel_centers,
                                  op.Cast(op.Constant(value_float=0.0), to=DOUBLE))
    return ContractTaps(grad, index, weight, input_len, axis)


@helper
@script(HELPERS, default_opset=op)
def TFLinearAxis(grad, axis, input_len, scale, align_corners, half_pixel_centers, is_double):
    """ResizeBilinearV2Grad: aten's linear taps for align_corners and half-pixel, TensorFlow's legacy otherwise."""
    output_len = AxisLength(grad, axis)
    zero64 = op.Cast(op.Constant(value_float=0.0), to=DOUBLE)
    zero32 = op.Constant(value_float=0.0)
    if op.Or(op.Cast(align_corners, to=BOOL), op.Cast(half_pixel_centers, to=BOOL)):
        index64, weight64 = LinearTaps(input_len, output_len, scale, align_corners, zero64)
        index32, weight32 = LinearTaps(input_len, output_len, scale, align_corners, zero32)
    else:
        index64, weight64 = TFLegacyLinearTaps(input_len, output_len, scale, zero64)
        index32, weight32 = TFLegacyLinearTaps(input_len, output_len, scale, zero32)
    index, weight = OpmathTaps(is_double, index64, weight64, index32, weight32)
    return ContractTaps(grad, index, weight, input_len, axis)
