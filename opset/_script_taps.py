"""onnxscript helpers of ResizeGrad's function (resize_grad.py), the one op still on an onnxscript body that reads
its attributes at run time: positions, one-hot rows, and the contraction of an axis with a dense matrix in its gather
form (each input gathers the run of outputs that read it).
"""
from __future__ import annotations

import onnx
from onnxscript import opset18 as op
from onnxscript import script

from ._script import HELPERS, INT64, helper

FLOAT = onnx.TensorProto.FLOAT


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

