"""A small builder of FunctionProtos from Python: the specialised bodies attach() gives each node.

    g = Graph(opmath=onnx.TensorProto.FLOAT)
    y = g.Mul(g.Cast(x, to=g.opmath), 0.5)   # a Python float is a constant of the arithmetic type,
    g.function(op_type, overload, ["x"], [y]) # a Python int an int64 scalar, a list of ints an int64 vector

Every op is a method named after it (g.Gather(data, index, axis=0)); an op with several outputs takes
outputs=k and returns a tuple. Equal constants are made once per body.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools

import numpy as np
import onnx
from onnx import TensorProto, helper

from ._common import DOMAIN

DEFAULT_OPSET = 18  # attach() sets the model's own (17 or newer)
AXES_INPUT_SINCE_18 = ("ReduceMax", "ReduceMin", "ReduceProd")  # (ReduceSum's axes are an input since 13)
FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
INT64 = TensorProto.INT64
BOOL = TensorProto.BOOL


class Graph:
    """Nodes of one function body, in order; `opmath` is its arithmetic type (FLOAT or DOUBLE), `dtype` the element
    type of the node's tensors (0: any, the body then casts whatever it gets)."""

    def __init__(self, opmath: int, dtype: int = 0, opset: int = DEFAULT_OPSET):
        self.opmath = opmath
        self.dtype = dtype
        self.opset = opset
        self.nodes = []
        self._constants = {}
        self._names = itertools.count()

    def __getattr__(self, op_type: str):
        if not op_type[:1].isupper():
            raise AttributeError(op_type)
        return lambda *inputs, outputs=1, **attributes: self.node(op_type, inputs, outputs, **attributes)

    def node(self, op_type: str, inputs, outputs: int = 1, **attributes):
        if self.opset < 18 and op_type in AXES_INPUT_SINCE_18:  # before opset 18: axes as an attribute
            inputs, attributes = inputs[:1], {**attributes, **({"axes": list(inputs[1])} if len(inputs) > 1 else {})}
        if self.opset < 18 and op_type == "Split":  # before opset 18: as many equal parts as outputs
            attributes.pop("num_outputs", None)
        names = [f"{op_type.lower()}{next(self._names)}" for _ in range(outputs)]
        # named nodes: onnxruntime names an inlined node after the function and the node, so that its errors
        # name the op
        self.nodes.append(helper.make_node(op_type, [self.value(i) for i in inputs], names, name=names[0],
                                           **attributes))
        return names[0] if outputs == 1 else tuple(names)

    def value(self, item) -> str:
        """A value name: names pass through, Python numbers become constants (None: an absent input)."""
        if item is None:
            return ""
        if isinstance(item, str):
            return item
        if isinstance(item, bool):
            return self.constant(np.array(item))
        if isinstance(item, int):
            return self.constant(np.array(item, np.int64))
        if isinstance(item, float):
            return self.constant(np.array(item, helper.tensor_dtype_to_np_dtype(self.opmath)))
        if isinstance(item, np.ndarray):
            return self.constant(item)
        array = np.asarray(item)
        if array.dtype.kind in "iu":
            return self.constant(array.astype(np.int64))
        if array.dtype.kind == "f":  # a list of Python floats: the arithmetic type
            return self.constant(array.astype(helper.tensor_dtype_to_np_dtype(self.opmath)))
        return self.constant(array)

    def constant(self, array: np.ndarray) -> str:
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            name = f"const{next(self._names)}"
            self.nodes.append(helper.make_node("Constant", [], [name], name=name,
                                               value=onnx.numpy_helper.from_array(array, name)))
            self._constants[key] = name
        return self._constants[key]

    def in_opmath(self, x: str) -> str:
        """x in the arithmetic type (no Cast when the node's dtype is it)."""
        return x if self.dtype == self.opmath else self.Cast(x, to=self.opmath)

    def like(self, x: str, like: str) -> str:
        """x (in the arithmetic type) in the type of `like`, a tensor of the node's dtype."""
        return x if self.dtype == self.opmath else self.CastLike(x, like)

    def typed(self, value, elem_type: int) -> str:
        """A constant of the given ONNX element type (a Python float is otherwise of the arithmetic type)."""
        return self.constant(np.array(value, helper.tensor_dtype_to_np_dtype(elem_type)))

    def branch(self) -> Graph:
        """A Graph for a subgraph of this body (an If branch); its names stay unique within the body, and the constants
        made so far are in its scope."""
        child = Graph(self.opmath, self.dtype, self.opset)
        child._names = self._names
        child._constants = dict(self._constants)
        return child

    def graph(self, outputs) -> onnx.GraphProto:
        """This Graph as a subgraph whose outputs are the values `outputs`."""
        names = [f"out{next(self._names)}" for _ in outputs]
        nodes = self._named(dict(zip(names, outputs, strict=True)))
        return helper.make_graph(nodes, names[0], [], [onnx.ValueInfoProto(name=n) for n in names])

    def function(self, name: str, overload: str, inputs, outputs, doc: str = "") -> onnx.FunctionProto:
        """The body as the FunctionProto `name` of the domain; `outputs` maps each output name to its value."""
        function = helper.make_function(DOMAIN, name, list(inputs), list(outputs), self._named(outputs),
                                        [helper.make_opsetid("", self.opset)], doc_string=doc)
        function.overload = overload
        return function

    def _named(self, outputs: dict) -> list:
        """The nodes, the one computing each output writing it under the output's name (an Identity where the
        value is an input or serves two outputs)."""
        nodes = [copy.deepcopy(n) for n in self.nodes]
        produced = {o for n in nodes for o in n.output}
        values = list(outputs.values())
        renames = {value: formal for formal, value in outputs.items() if value in produced and values.count(value) == 1}
        for node in nodes:
            node.output[:] = [renames.get(o, o) for o in node.output]
            node.input[:] = [renames.get(i, i) for i in node.input]
        return nodes + [helper.make_node("Identity", [value], [formal], name=formal)
                        for formal, value in outputs.items() if value not in renames]


@dataclasses.dataclass(frozen=True)
class BodyKey:
    """What a node statically is, as far as its function body goes: the op, the arithmetic type, the attributes
    that shape the body (name, value pairs, defaults filled in) and which outputs the node names."""
    op_type: str
    opmath: int
    dtype: int = 0  # the node's element type (0: unknown, the body casts)
    attributes: tuple = ()
    wanted: tuple = ()
    opset: int = DEFAULT_OPSET  # the model's default-domain opset, which the body is written for
    # for inline(): no If that only skips work where a plain form computes the same (a runtime that checks If
    # branches statically refuses branches of different shapes), and ResizeGrad's refusal a Where
    portable: bool = False
    # for inline(scatter_free=True): the grid samplers scatter and read by dense MatMuls, no ScatterElements or
    # GatherElements (runtimes without a scatter-add: onnx2tf / TFLite), quadratic in the image's size; ResizeGrad
    # builds its run-time matrices axis by axis and adds their taps by Where and Add (_resize_body.tap_sum)
    scatter_free: bool = False

    @property
    def overload(self) -> str:
        """The body's name among the op's bodies (the node's and the FunctionProto's `overload`)."""
        parts = [helper.tensor_dtype_to_np_dtype(self.opmath).name]
        if self.dtype not in (0, self.opmath):
            parts.append("from_" + onnx.TensorProto.DataType.Name(self.dtype).lower())
        elif self.dtype == 0:
            parts.append("any_dtype")
        parts += [f"{name}={_text(value)}" for name, value in self.attributes]
        if self.wanted and not all(self.wanted):
            parts.append("outputs=" + "".join("1" if w else "0" for w in self.wanted))
        if self.portable:
            parts.append("portable")
        if self.scatter_free:
            parts.append("scatter_free")
        return ",".join(parts)

    def attribute(self, name: str):
        return dict(self.attributes)[name]

    def graph(self) -> Graph:
        """An empty Graph for this key's body."""
        return Graph(self.opmath, self.dtype, self.opset)


def _text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(_text(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)
