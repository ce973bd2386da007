"""onnxscript building blocks shared by the op functions, and the step that inlines them.

The op functions compute in double whatever the input dtype (Cast in, CastLike
out), so half types accumulate in more than float32 and round once at the end.
Helpers here are @script functions in a private domain; `finish` inlines them
into each op's FunctionProto so every exported function is self-contained and
built from standard ops only (ai.onnx and ai.onnx.ml's LabelEncoder for the
string attributes: string Equal exists only from opset 19).
"""
from __future__ import annotations

import onnx
import onnx.inliner
from onnxscript import opset18 as op
from onnxscript import script
from onnxscript.onnx_opset import opset_ai_onnx_ml3 as ml
from onnxscript.values import Opset

from ._common import DOMAIN, VERSION, subgraphs, walk

OPSET = Opset(DOMAIN, VERSION)
HELPERS = Opset(DOMAIN + ".helpers", 1)  # inlined away by `finish`; never seen in a model
DOUBLE = onnx.TensorProto.DOUBLE
INT64 = onnx.TensorProto.INT64
ML_DOMAIN = "ai.onnx.ml"


# --------------------------------------------------------------------------- grid coordinates

@script(HELPERS, default_opset=op)
def Unnormalize(coord, size, align_corners):
    """grid_sampler_unnormalize_set_grad: [-1, 1] to pixels and d(pixel)/d(grid); size, align_corners doubles."""
    aligned = op.Mul(op.Div(op.Add(coord, 1.0), 2.0), op.Sub(size, 1.0))
    centred = op.Div(op.Sub(op.Mul(op.Add(coord, 1.0), size), 1.0), 2.0)
    use_aligned = op.Cast(align_corners, to=onnx.TensorProto.BOOL)
    pixel = op.Where(use_aligned, aligned, centred)
    mult = op.Where(use_aligned, op.Div(op.Sub(size, 1.0), 2.0), op.Div(size, 2.0))
    return pixel, mult


@script(HELPERS, default_opset=op)
def ClipCoordinates(coord, size):
    """clip_coordinates_set_grad; NaN passes through (Where, not Min/Max)."""
    limit = op.Sub(size, 1.0)
    low = op.LessOrEqual(coord, 0.0)
    high = op.GreaterOrEqual(coord, limit)
    zero = op.CastLike(0.0, coord)
    clipped = op.Where(low, zero, op.Where(high, limit, coord))
    grad = op.Where(op.Or(low, high), zero, op.CastLike(1.0, coord))
    return clipped, grad


@script(HELPERS, default_opset=op)
def ReflectCoordinates(coord, size, align_corners):
    """reflect_coordinates_set_grad with the flip parity from fmod(x, 2 span) (exact for any x)."""
    use_aligned = op.Cast(align_corners, to=onnx.TensorProto.BOOL)
    zero = op.CastLike(0.0, coord)
    # beyond +-2^23 pixels float and double reflect differently: NaN, a point that reads nothing
    coord = op.Where(op.Greater(op.Abs(coord), op.CastLike(8388608.0, coord)), op.Div(zero, zero), coord)
    low = op.Where(use_aligned, op.CastLike(0.0, coord), op.CastLike(-0.5, coord))
    span = op.Where(use_aligned, op.Sub(size, 1.0), size)
    shifted = op.Sub(coord, low)
    one = op.CastLike(1.0, coord)
    sign = op.Where(op.Less(shifted, 0.0), op.Neg(one), one)
    rest = op.Mod(op.Abs(shifted), op.Mul(span, 2.0), fmod=1)
    flipped = op.GreaterOrEqual(rest, span)
    reflected = op.Add(op.Where(flipped, op.Sub(op.Mul(span, 2.0), rest), rest), low)
    grad = op.Where(flipped, op.Neg(sign), sign)
    # a single pixel with align_corners has no room to reflect: aten returns 0 with gradient 0
    degenerate = op.Equal(span, 0.0)
    return op.Where(degenerate, zero, reflected), op.Where(degenerate, zero, grad)


@script(HELPERS, default_opset=op)
def SafeDowngrade(coord):
    """safe_downgrade_to_int_range: NaN, inf and values outside int32 become -100 (out of bounds)."""
    bad = op.Or(op.Or(op.IsNaN(coord), op.IsInf(coord)),
                op.Or(op.GreaterOrEqual(coord, op.CastLike(2147483647.0, coord)),  # INT32_MAX
                      op.Less(coord, op.CastLike(-2147483648.0, coord))))  # INT32_MIN
    return op.Where(bad, op.CastLike(-100.0, coord), coord)


@script(HELPERS, default_opset=op)
def ApplyPadding(coord, size, padding, align_corners):
    """compute_coordinates with its gradient; padding is 0 zeros, 1 border, 2 reflection (int64 scalar)."""
    clipped, clip_grad = ClipCoordinates(coord, size)
    reflected, reflect_grad = ReflectCoordinates(coord, size, align_corners)
    reflected_clipped, reflected_clip_grad = ClipCoordinates(reflected, size)
    is_border = op.Equal(padding, 1)
    is_reflection = op.Equal(padding, 2)
    one = op.CastLike(1.0, coord)
    padded = op.Where(is_border, clipped, op.Where(is_reflection, reflected_clipped, coord))
    grad = op.Where(is_border, clip_grad, op.Where(is_reflection, op.Mul(reflect_grad, reflected_clip_grad), one))
    return SafeDowngrade(padded), grad


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


@script(HELPERS, default_opset=op)
def AxisTaps(coord, size, align_corners, padding, interpolation):
    """The taps of one axis for every grid point: pixel positions [.., K], weights, d weight/d pixel, d pixel/d grid.

    interpolation: 0 bilinear (K=2), 1 nearest (K=1), 2 bicubic (K=4). Bilinear and
    nearest pad the coordinate, bicubic pads every tap (as aten).
    """
    pixel, mult = Unnormalize(coord, size, align_corners)
    last = op.Constant(value_ints=[-1])
    if op.Equal(interpolation, 2):
        finite = op.Not(op.Or(op.IsNaN(pixel), op.IsInf(pixel)))  # a non-finite point reads nothing
        zero = op.CastLike(0.0, pixel)
        safe = op.Where(finite, pixel, zero)
        base = op.Floor(safe)
        coeffs, coeff_grads = CubicCoefficients(op.Sub(safe, base))
        offsets = op.CastLike(op.Constant(value_floats=[-1.0, 0.0, 1.0, 2.0]), pixel)
        taps, unused = ApplyPadding(op.Add(op.Unsqueeze(base, last), offsets), size, padding, align_corners)
        finite_taps = op.Unsqueeze(finite, last)
        weights = op.Where(finite_taps, coeffs, zero)
        slopes = op.Where(finite_taps, op.Neg(coeff_grads), zero)
        scale = mult
    else:
        padded, pad_grad = ApplyPadding(pixel, size, padding, align_corners)
        scale = op.Mul(mult, pad_grad)
        if op.Equal(interpolation, 1):
            taps = op.Unsqueeze(op.Round(padded), last)
            weights = op.Unsqueeze(op.CastLike(op.Expand(1.0, op.Shape(padded)), padded), last)
            slopes = op.Sub(weights, weights)
        else:
            low = op.Floor(padded)
            high = op.Add(low, 1.0)
            taps = op.Concat(op.Unsqueeze(low, last), op.Unsqueeze(high, last), axis=-1)
            weights = op.Concat(op.Unsqueeze(op.Sub(high, padded), last), op.Unsqueeze(op.Sub(padded, low), last), axis=-1)
            # d weight / d pixel: -1 for the low tap, +1 for the high one, broadcast over the points
            slopes = op.Add(op.Sub(weights, weights), op.CastLike(op.Constant(value_floats=[-1.0, 1.0]), weights))
    return taps, weights, slopes, scale


# --------------------------------------------------------------------------- index matrices

@script(HELPERS, default_opset=op)
def OneHot(index, length):
    """[len(index), length] double matrix with a 1 at (i, index[i]); onnxruntime's OneHot has no double kernel."""
    positions = op.Range(op.CastLike(0, length[0]), length[0], op.CastLike(1, length[0]))
    return op.Cast(op.Equal(op.Unsqueeze(index, op.Constant(value_ints=[-1])), positions), to=DOUBLE)


@script(HELPERS, default_opset=op)
def NearestExactMatrix(input_len, output_len, scale):
    """A[out, in] (double) = 1 where output position `out` reads `in`: aten nearest-exact source index.

    input_len, output_len: int64 [1]; scale: float32 scalar (0 = use the size ratio).
    """
    ratio = op.Div(op.Cast(input_len, to=onnx.TensorProto.FLOAT), op.Cast(output_len, to=onnx.TensorProto.FLOAT))
    inverse = op.Cast(op.Div(op.CastLike(1.0, op.Cast(scale, to=DOUBLE)), op.Cast(scale, to=DOUBLE)),
                      to=onnx.TensorProto.FLOAT)
    index_scale = op.Where(op.Greater(scale, 0.0), inverse, ratio)
    positions = op.Cast(op.Range(op.CastLike(0, output_len[0]), output_len[0], op.CastLike(1, output_len[0])), to=DOUBLE)
    # floorf((dst + 0.5) * scale): the product in double, rounded to float, then floored
    product = op.Cast(op.Mul(op.Add(positions, 0.5), op.Cast(index_scale, to=DOUBLE)), to=onnx.TensorProto.FLOAT)
    source = op.Min(op.Cast(op.Floor(product), to=INT64), op.Sub(input_len, 1))
    return OneHot(source, input_len)


@script(HELPERS, default_opset=op)
def BilinearMatrix(input_len, output_len, align_corners, half_pixel_centers, scale):
    """M[out, in] (double): bilinear weights of one axis. input_len, output_len: int64 [1]; flags int64; scale float.

    align_corners / half_pixel_centers follow aten (upsample_bilinear2d_backward, with its copy when
    in == out); both 0 is TensorFlow's legacy mode (float32 src = dst * in / out).
    """
    size_in = op.Cast(input_len, to=DOUBLE)
    size_out = op.Cast(output_len, to=DOUBLE)
    last = op.Sub(size_in, 1.0)
    dst = op.Cast(op.Range(op.CastLike(0, output_len[0]), output_len[0], op.CastLike(1, output_len[0])), to=DOUBLE)
    scale64 = op.Cast(scale, to=DOUBLE)
    inverse64 = op.Div(op.CastLike(1.0, scale64), scale64)
    scaled = op.Greater(scale, 0.0)

    # TensorFlow legacy: float32 coordinates, top/bottom = floor/ceil clamped to the last pixel
    ratio32 = op.Where(scaled, op.Cast(inverse64, to=onnx.TensorProto.FLOAT),
                       op.Div(op.Cast(input_len, to=onnx.TensorProto.FLOAT), op.Cast(output_len, to=onnx.TensorProto.FLOAT)))
    src_legacy = op.Cast(op.Mul(op.Cast(dst, to=onnx.TensorProto.FLOAT), ratio32), to=DOUBLE)
    top_legacy = op.Min(op.Floor(src_legacy), last)
    bottom_legacy = op.Min(op.Ceil(src_legacy), last)
    lambda_legacy = op.Sub(src_legacy, op.Floor(src_legacy))

    # aten: area_pixel_compute_source_index and guard_index_and_lambda
    ratio_corners = op.Where(op.Greater(size_out, 1.0), op.Div(last, op.Sub(size_out, 1.0)), op.CastLike(0.0, last))
    ratio_half = op.Where(scaled, inverse64, op.Div(size_in, size_out))
    src_half = op.Sub(op.Mul(ratio_half, op.Add(dst, 0.5)), 0.5)
    src_half = op.Where(op.Less(src_half, 0.0), op.CastLike(0.0, src_half), src_half)
    corners = op.Cast(align_corners, to=onnx.TensorProto.BOOL)
    src = op.Where(corners, op.Mul(ratio_corners, dst), src_half)
    top_torch = op.Min(op.Cast(op.Floor(op.Cast(src, to=onnx.TensorProto.FLOAT)), to=DOUBLE), last)
    lambda_torch = op.Clip(op.Sub(src, top_torch), op.CastLike(0.0, src), op.CastLike(1.0, src))
    bottom_torch = op.Add(top_torch, op.Cast(op.Less(top_torch, last), to=DOUBLE))
    same = op.Equal(size_in, size_out)  # aten copies when the sizes agree
    top_torch = op.Where(same, dst, top_torch)
    bottom_torch = op.Where(same, dst, bottom_torch)
    lambda_torch = op.Where(same, op.CastLike(0.0, dst), lambda_torch)

    legacy = op.Not(op.Or(corners, op.Cast(half_pixel_centers, to=onnx.TensorProto.BOOL)))
    top = op.Cast(op.Where(legacy, top_legacy, top_torch), to=INT64)
    bottom = op.Cast(op.Where(legacy, bottom_legacy, bottom_torch), to=INT64)
    weight_bottom = op.Unsqueeze(op.Where(legacy, lambda_legacy, lambda_torch), op.Constant(value_ints=[-1]))
    return op.Add(op.Mul(OneHot(top, input_len), op.Sub(1.0, weight_bottom)),
                  op.Mul(OneHot(bottom, input_len), weight_bottom))


@script(HELPERS, default_opset=op)
def SeparableBackward(grad, rows, cols):
    """rows^T @ grad @ cols over the last two axes of [N, C, H_out, W_out]; rows [H_out, H_in], cols [W_out, W_in].

    An empty N or C takes its own branch: onnxruntime's MatMul (and the FusedMatMul its
    optimizer makes) cannot broadcast over a batch axis of size 0.
    """
    if op.Equal(op.Size(grad), op.Constant(value_int=0)):
        shape = op.Concat(op.Shape(grad, start=0, end=2), op.Shape(rows, start=1), op.Shape(cols, start=1), axis=0)
        result = op.Expand(op.CastLike(0.0, grad), shape)
    else:
        result = op.MatMul(op.Transpose(rows, perm=[1, 0]), op.MatMul(grad, cols))
    return result


def _helper_functions():
    return [f.to_function_proto() for f in (
        Unnormalize, ClipCoordinates, ReflectCoordinates, SafeDowngrade, ApplyPadding, CubicCoefficients,
        AxisTaps, OneHot, NearestExactMatrix, BilinearMatrix, SeparableBackward)]


def finish(function, op_type: str, outputs) -> onnx.FunctionProto:
    """The op's FunctionProto, named op_type with the schema's output names, every helper call
    inlined and the opset imports it needs."""
    proto = function.to_function_proto()
    proto.name = op_type
    renames = dict(zip(proto.output, outputs))
    # an internal value already named like a schema output moves aside first (functions are SSA)
    internal = {name for node in walk(proto.node) for name in node.output} - set(proto.output)
    renames.update({name: f"{name}_inner" for name in internal & set(outputs)})
    for node in walk(proto.node):
        node.output[:] = [renames.get(name, name) for name in node.output]
        node.input[:] = [renames.get(name, name) for name in node.input]
    for graph in _all_subgraphs(proto.node):  # a branch's output list names values too
        for value in list(graph.output) + list(graph.input):
            value.name = renames.get(value.name, value.name)
    proto.output[:] = list(outputs)
    helpers = _helper_functions()
    node = onnx.helper.make_node(proto.name, list(proto.input), list(proto.output), domain=proto.domain)
    graph = onnx.helper.make_graph([node], "holder", [], [])
    model = onnx.helper.make_model(graph, functions=[proto, *helpers], opset_imports=[
        onnx.helper.make_opsetid("", 18), onnx.helper.make_opsetid(ML_DOMAIN, 3),
        onnx.helper.make_opsetid(DOMAIN, VERSION), onnx.helper.make_opsetid(HELPERS.domain, 1)])
    model = onnx.inliner.inline_selected_functions(model, [(h.domain, h.name) for h in helpers])
    inlined = next(f for f in model.functions if f.domain == proto.domain and f.name == proto.name)
    used = {n.domain for n in walk(inlined.node)}
    if HELPERS.domain in used:
        raise RuntimeError(f"{proto.name}: helper calls were not inlined")
    del inlined.opset_import[:]
    inlined.opset_import.append(onnx.helper.make_opsetid("", 18))
    if ML_DOMAIN in used:
        inlined.opset_import.append(onnx.helper.make_opsetid(ML_DOMAIN, 3))
    inlined.doc_string = proto.doc_string
    return inlined


def _all_subgraphs(nodes):
    return (graph for node in walk(nodes) for graph in subgraphs(node))
