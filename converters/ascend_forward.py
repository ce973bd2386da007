"""Standard forward resampling nodes ATC's ONNX parser cannot read, as GE forward ops.

    replace_forward(model, family, fallback) -> (model, reports)   to_ascend, before it lowers the opset
    raise_opset(model, version) -> model                           from_ascend, after it restores the nodes

ATC's ONNX parser hands a standard node to the plugin registered under "ai.onnx::<opset>::<op type>", looked up
exactly (hicann/ge@ffdcbc9 graph_metadef/register/register.cpp:1214, GetOmTypeByOriOpType), the opset being the
model's. What CANN's own plugins register and accept (read from their parse functions):

- GridSample: ai.onnx::{11,16,17,18}::GridSample -> GridSampler2D (hicann/ops-cv@6ae8765
  image/grid_sample/framework/grid_sample_onnx_plugin.cpp:110-115), `mode` copied verbatim into interpolation_mode
  (l.33-35, 51). GridSampler2D is 4-D (image/grid_sampler2_d/op_graph/grid_sampler2_d_proto.h:29-32). GridSampler3D
  is registered only for the op type "GridSample3D", which no ONNX exporter writes (l.117-122). No key above
  opset 18, and onnx's version converter has no GridSample adapter from opset 20. So: a 5-D GridSample (any
  opset) becomes GridSampler3D; a 4-D GridSample above opset 18 becomes GridSampler2D with opset 20's mode names
  ("linear", "cubic") translated to the GE op's ("bilinear", "bicubic").
- Resize: ai.onnx::{10..18}::Resize (hicann/ops-cv@2275f5b common/src/framework/resize_onnx_plugin.cpp, the two
  REGISTER_CUSTOM_OP at its end); "linear" / "cubic" become GE Resize (l.115-148), whose prototype takes a 4-D x
  only (ops-cv@6ae8765 common/inc/op_graph/op_cv_proto_extend.h:129 and 164). So a 5-D linear Resize (trilinear) becomes
  ResizeUpsampleTrilinear, the op aclnnUpsampleTrilinear3d runs on A2, A3, 950 and 310P.

Each GE node's doc_string holds the same record as the gradient ops' (ascend.py), plus the model's default opset:
from_ascend restores the node and raise_opset the opset it was written for.
"""
from __future__ import annotations

import copy
import json

import numpy as np
import onnx
import onnx.inliner
from onnx import helper, numpy_helper

from resample_grad.constants import GE_DOMAIN, GE_VERSION
from resample_grad.opset import ResampleGradError
from resample_grad.opset._portable import FORWARD_DOMAIN
from resample_grad.opset._portable import _forward_body as forward_body

from . import ascend_prototypes as protos
from .ascend import OP, RECORD_KEY, NodeReport, _Context, _ge_node, _node_record, _shapes_and_types
from .ascend_cpp import DTYPE_NAMES

ATC_MAX_OPSET = 18
OPSET_KEY = "opset"  # the record's key for the default opset the node was written for
# GridSample's `mode` -> GE interpolation_mode: opset 16's names are GE's; opset 20 renamed two of them
GRID_MODES = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic", "linear": "bilinear",
              "cubic": "bicubic"}
# Resize coordinate modes torch's trilinear kernel computes (ResizeUpsampleTrilinear follows torch): align_corners
# -> align_corners=true; pytorch_half_pixel -> false (half_pixel too, where no output axis has length 1)
TRILINEAR_MODES = ("align_corners", "pytorch_half_pixel", "half_pixel")
# ResizeUpsampleTrilinear: its tiling refuses an inverse scale above 50 (ops-cv@6ae8765
# image/resize_upsample_trilinear/op_host/resize_upsample_trilinear_tiling.cpp:186-191); it resolves a scale of 0 to
# in / out, and align_corners to (in - 1) / (out - 1) whatever the scale (l.119-155)
MAX_STEP = 50.0


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _grid_sample(node, ctx: _Context, version: int, family: str):
    """(GE op, attributes, inputs), None where CANN's plugin reads the node, or the reason it cannot be mapped."""
    x = ctx.shape(node.input[0])
    if x is None:
        return None if version <= ATC_MAX_OPSET else f"X has no known rank (GridSampler2D or 3D by rank; opset " \
                                                     f"{version} is above what ATC reads)"
    if len(x) == 4 and version <= ATC_MAX_OPSET:
        return None  # CANN's plugin maps it to GridSampler2D
    a = _attrs(node)
    mode = _text(a.get("mode", "linear" if version >= 20 else "bilinear"))
    attrs = dict(interpolation_mode=GRID_MODES.get(mode, mode), padding_mode=_text(a.get("padding_mode", "zeros")))
    if len(x) == 5:
        ge_type = "GridSampler3D"
        attrs["data_format"] = "NCDHW"
    elif len(x) == 4:
        ge_type = "GridSampler2D"
    else:
        return f"a GridSample of rank {len(x)}: the GE ops sample 4-D (GridSampler2D) and 5-D (GridSampler3D) input"
    attrs["align_corners"] = int(a.get("align_corners", 0))
    return ge_type, attrs, list(node.input[:2])


def _static_problems(node, ctx: _Context, a: dict, x, y) -> tuple[list[str], list[float]]:
    """What keeps a Resize from a GE op that takes sizes and scales as attributes: (problems, the spatial forward
    scales given, 0 where sizes are)."""
    why = [f"{name} {_text(a[name])!r}" for name, default in (("axes", None), ("keep_aspect_ratio_policy", b"stretch"))
           if a.get(name, default) != default]
    if y is None or not all(isinstance(d, int) for d in list(x) + list(y)):
        why.append(f"X {x} and Y {y} need static shapes")
    elif x[:2] != y[:2]:
        why.append(f"N or C is resized (X {x}, Y {y})")
    elif max(i / o for i, o in zip(x[2:], y[2:], strict=True)) > MAX_STEP:  # the tilings' limit on in / out
        why.append(f"a downscale above {MAX_STEP:g}x (X {x}, Y {y})")
    scales = ctx.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and scales is None:
        why.append("scales computed at run time (the GE op takes them as attributes)")
    if len(node.input) > 3 and node.input[3] and ctx.value(node.input[3]) is None:
        why.append("sizes computed at run time (the GE op takes them as attributes)")
    spatial = len(x) - 2
    forward = [float(v) for v in scales.reshape(-1)[2:]] if scales is not None and scales.size else [0.0] * spatial
    return why, forward


def _inverse(forward: list[float]) -> list[float]:
    return [1.0 / f if f > 0 else 0.0 for f in forward]  # in / out; 0: the op takes the size ratio


# A 4-D nearest Resize: CANN's plugin (hicann/ops-cv@2275f5b common/src/framework/resize_onnx_plugin.cpp) makes it
# ResizeNearestNeighborV2 with align_corners for "align_corners", half_pixel_centers for "half_pixel" and
# "pytorch_half_pixel", neither otherwise (ParseResizeModeAttrs), and `size` from `sizes` or Shape(X) * scales
# (BuildResizeSizesFromInputs, BuildNearestResize); `nearest_mode` and the scales' values are not passed on. What its
# kernels compute per output index o, scale s = in / out in float32, or (in - 1) / (out - 1) with align_corners (0 for
# one output):
# - Ascend 950, the AscendC kernels (ops-cv@6ae8765 image/resize_nearest_neighbor_v2/op_host/arch35/
#   resize_nearest_neighbor_v2_tiling_base.cpp:240-263; op_kernel/arch35/resize_nearest_neighbor_v2_simt.h:106-123,
#   _base.h:42-49, the gather and data-copy kernels alike): min(floor((o + 0.5) s), in - 1) with half_pixel_centers,
#   min(floor(o s), in - 1) without, min(roundf(o s), in - 1) with align_corners (ties up);
# - elsewhere the TBE kernel (canndev dengguojie/vue-element-admin@57af4a1 ops/built-in/tbe/impl/dynamic/
#   resize_nearest_neighbor_v2.py:264-296 the index, :298-360 the scale: a division, or a reciprocal refined by
#   Newton where the core has no vdiv), the same formulas, align_corners rounding by vconv f322s32r, whose tie rule the
#   source does not state: every variant must agree.
TBE_NEAREST = ("Atlas training series", "Atlas inference series", "Atlas A2", "Atlas A3", "Atlas 200I/500 A2")


def _plugin_nearest_maps(size_in: int, size_out: int, align: bool, half: bool, family: str) -> list[list[int]]:
    """The input index each output reads, under every variant of the kernel on `family` the source leaves open."""
    f32 = np.float32
    if align:
        scales = [f32(size_in - 1) / f32(size_out - 1) if size_out > 1 else f32(0)]
    else:
        scales = [f32(size_in) / f32(size_out)]
        if family in TBE_NEAREST:
            scales.append(f32(f32(size_in) * f32(f32(1) / f32(size_out))))
    ties = ("up", "even") if align and family in TBE_NEAREST else ("up",)
    maps = []
    for scale in scales:
        for tie in ties:
            row = []
            for o in range(size_out):
                v = f32(f32(f32(o) + f32(0.5)) * scale) if half else f32(f32(o) * scale)
                index = (int(np.floor(v + f32(0.5))) if tie == "up" else int(np.rint(v))) if align else int(np.floor(v))
                row.append(min(index, size_in - 1))
            maps.append(row)
    return maps


def _onnx_nearest_map(size_in: int, size_out: int, scale: float, coordinates: str, rounding: str) -> list[int] | None:
    """onnxruntime's Resize (opset 11+): the original coordinate in float32 per coordinate_transformation_mode, then
    nearest_mode's rounding, clamped to [0, in - 1]; None for a mode the plugin's op cannot take (roi)."""
    f32 = np.float32
    s, row = f32(scale), []
    for o in range(size_out):
        centre = f32(f32(o) + f32(0.5)) / s
        if coordinates in ("half_pixel", "pytorch_half_pixel"):
            x = f32(0) if coordinates == "pytorch_half_pixel" and size_out == 1 else f32(centre - f32(0.5))
        elif coordinates == "asymmetric":
            x = f32(f32(o) / s)
        elif coordinates == "tf_half_pixel_for_nn":
            x = centre
        elif coordinates == "align_corners":
            x = f32(0) if size_out == 1 else f32(f32(o) * f32(size_in - 1) / f32(size_out - 1))
        elif coordinates == "half_pixel_symmetric":
            adjustment = f32(size_out) / f32(s * f32(size_in))
            x = f32(f32(f32(size_in) / f32(2)) * f32(f32(1) - adjustment) + centre - f32(0.5))
        else:
            return None
        away = int(np.sign(x) * np.floor(abs(float(x)) + 0.5))  # std::round (exact in double): halves away from 0
        if rounding == "round_prefer_floor":  # a positive half (x == int(x) + 0.5) goes down, the rest std::round
            index = int(np.floor(x)) if x == f32(int(x)) + f32(0.5) else away
        elif rounding == "round_prefer_ceil":
            index = away
        elif rounding == "floor":
            index = int(np.floor(x))
        else:
            index = int(np.ceil(x))
        row.append(max(0, min(index, size_in - 1)))
    return row


def _nearest_problem(node, ctx: _Context, a: dict, x, y, family: str) -> str | None:
    """Why the plugin's ResizeNearestNeighborV2 would not compute this nearest Resize on `family` (None: it does):
    both index maps, per resized axis, on the model's static shapes."""
    coordinates = _text(a.get("coordinate_transformation_mode", "half_pixel"))
    rounding = _text(a.get("nearest_mode", "round_prefer_floor"))
    align, half = coordinates == "align_corners", coordinates in ("half_pixel", "pytorch_half_pixel")
    kernel = (f"CANN's Resize plugin makes it ResizeNearestNeighborV2(align_corners={int(align)}, "
              f"half_pixel_centers={int(half)}; nearest_mode is not passed)")
    why, forward = _static_problems(node, ctx, a, x, y)
    if why:
        return f"{kernel}, whose index map cannot be compared with the node's: {'; '.join(why)}"
    for axis in (2, 3):
        size_in, size_out = x[axis], y[axis]
        scale = forward[axis - 2] if forward[axis - 2] > 0 else float(np.float32(size_out) / np.float32(size_in))
        ours = _onnx_nearest_map(size_in, size_out, scale, coordinates, rounding)
        if ours is None:
            return f"{kernel}: it cannot compute coordinate_transformation_mode {coordinates!r}"
        for theirs in _plugin_nearest_maps(size_in, size_out, align, half, family):
            if theirs != ours:
                o = next(k for k, (p, q) in enumerate(zip(theirs, ours, strict=True)) if p != q)
                return (f"{kernel}: on {family} output {o} of axis {axis} ({size_in} -> {size_out}) reads input "
                        f"{theirs[o]} there, {ours[o]} in the node ({coordinates}, {rounding})")
    return None


def _resize(node, ctx: _Context, version: int, family: str):
    """A 5-D linear Resize as ResizeUpsampleTrilinear, a 4-D antialiased one (torch's) as UpsampleBicubic2dAA /
    UpsampleBilinear2dAA; a 4-D Resize CANN's plugin would compute differently is refused; the rest is the
    plugin's."""
    x, y = ctx.shape(node.input[0]), ctx.shape(node.output[0])
    if x is None or len(x) not in (4, 5):
        return None
    a = _attrs(node)
    mode, coordinates = _text(a.get("mode", "nearest")), _text(a.get("coordinate_transformation_mode", "half_pixel"))
    antialias, exclude = int(a.get("antialias", 0)), int(a.get("exclude_outside", 0))
    coefficient = float(np.float32(a.get("cubic_coeff_a", -0.75)))
    if len(x) == 4:
        # what CANN's Resize plugin only warns about or does not pass on (resize_onnx_plugin.cpp@2275f5b:47-59,
        # 98-102, 121-125): GE Resize gets the mode and the coordinate mode, nothing else
        policy = _text(a.get("keep_aspect_ratio_policy", "stretch"))
        ignored = [what for what, on in (("antialias 1", antialias == 1), ("axes", "axes" in a),
                                         (f"keep_aspect_ratio_policy {policy!r}", policy != "stretch"),
                                         (f"cubic_coeff_a {coefficient:g}", mode == "cubic" and coefficient != -0.75),
                                         ("exclude_outside 1", mode == "cubic" and exclude == 1)) if on]
        if not ignored:  # the plugin's ResizeNearestNeighborV2 (opset 11+: checked here) / GE Resize
            return _nearest_problem(node, ctx, a, x, y, family) if mode == "nearest" and version >= 11 else None
        why, forward = _static_problems(node, ctx, a, x, y)
        torch_aa = antialias == 1 and exclude == 1 and (mode == "linear" or (mode == "cubic" and coefficient == -0.5))
        if not torch_aa:
            why.append(f"mode {mode!r} with antialias {antialias}, exclude_outside {exclude}"
                       + (f", cubic_coeff_a {coefficient:g}" if mode == "cubic" else "")
                       + " (the GE ops compute torch's antialiased bilinear, and bicubic with A -0.5, both excluding"
                         " outside taps)")
        if coordinates not in ("pytorch_half_pixel", "half_pixel") or (coordinates == "half_pixel"
                                                                       and y is not None and min(y[2:]) == 1):
            why.append(f"coordinate_transformation_mode {coordinates!r} (the GE ops compute pytorch_half_pixel)")
        if why:
            return (f"CANN's Resize plugin ignores {', '.join(ignored)} (it would compute another resize), and no GE "
                    "op computes it: " + "; ".join(why))
        ge_type = "UpsampleBicubic2dAA" if mode == "cubic" else "UpsampleBilinear2dAA"
        # inverse scales, but UpsampleBicubic2dAA on 950 (regbase) takes the forward ones
        scales = forward if ge_type == "UpsampleBicubic2dAA" and family == "Ascend 950" else _inverse(forward)
        attrs = dict(output_size=[int(d) for d in y[2:]], align_corners=0, scales_h=scales[0], scales_w=scales[1])
        return ge_type, attrs, [node.input[0]]
    why, forward = _static_problems(node, ctx, a, x, y)
    if mode != "linear":
        why.append(f"mode {mode!r} (only 'linear' has a 5-D GE op here, ResizeUpsampleTrilinear)")
    if coordinates not in TRILINEAR_MODES:
        why.append(f"coordinate_transformation_mode {coordinates!r} (the GE op computes {', '.join(TRILINEAR_MODES)})")
    if antialias:
        why.append("antialias 1")
    if coordinates == "half_pixel" and y is not None and min(y[2:]) == 1:
        why.append("half_pixel with an output axis of length 1 (torch reads coordinate 0 there)")
    if why:
        return ("a 5-D Resize: CANN's Resize plugin makes it GE Resize, which takes 4-D input only, and "
                "ResizeUpsampleTrilinear cannot compute it: " + "; ".join(why))
    inverse = _inverse(forward)
    attrs = dict(output_size=[int(d) for d in y[2:]], align_corners=int(coordinates == "align_corners"),
                 scales_d=inverse[0], scales_h=inverse[1], scales_w=inverse[2])
    return "ResizeUpsampleTrilinear", attrs, [node.input[0]]


PLANNERS = {"GridSample": _grid_sample, "Resize": _resize}


def _checks(ge_type: str, attrs: dict, dtype: str, family: str) -> tuple[list[dict], list[str]]:
    """The device checks of a GE forward op: (checks, problems)."""
    proto = protos.FORWARD_PROTOTYPES[ge_type]
    supported = proto.dtypes.get(family)
    checks = [{"check": "product", "ok": supported is not None,
               "detail": f"GE op {ge_type} on {family}" + ("" if supported else
                                                            f": not available (it runs on {', '.join(proto.dtypes)})")}]
    if supported is None:
        return checks, [f"GE op {ge_type} is not available on {family} (it runs on {', '.join(proto.dtypes)})"]
    checks.append({"check": "dtype", "ok": dtype in supported,
                   "detail": f"{dtype} (supported: {', '.join(supported)})"})
    problems = [] if dtype in supported else [f"dtype {dtype} is not supported by {ge_type} on {family} (supported: "
                                              f"{', '.join(supported)})"]
    for attr, allowed in proto.modes.items():
        ok = attrs[attr] in allowed
        checks.append({"check": attr, "ok": ok, "detail": f"{attrs[attr]!r} (accepted: {', '.join(allowed)})"})
        if not ok:
            problems.append(f"{attr} {attrs[attr]!r} is not computed by {ge_type} (it takes {', '.join(allowed)})")
    return checks, problems


def matmul_form(node, ctx: _Context, version: int) -> tuple[list, list] | str:
    """A 4-D Resize of static shapes as standard ONNX ATC reads as it is (opset <= 18): Y = A_H @ X @ A_W^T, the
    weight matrices constants (nodes, initializers); or why not. Resize is separable: each matrix is onnx's
    reference Resize of an identity along its axis alone, with the node's own attributes."""
    from onnx.reference import ReferenceEvaluator

    x, y = ctx.shape(node.input[0]), ctx.shape(node.output[0])
    a = _attrs(node)
    why, _ = _static_problems(node, ctx, {k: v for k, v in a.items() if k != "axes"}, x or [], y)
    if x is None or len(x) != 4:
        why.insert(0, f"X of rank {None if x is None else len(x)} (the MatMul form is 4-D)")
    if _text(a.get("coordinate_transformation_mode", "half_pixel")) == "tf_crop_and_resize":
        why.append("tf_crop_and_resize (it reads roi)")
    if why:
        return "; ".join(why)
    scales, sizes = (ctx.value(node.input[k]) if len(node.input) > k and node.input[k] else None for k in (2, 3))
    given = sizes if sizes is not None and sizes.size else scales
    full = np.array(x if given is sizes else [1.0] * 4, np.float64)
    for axis, value in zip([int(v) % 4 for v in a["axes"]] if "axes" in a else range(4), given.reshape(-1),
                           strict=True):
        full[axis] = value
    matrices = []
    for axis in (2, 3):
        size_in = x[axis]
        probe = [1.0, 1.0, 1.0, 1.0] if given is scales else [1, 1, size_in, size_in]
        probe[2] = full[axis]
        kept = [helper.make_attribute(k, v) for k, v in a.items() if k not in ("axes", "keep_aspect_ratio_policy")]
        resize = helper.make_node("Resize", ["x", "", "s"] if given is scales else ["x", "", "", "s"], ["y"])
        resize.attribute.extend(kept)
        probe_model = helper.make_model(helper.make_graph(
            [resize], "probe", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, None),
                                helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT if given is scales
                                                              else onnx.TensorProto.INT64, None)],
            [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)]),
            opset_imports=[helper.make_opsetid("", max(version, 18))])
        identity = np.eye(size_in)[None, None]
        (out,) = ReferenceEvaluator(probe_model).run(None, {"x": identity, "s": np.array(
            probe, np.float32 if given is scales else np.int64)})
        matrices.append(out[0, 0])  # [out, in]: column j is the resize of the j-th unit vector
    if [m.shape[0] for m in matrices] != list(y[2:]):
        return f"the weight matrices' rows {[m.shape[0] for m in matrices]} are not Y's {y[2:]}"
    dtype = onnx.helper.tensor_dtype_to_np_dtype(ctx.elem(node.input[0]))
    base = node.name or "resize"
    rows, cols, middle = ctx.fresh(f"{base}_rows"), ctx.fresh(f"{base}_cols"), ctx.fresh(f"{base}_h")
    inits = [numpy_helper.from_array(matrices[0].astype(dtype), rows),
             numpy_helper.from_array(np.ascontiguousarray(matrices[1].T).astype(dtype), cols)]
    nodes = [helper.make_node("MatMul", [rows, node.input[0]], [middle], name=ctx.fresh(f"{base}_matmul_h")),
             helper.make_node("MatMul", [middle, cols], list(node.output), name=ctx.fresh(f"{base}_matmul_w"))]
    return nodes, inits


def replace_forward(model: onnx.ModelProto, family: str, fallback: str | None = None
                    ) -> tuple[onnx.ModelProto, list[NodeReport]]:
    """Every standard GridSample / Resize node ATC cannot read (or CANN would compute otherwise) as its GE forward
    op (a copy of the model), with a report each. A node no GE op computes is refused, naming the node and why;
    with fallback "node", a 4-D Resize of static shapes becomes its MatMul form instead (matmul_form), and any other
    its standard-ONNX body (the tap engine's, as opset.inline(forward=...) writes it); with fallback "all" every such
    node becomes that body."""
    version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    info = _shapes_and_types(model)
    ctx = _Context(model, info)
    planned = {}  # node index -> ("ge", GE op, attributes, inputs, checks) or ("matmul", nodes, initializers, why)
    for index, node in enumerate(model.graph.node):
        planner = PLANNERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        plan = planner(node, ctx, version, family) if planner else None
        if plan is None:
            continue
        label = f"node {node.name or node.op_type!r} ({node.op_type})"
        if fallback == "all":  # standard ONNX only: the body, whether or not a GE op would compute it
            body = _standard_body(node, ctx, version)
            if body is None:
                raise ResampleGradError(OP, f"{label}: ATC cannot read it and it has no standard-ONNX body here "
                                            f"(float input of known rank needed)")
            planned[index] = ("body", body, "--fallback all")
            continue
        if isinstance(plan, str):
            form = matmul_form(node, ctx, version) if fallback == "node" and node.op_type == "Resize" else None
            if isinstance(form, tuple):
                planned[index] = ("matmul", *form, plan)
                continue
            body = _standard_body(node, ctx, version) if fallback == "node" else None
            if body is not None:
                planned[index] = ("body", body, plan)
                continue
            hint = f"; --fallback node cannot write it as MatMuls either: {form}" if form else \
                ("; --fallback node writes a 4-D Resize of static shapes as MatMuls" if node.op_type == "Resize"
                 else "")
            raise ResampleGradError(OP, f"{label}: {plan}{hint}")
        ge_type, attrs, inputs = plan
        dtype = DTYPE_NAMES.get(ctx.elem(node.input[0]), "unknown")
        checks, problems = _checks(ge_type, attrs, dtype, family)
        if problems:
            body = _standard_body(node, ctx, version) if fallback == "node" else None
            if body is None:
                raise ResampleGradError(OP, f"{label} becomes GE op {ge_type}, which cannot run it: {problems[0]}"
                                            + ("" if fallback == "node" else
                                               "; --fallback node writes it in standard ONNX ops"))
            planned[index] = ("body", body, f"GE op {ge_type} cannot run it: {problems[0]}")
            continue
        planned[index] = ("ge", ge_type, attrs, inputs, checks)
    if not planned:
        return model, []
    model = copy.deepcopy(model)
    reports, known, nodes = [], {v.name for v in model.graph.value_info}, []
    for index, node in enumerate(model.graph.node):
        if index not in planned:
            nodes.append(node)
            continue
        name = node.name or node.op_type
        if planned[index][0] == "matmul":
            _, added, inits, why = planned[index]
            nodes += added
            model.graph.initializer.extend(inits)
            reports.append(NodeReport(name, node.op_type, None, f"fallback: {why}; written as two MatMuls with "
                                                                f"constant weights (standard ONNX)"))
            continue
        if planned[index][0] == "body":
            _, function, why = planned[index]
            function.name, function.domain = f"{node.op_type}__fallback{index}", FORWARD_DOMAIN
            model.functions.append(function)
            node.input[:] = [name for name in node.input if name]
            node.op_type, node.domain = function.name, function.domain
            del node.attribute[:]
            nodes.append(node)
            reports.append(NodeReport(name, node.op_type, None, f"fallback: {why}; written in standard ONNX ops "
                                                                f"(the body opset.inline(forward=...) gives it)"))
            continue
        _, ge_type, attrs, inputs, checks = planned[index]
        # a name of its own where the node has none (the plugin and the GE IR program name ops by it)
        ge = _ge_node(ge_type, inputs, list(node.output), node.name or ctx.fresh(node.op_type), attrs)
        ge.doc_string = json.dumps({RECORD_KEY: {"node": _node_record(node), "added": [], "initializers": [],
                                                 OPSET_KEY: version}})
        for output in node.output:  # the GE node has no schema: keep its outputs' types for the nodes after it
            shape, elem = info.get(output, (None, 0))
            if output not in known and elem:
                model.graph.value_info.append(helper.make_tensor_value_info(output, elem, shape))
        reports.append(NodeReport(name, node.op_type, ge_type, "converted", dict(attrs), checks,
                                  mapping=f"standard {node.op_type} (opset {version}) CANN's plugin cannot read or "
                                          f"would compute otherwise -> {ge_type}"))
        nodes.append(ge)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model = _inline_bodies(model)
    if any(kind == "ge" for kind, *_ in planned.values()) and not any(o.domain == GE_DOMAIN
                                                                       for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(GE_DOMAIN, GE_VERSION))
    return model, reports


def _standard_body(node, ctx: _Context, version: int) -> onnx.FunctionProto | None:
    """The node in standard ONNX ops, from the same tap engine as the gradients (opset.inline's forward=)."""
    types = []
    for name in node.input:
        shape, elem = ctx.info.get(name, (None, 0)) if name else (None, 0)
        types.append(helper.make_tensor_type_proto(elem, shape).tensor_type if elem and shape is not None else None)
    return forward_body(node, [t for t, name in zip(types, node.input, strict=True) if name], version)


def _inline_bodies(model: onnx.ModelProto) -> onnx.ModelProto:
    """The fallback bodies written by replace_forward inlined in place, their domain and functions gone."""
    ids = [(f.domain, f.name) for f in model.functions if f.domain == FORWARD_DOMAIN]
    if not ids:
        return model
    model.opset_import.append(helper.make_opsetid(FORWARD_DOMAIN, 1))
    model = onnx.inliner.inline_selected_functions(model, ids)
    imports = [o for o in model.opset_import if o.domain != FORWARD_DOMAIN]
    del model.opset_import[:]
    model.opset_import.extend(imports)
    kept = [f for f in model.functions if f.domain != FORWARD_DOMAIN]
    del model.functions[:]
    model.functions.extend(kept)
    return model


ASIDE = "resample_grad.forward_aside"  # from_ascend marks the restored forward nodes with it for raise_opset


def recorded_opset(record: dict) -> int:
    """The default opset a restored forward node was written for (0 for the gradient ops' records)."""
    return int(record.get(OPSET_KEY, 0))


def raise_opset(model: onnx.ModelProto, version: int) -> onnx.ModelProto:
    """from_ascend: the model back at the default opset its restored forward nodes (domain ASIDE) were written
    for. The other nodes were lowered to ATC's opset with the forward nodes set aside: they go back up the same
    way."""
    if not version:
        return model
    current = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if version > current:
        model.opset_import.append(helper.make_opsetid(ASIDE, 1))
        try:
            model = onnx.version_converter.convert_version(model, version)
        except Exception as error:  # noqa: BLE001
            raise ResampleGradError("from_ascend", f"the forward nodes were written for opset {version} and onnx's "
                                                   f"version converter could not raise the rest from {current}: "
                                                   f"{error}") from None
    for node in model.graph.node:
        if node.domain == ASIDE:
            node.domain = ""
    imports = [o for o in model.opset_import if o.domain != ASIDE]
    del model.opset_import[:]
    model.opset_import.extend(imports)
    return model
