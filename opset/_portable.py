"""inline(model): a model of standard ONNX ops only, which runtimes that read no model-local functions run.

Every resample_grad node is replaced by the body attach() gives it, then what the model's static shapes decide is
decided once, here, rather than at run time: Shape of a known shape, the shape checks built from it, the coordinate
and tap tables that depend on sizes only, and an If whose condition is thereby known (onnxscript's constant folding,
without its rewrite rules, which may change the arithmetic). What remains is the computation on the model's data.
"""
from __future__ import annotations

import contextlib
import logging

import numpy as np
import onnx

from ._common import DOMAIN, ResampleGradError
from ._graph import DOUBLE, FLOAT, Graph
from ._grid_body import grid_sample
from ._resize_body import CROP, resize

# the folding limits (elements): a folded table larger than this stays a computation, so the model stays small;
# large enough for the separable ops' dense matrices of images up to about 1024 x 1024 (a model of 16 MB at most)
FOLD_INPUT_LIMIT = 1 << 24
FOLD_OUTPUT_LIMIT = 1 << 24
FOLD_ROUNDS = 3  # a fold exposes the next one (Shape -> Where -> Reshape shape -> If condition)
FORWARD_OPS = ("GridSample", "Resize")  # the forward ops inline(forward=...) can replace
FORWARD_DOMAIN = DOMAIN + ".forward"  # of the functions that replace them, inlined before inline() returns


def inline(model: onnx.ModelProto, *, fold: bool = True, forward=(), scatter_free: bool = False) -> onnx.ModelProto:
    """A copy of `model` with every resample_grad node replaced by its body (attach()'s), no function and no import
    of the resample_grad domain left, no zero-element initializer, unique node names, standard ops at the model's
    default-domain opset. fold=False keeps the bodies as attach() writes them (shapes computed at run time).

    forward: op types of FORWARD_OPS whose nodes in the main graph are replaced by standard-op bodies of the same tap
    engine too, for a runtime that lacks them: GridSample (4-D and 5-D, every mode and padding) and Resize (rank 2
    or more, float, every mode but tf_crop_and_resize; a node of another kind stays).

    scatter_free: the grid samplers (and a replaced GridSample) scatter and read by dense MatMuls, with no
    ScatterElements, GatherElements or integer index tensor, for runtimes without a scatter-add (onnx2tf / TFLite);
    their memory and time grow with (grid points) x (image pixels), where the default form's grow linearly; and
    ResizeGrad (and a replaced Resize) whose matrices are computed at run time (fed scales or sizes) builds them per
    axis from tables of rank 2 and adds the taps on one input up without ScatterElements."""
    import onnx_ir as ir
    from onnx_ir.passes import common as common_passes
    from onnxscript.optimizer import _constant_folding

    from . import attach  # (this module is imported by the package's __init__)
    from ._fold_splits import FoldConstantSplits

    unknown = sorted(set(forward) - set(FORWARD_OPS))
    if unknown:
        raise ResampleGradError("inline", f"forward={list(forward)}: {', '.join(unknown)} cannot be replaced; "
                                          f"expected op types among {', '.join(FORWARD_OPS)}")
    attached = attach(model, portable=True, scatter_free=scatter_free)
    _replace_forward(attached, set(forward), scatter_free)
    ir_model = ir.serde.deserialize_model(attached)
    passes = [common_passes.InlinePass()]
    if fold:
        passes.append(ir.passes.PassManager(
            [FoldConstantSplits(FOLD_INPUT_LIMIT, _foldable),
             _constant_folding.FoldConstantsPass(shape_inference=True, input_size_limit=FOLD_INPUT_LIMIT,
                                                 output_size_limit=FOLD_OUTPUT_LIMIT, should_fold=_foldable),
             common_passes.RemoveUnusedNodesPass()], steps=FOLD_ROUNDS, early_stop=True))
    passes += [common_passes.RemoveUnusedNodesPass(), common_passes.RemoveUnusedFunctionsPass(),
               common_passes.RemoveUnusedOpsetsPass(), common_passes.NameFixPass()]
    with _quiet_folding(_constant_folding.__name__):
        ir.passes.Sequential(*passes)(ir_model)
    result = ir.serde.serialize_model(ir_model)
    _drop_identity_contractions(result.graph)
    _transpose_gemm_constants(result.graph)
    _drop_dead_nodes(result.graph)
    _constants_to_initializers(result.graph)
    _drop_unused_initializers(result)
    _check_portable(result)
    return result


def _foldable(node) -> bool | None:
    """False for a value that Gather reads as indices of rank 2 or more: tinygrad 0.14 reads constant indices as a
    flat list of ints and fails on nested ones (docs/ops.md, "Portable form"); computed, they pass. None: the
    folder decides."""
    for value in node.outputs:
        if any(use.node.op_type == "Gather" and use.idx == 1 for use in value.uses()):
            if value.shape is None or len(value.shape) >= 2:
                return False
    return None


@contextlib.contextmanager
def _quiet_folding(logger: str):
    """The folder evaluates nodes with onnx's reference: a body's deliberate NaN (0 / 0) is no warning, and a node
    it cannot evaluate stays a node (its log says so)."""
    folding_log = logging.getLogger(logger)
    level = folding_log.level
    folding_log.setLevel(logging.ERROR)
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        folding_log.setLevel(level)


def _drop_dead_nodes(graph: onnx.GraphProto) -> None:
    """Nodes of the main graph whose outputs nothing reads (left by the folding of If branches)."""
    while True:
        read = {name for node in _all_nodes(graph) for name in node.input} | {v.name for v in graph.output}
        dead = [node for node in graph.node if not any(name in read for name in node.output)]
        if not dead:
            return
        for node in dead:
            graph.node.remove(node)


def _drop_identity_contractions(graph: onnx.GraphProto) -> None:
    """The contractions with an identity matrix the folding leaves (ResizeGrad's and Resize's axes of scale 1, often N
    and C) read their input instead: a MatMul by a constant identity, and then a Transpose of a Transpose by the
    same self-inverse perm (matmul_axis's move of an axis and back). onnx2tf 1.29.24 computes such chains wrongly
    (docs/ops.md, "Portable form")."""
    constants = {t.name: t for t in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    renames = {}
    for node in graph.node:
        node.input[:] = [renames.get(name, name) for name in node.input]
        perm = [list(a.ints) for a in node.attribute if a.name == "perm"]
        if node.op_type == "MatMul":
            for k, name in enumerate(node.input):
                if name in constants and _is_identity(onnx.numpy_helper.to_array(constants[name])):
                    renames[node.output[0]] = node.input[1 - k]
        elif node.op_type == "Transpose" and perm and node.input[0] in producers:
            before = producers[node.input[0]]
            if (before.op_type == "Transpose" and [list(a.ints) for a in before.attribute if a.name == "perm"] == perm
                    and [perm[0][p] for p in perm[0]] == list(range(len(perm[0])))):
                renames[node.output[0]] = before.input[0]
    for node in _all_nodes(graph):  # (If branches read the main graph's values too)
        node.input[:] = [renames.get(name, name) for name in node.input]
    outputs = {v.name for v in graph.output}
    for node in graph.node:  # a graph output keeps its name: its node becomes an Identity
        if node.output[0] in outputs and node.output[0] in renames:
            node.op_type, node.input[:] = "Identity", [renames[node.output[0]]]
            del node.attribute[:]


def _transpose_gemm_constants(graph: onnx.GraphProto) -> None:
    """A Gemm that reads a constant transposed (transA / transB) reads the transposed constant instead. OpenVINO
    2026.4.1 computes a MatMul wrongly whose square constant B another product reads transposed (docs/ops.md,
    "Portable form"): the forward Gemm(x, W, transB=1) and backward MatMul(g, W) of a frozen linear layer in a
    training step; as two initializers they are right. (A Transpose of a constant is folded into one already.)"""
    constants = {t.name: t for t in graph.initializer}
    transposed = {}
    for node in graph.node:
        if node.op_type != "Gemm" or node.domain not in ("", "ai.onnx"):
            continue
        for k, flag in enumerate(("transA", "transB")):
            attribute = next((a for a in node.attribute if a.name == flag and a.i), None)
            if attribute is None or node.input[k] not in constants:
                continue
            if node.input[k] not in transposed:
                tensor = onnx.numpy_helper.from_array(
                    np.ascontiguousarray(onnx.numpy_helper.to_array(constants[node.input[k]]).T),
                    _fresh_name(graph, f"{node.input[k]}_transposed"))
                graph.initializer.append(tensor)
                transposed[node.input[k]] = tensor.name
            node.input[k] = transposed[node.input[k]]
            node.attribute.remove(attribute)


def _fresh_name(graph: onnx.GraphProto, name: str) -> str:
    taken = ({t.name for t in graph.initializer} | {v.name for v in graph.input}
             | {out for node in _all_nodes(graph) for out in node.output})
    fresh, k = name, 0
    while fresh in taken:
        k += 1
        fresh = f"{name}_{k}"
    return fresh


def _is_identity(matrix: np.ndarray) -> bool:
    return matrix.ndim == 2 and matrix.shape[0] == matrix.shape[1] and np.array_equal(matrix, np.eye(len(matrix)))


def _constants_to_initializers(graph: onnx.GraphProto) -> None:
    """Each Constant node of the main graph becomes an initializer, one in a subgraph a Constant of a tensor: onnx2tf
    1.29 fails on a Constant of value_ints (it reads the list's .shape), and the initializer is the plainest form of
    a constant."""
    for node in [n for n in graph.node if n.op_type == "Constant"]:
        (attribute,) = node.attribute
        value = onnx.helper.get_attribute_value(attribute)
        if attribute.name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value)
        elif attribute.name in _CONSTANT_DTYPES:
            tensor = onnx.numpy_helper.from_array(np.array(value, _CONSTANT_DTYPES[attribute.name]))
        else:
            continue  # a sparse or string constant: none in the bodies
        tensor.name = node.output[0]
        graph.initializer.append(tensor)
        graph.node.remove(node)
    for node in _all_nodes(graph):  # in If branches: a Constant of a tensor `value`
        if node.op_type == "Constant" and node.attribute[0].name in _CONSTANT_DTYPES:
            (attribute,) = node.attribute
            value = np.array(onnx.helper.get_attribute_value(attribute), _CONSTANT_DTYPES[attribute.name])
            del node.attribute[:]
            node.attribute.append(onnx.helper.make_attribute("value", onnx.numpy_helper.from_array(value)))


_CONSTANT_DTYPES = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                    "value_ints": np.int64}


def _drop_unused_initializers(model: onnx.ModelProto) -> None:
    """Initializers no node reads (folded away), and every zero-element one (an absent optional input that a body
    read): a zero-element initializer some parsers (tinygrad's) refuse is a Constant node instead."""
    graph = model.graph
    read = {name for node in _all_nodes(graph) for name in node.input} | {v.name for v in graph.output}
    inputs = {v.name for v in graph.input}
    for tensor in list(graph.initializer):
        if tensor.name in inputs:
            continue
        if tensor.name not in read or 0 in tensor.dims:
            graph.initializer.remove(tensor)
        if tensor.name in read and 0 in tensor.dims:
            graph.node.insert(0, onnx.helper.make_node("Constant", [], [tensor.name], name=f"{tensor.name}_constant",
                                                       value=tensor))


def _all_nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g)


def _check_portable(model: onnx.ModelProto) -> None:
    """What inline() promises, checked on what it wrote: a failure here is a bug of the package, named."""
    left = [f"{n.domain}.{n.op_type}" for n in _all_nodes(model.graph) if n.domain == DOMAIN]
    if left or model.functions or any(o.domain == DOMAIN for o in model.opset_import):
        raise ResampleGradError("inline", f"resample_grad nodes or functions remain: {left or list(model.functions)}")
    onnx.checker.check_model(model, full_check=True)


def _replace_forward(model: onnx.ModelProto, forward: set, scatter_free: bool = False) -> None:
    """Each main-graph node of an op type in `forward` that _forward_body can build becomes a call of a model-local
    function of FORWARD_DOMAIN (one per node), which the InlinePass then inlines."""
    if not forward:
        return
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type for v in [*inferred.graph.input, *inferred.graph.value_info]}
    types.update({t.name: onnx.helper.make_tensor_type_proto(t.data_type, t.dims).tensor_type
                  for t in model.graph.initializer})
    version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    for k, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in forward:
            continue
        present = [name for name in node.input if name]
        function = _forward_body(node, [types.get(name) for name in node.input], version, scatter_free)
        if function is None:
            continue
        function.name, function.domain = f"{node.op_type}_{k}", FORWARD_DOMAIN
        node.op_type, node.domain = function.name, FORWARD_DOMAIN
        node.input[:] = present
        del node.attribute[:]
        model.functions.append(function)
    if model.functions and all(o.domain != FORWARD_DOMAIN for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(FORWARD_DOMAIN, 1))


FLOATS = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, FLOAT, DOUBLE)
GRID_SAMPLE_MODES = {"bilinear": "bilinear", "linear": "bilinear", "bicubic": "bicubic", "cubic": "bicubic",
                     "nearest": "nearest"}  # (opset 16's names and opset 20's)


def _forward_body(node: onnx.NodeProto, types: list, version: int, scatter_free: bool = False
                  ) -> onnx.FunctionProto | None:
    """The body of a GridSample or Resize node (inputs: its present inputs, in order); None where it has none."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {name: value.decode() if isinstance(value, bytes) else value for name, value in attrs.items()}
    x = types[0]
    if x is None or x.elem_type not in FLOATS or not x.HasField("shape"):
        return None
    rank = len(x.shape.dim)
    g = Graph(DOUBLE if x.elem_type == DOUBLE else FLOAT, x.elem_type, version)
    if node.op_type == "GridSample":
        grid = types[1]
        if rank not in (4, 5) or grid is None or grid.elem_type != x.elem_type:
            return None
        y = grid_sample(g, "X", "grid", rank - 2, GRID_SAMPLE_MODES[attrs.get("mode", "bilinear")],
                        attrs.get("padding_mode", "zeros"), bool(attrs.get("align_corners", 0)), scatter_free)
        return g.function(node.op_type, "", ["X", "grid"], {"Y": g.like(y, "X")})
    from . import OPS  # Resize's attributes are ResizeGrad's, with the same defaults

    attrs = {**{k: v.decode() if isinstance(v, bytes) else v for k, v in OPS["ResizeGrad"].body_attributes.items()},
             **attrs}
    if rank < 2 or attrs["coordinate_transformation_mode"] == CROP:
        return None
    names = ["X", "roi", "scales", "sizes"]
    given = [k < len(node.input) and node.input[k] != "" for k in range(4)]
    absent = {"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32), "sizes": np.zeros(0, np.int64)}
    values = [name if given[k] else g.constant(absent[name]) for k, name in enumerate(names)]
    y = resize(g, attrs, rank, *values, scatter_free=scatter_free)
    return g.function(node.op_type, "", [name for k, name in enumerate(names) if given[k]], {"Y": g.like(y, "X")})
