"""Gradient definitions for onnxruntime-training's gradient builder, and the attribute fix-up after it ran.

onnxruntime.capi._pybind_state.register_gradient_definition(key, [GradientNodeDefinition, ...]) adds a gradient
for the op `key` = "<domain>::<op_type>". Its node definitions read GO(i), I(i), O(i) and write GI(i); their
attribute values are fixed in the definition (nothing refers to the forward node's attributes), the key cannot
depend on an attribute (only ATen nodes' keys do), and the first registration of a key in a process wins (a
later one is silently ignored). So one placeholder definition per op is registered, and after the builder ran,
fix_attributes() gives every gradient node the forward node's attributes: the builder names the gradient
nodes of forward node F "F_Grad/<op_type>_<index>", which is why every forward node gets a unique name first.

    ::GridSample -> resample_grad::GridSampler2DGrad(GO(0), I(0), I(1)) -> (GI(0), GI(1)), then per node:
        interpolation_mode (linear / bilinear -> bilinear, nearest, cubic / bicubic -> bicubic; the forward's
        default is bilinear before opset 20, linear from 20), padding_mode, align_corners, and
        GridSampler3DGrad for a 5-D GridSample (bilinear and nearest, as aten's grid_sampler_3d);
    ::AffineGrid -> standard ops (opset 18+: Pad with axes, EyeLike), rank-generic (2-D and 3-D):
        dtheta[n] = G[n]^T B, G = dgrid[n] as [P, r], B = [base grid, 1] as [P, r + 1], base = AffineGrid of
        the identity at the forward's size; align_corners copied.
"""
from __future__ import annotations

import json

import onnx
from onnx import helper

from resample_grad.constants import DEFAULT_DOMAINS, DOMAIN, GRID_SAMPLE_MODES, INTERPOLATION_MODES_3D

from . import _ort

PREFIX = "rg_"  # intermediate names inside a gradient definition (the builder prefixes them with "F_Grad/")

_registered = False


def _node(binding, op_type, inputs, outputs, attributes=None, domain=""):
    """A GradientNodeDefinition; attributes: {name: (value, dtype, is_tensor)}, dtype 'int' | 'float' | 'string'."""
    definition = binding.GradientNodeDefinition()
    definition.op_type, definition.domain = op_type, domain
    definition.inputs, definition.outputs = list(inputs), list(outputs)
    attrs = []
    for name, (value, dtype, is_tensor) in (attributes or {}).items():
        attr = binding.GradientNodeAttributeDefinition()
        attr.name, attr.value_json, attr.dtype, attr.is_tensor = name, json.dumps(value), dtype, is_tensor
        attrs.append(attr)
    definition.attributes = attrs
    return definition


def grid_sample_definition(binding) -> list:
    """GridSample -> GridSampler2DGrad with placeholder attributes (fix_attributes sets the forward's). Every GI
    is listed: the builder drops the ones nothing needs (an output named "" would be a new intermediate)."""
    return [_node(binding, "GridSampler2DGrad", ["GO(0)", "I(0)", "I(1)"], ["GI(0)", "GI(1)"],
                  {"interpolation_mode": ("bilinear", "string", False), "padding_mode": ("zeros", "string", False),
                   "align_corners": (0, "int", False)}, domain=DOMAIN)]


def affine_grid_definition(binding) -> list:
    """AffineGrid(theta [N, r, r+1], size [r+2]) -> grid [N, *spatial, r]: dtheta from standard ops (a Constant
    must use `value`: `value_ints` fails in the builder; CastLike gives the integer constants theta's type)."""
    p = PREFIX
    ints = lambda values: {"value": (values, "int", True)}  # noqa: E731
    n = lambda *args, **kwargs: _node(binding, *args, **kwargs)  # noqa: E731
    axis0 = {"axis": (0, "int", False)}
    return [
        n("Size", ["I(1)"], [p + "len"]),                                        # r + 2, a scalar
        n("Constant", [], [p + "c1"], ints([1])),
        n("Constant", [], [p + "c2"], ints([2])),
        n("Constant", [], [p + "c0"], ints([0])),
        n("Reshape", [p + "len", p + "c1"], [p + "len1"]),                      # [r + 2]
        n("Sub", [p + "len1", p + "c2"], [p + "r"]),                            # [r]
        n("Sub", [p + "len1", p + "c1"], [p + "r1"]),                           # [r + 1]
        n("Concat", [p + "r", p + "r1"], [p + "eye_shape"], axis0),
        n("ConstantOfShape", [p + "eye_shape"], [p + "zeros_int"]),
        n("CastLike", [p + "zeros_int", "I(0)"], [p + "zeros"]),
        n("EyeLike", [p + "zeros"], [p + "eye"]),                               # [r, r + 1] identity
        n("Unsqueeze", [p + "eye", p + "c0"], [p + "identity"]),                # [1, r, r + 1]
        n("Slice", ["I(1)", p + "c1", p + "len1"], [p + "channels_spatial"]),   # [C, *spatial]
        n("Concat", [p + "c1", p + "channels_spatial"], [p + "size1"], axis0),
        n("AffineGrid", [p + "identity", p + "size1"], [p + "base"], {"align_corners": (0, "int", False)}),
        n("Constant", [], [p + "pads"], ints([0, 1])),
        n("Constant", [], [p + "one_int"], ints([1])),
        n("CastLike", [p + "one_int", "I(0)"], [p + "one_vector"]),
        n("Constant", [], [p + "scalar_shape"], ints([])),
        n("Reshape", [p + "one_vector", p + "scalar_shape"], [p + "one"]),
        n("Constant", [], [p + "last_axis"], ints([-1])),
        n("Pad", [p + "base", p + "pads", p + "one", p + "last_axis"], [p + "base_1"]),  # [1, *spatial, r + 1]
        n("Constant", [], [p + "minus1"], ints([-1])),
        n("Concat", [p + "minus1", p + "r1"], [p + "b_shape"], axis0),
        n("Reshape", [p + "base_1", p + "b_shape"], [p + "B"]),                  # [P, r + 1]
        n("Concat", [p + "c0", p + "minus1", p + "r"], [p + "g_shape"], axis0),
        n("Reshape", ["GO(0)", p + "g_shape"], [p + "G"]),                       # [N, P, r]
        n("Transpose", [p + "G"], [p + "Gt"], {"perm": ([0, 2, 1], "int", False)}),
        n("MatMul", [p + "Gt", p + "B"], ["GI(0)"]),                             # [N, r, r + 1]
    ]


def register_once() -> None:
    """Registers both definitions in this process (onnxruntime keeps the first registration of a key)."""
    global _registered
    if _registered:
        return
    binding = _ort.capi()
    binding.register_gradient_definition("::GridSample", grid_sample_definition(binding))
    binding.register_gradient_definition("::AffineGrid", affine_grid_definition(binding))
    _registered = True


def name_nodes(model: onnx.ModelProto) -> int:
    """Gives every unnamed or repeated top-level node a unique name (the builder names gradient nodes after
    their forward node); returns how many were renamed."""
    used = {n.name for n in model.graph.node if n.name}
    seen = set()
    renamed = 0
    counter = 0
    for node in model.graph.node:
        if node.name and node.name not in seen:
            seen.add(node.name)
            continue
        base = node.name or f"{node.op_type}"
        while f"{base}_rg{counter}" in used:
            counter += 1
        node.name = f"{base}_rg{counter}"
        used.add(node.name)
        seen.add(node.name)
        renamed += 1
    return renamed


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 0)


def _attributes(node) -> dict[str, object]:
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in values.items()}


def spatial_ranks(model: onnx.ModelProto) -> dict[str, int]:
    """The rank of each GridSample node's input (4 or 5) by node name, from onnx shape inference; absent
    when unknown."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    ranks = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            ranks[value.name] = len(value.type.tensor_type.shape.dim)
    for init in inferred.graph.initializer:
        ranks[init.name] = len(init.dims)
    out = {}
    for node in model.graph.node:
        if node.op_type == "GridSample" and node.domain in DEFAULT_DOMAINS:
            rank = ranks.get(node.input[0]) or ranks.get(node.input[1])
            if rank:
                out[node.name] = rank
    return out


def fix_attributes(training_model: onnx.ModelProto, forward: onnx.ModelProto, ranks: dict[str, int]) -> list[str]:
    """Gives the gradient nodes of every forward GridSample / AffineGrid the forward node's attributes (and a 5-D
    GridSample GridSampler3DGrad). Returns one line per node fixed. Raises ValueError when a gradient node is
    missing or is not ours (another gradient definition for GridSample was registered first in this process)."""
    opset = _opset(forward)
    forward_nodes = {n.name: n for n in forward.graph.node
                     if n.op_type in ("GridSample", "AffineGrid") and n.domain in DEFAULT_DOMAINS}
    by_forward: dict[str, list] = {}
    for node in training_model.graph.node:
        if "_Grad/" in node.name:
            by_forward.setdefault(node.name.split("_Grad/")[0], []).append(node)
    done = []
    for name, fwd in forward_nodes.items():
        grads = by_forward.get(name, [])
        if not grads:
            continue  # nothing upstream of this node needs a gradient
        attrs = _attributes(fwd)
        if fwd.op_type == "GridSample":
            targets = [g for g in grads if g.domain == DOMAIN and g.op_type == "GridSampler2DGrad"]
            if len(targets) != 1:
                raise ValueError(
                    f"resample_grad.training: the gradient of GridSample node {name!r} is "
                    f"{[f'{g.domain}::{g.op_type}' for g in grads]}, expected one resample_grad::GridSampler2DGrad: "
                    "another gradient definition for GridSample was registered earlier in this process "
                    "(onnxruntime-training keeps the first); generate the artifacts in a fresh process")
            mode_name = attrs.get("mode", "linear" if opset >= 20 else "bilinear")
            if mode_name not in GRID_SAMPLE_MODES:
                raise ValueError(f"resample_grad.training: GridSample node {name!r} has mode {mode_name!r}; "
                                 f"expected one of {sorted(GRID_SAMPLE_MODES)}")
            mode = GRID_SAMPLE_MODES[mode_name]
            rank = ranks.get(name)
            if rank not in (4, 5):
                raise ValueError(f"resample_grad.training: cannot tell the rank of GridSample node {name!r}'s input "
                                 f"(shape inference gives {rank}); expected 4 (GridSampler2DGrad) or 5 "
                                 "(GridSampler3DGrad): give the model's inputs static ranks")
            if rank == 5 and mode not in INTERPOLATION_MODES_3D:
                raise ValueError(f"resample_grad.training: GridSample node {name!r} is 5-D with mode {mode_name!r}; "
                                 "GridSampler3DGrad has bilinear and nearest (as aten's grid_sampler_3d)")
            node = targets[0]
            node.op_type = "GridSampler3DGrad" if rank == 5 else "GridSampler2DGrad"
            new = {"interpolation_mode": mode, "padding_mode": attrs.get("padding_mode", "zeros"),
                   "align_corners": int(attrs.get("align_corners", 0))}
        else:
            targets = [g for g in grads if g.domain in DEFAULT_DOMAINS and g.op_type == "AffineGrid"]
            if len(targets) != 1:
                raise ValueError(
                    f"resample_grad.training: the gradient of AffineGrid node {name!r} is "
                    f"{[f'{g.domain}::{g.op_type}' for g in grads]}, expected resample_grad.training's (one AffineGrid "
                    "among standard ops): another gradient definition for AffineGrid was registered earlier in this "
                    "process (onnxruntime-training keeps the first); generate the artifacts in a fresh process")
            node = targets[0]
            new = {"align_corners": int(attrs.get("align_corners", 0))}
        del node.attribute[:]
        node.attribute.extend(helper.make_attribute(k, v) for k, v in new.items())
        done.append(f"{node.name}: {node.op_type} {new}")
    return done
