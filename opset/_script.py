"""onnxscript building blocks of ResizeGrad's function (the other ops' bodies are built per node by _graph.py), and
the step that inlines them.

The function comes in two bodies that differ only in `ToOpmath`, the cast of the op's tensors to the arithmetic
type: the default body computes in double whatever the input dtype (Cast in, CastLike out); the overload `float32`
computes in float32, the opmath of float and the half types. Helpers here are @script functions in a private
domain; `finish` inlines them into the FunctionProto so that it is self-contained and built from standard ops only
(ai.onnx and ai.onnx.ml's LabelEncoder for the string attributes: string Equal exists only from opset 19).
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
FLOAT = onnx.TensorProto.FLOAT
INT64 = onnx.TensorProto.INT64
ML_DOMAIN = "ai.onnx.ml"
FLOAT32_OVERLOAD = "float32"  # the body that computes in float32 (attach() picks it for float and half inputs)


_HELPERS = []


def helper(function):
    """@helper above @script(HELPERS, ...): a building block `finish` inlines into the op functions."""
    _HELPERS.append(function)
    return function


@helper
@script(HELPERS, default_opset=op)
def ToOpmath(x):
    """x in the body's arithmetic type: double here, float32 in the float32 overload (_ToOpmathFloat)."""
    return op.Cast(x, to=DOUBLE)


@script(HELPERS, default_opset=op)
def _ToOpmathFloat(x):
    return op.Cast(x, to=FLOAT)


def _helper_functions(overload: str = ""):
    protos = [f.to_function_proto() for f in _HELPERS]
    if overload == FLOAT32_OVERLOAD:
        swaps = {"ToOpmath": _ToOpmathFloat.to_function_proto()}
        for name, body in swaps.items():
            body.name = name
        protos = [swaps.get(p.name, p) for p in protos]
    return protos


def finish(function, op_type: str, outputs, overload: str = "") -> onnx.FunctionProto:
    """The op's FunctionProto, named op_type with the schema's output names, every helper call
    inlined and the opset imports it needs; `overload` FLOAT32_OVERLOAD: the float32 body."""
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
    helpers = _helper_functions(overload)
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
    if overload:
        inlined.overload = overload
    return inlined


def finish_bodies(function, op_type: str, outputs):
    """Both bodies: the default (double) FunctionProto and the float32 overload."""
    return finish(function, op_type, outputs), finish(function, op_type, outputs, FLOAT32_OVERLOAD)


def _all_subgraphs(nodes):
    return (graph for node in walk(nodes) for graph in subgraphs(node))
