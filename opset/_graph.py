"""A small builder of FunctionProtos from Python: the specialised bodies attach() gives each node.

    g = Graph(opmath=onnx.TensorProto.FLOAT)
    y = g.Mul(g.Cast(x, to=g.opmath), 0.5)   # a Python float is a constant of the arithmetic type,
    g.function(op_type, overload, ["x"], [y]) # a Python int an int64 scalar, a list of ints an int64 vector

Every op is a method named after it (g.Gather(data, index, axis=0)); an op with several outputs takes
outputs=k and returns a tuple. Equal constants are made once per body.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import onnx
from onnx import TensorProto, helper

from ._common import DOMAIN

DEFAULT_OPSET = 18  # attach() sets the model's own (17 or newer)
FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
INT64 = TensorProto.INT64
BOOL = TensorProto.BOOL


class Graph:
    """Nodes of one function body, in order; `opmath` is its arithmetic type (FLOAT or DOUBLE)."""

    def __init__(self, opmath: int):
        self.opmath = opmath
        self.nodes = []
        self._constants = {}
        self._names = itertools.count()

    def __getattr__(self, op_type: str):
        if not op_type[:1].isupper():
            raise AttributeError(op_type)
        return lambda *inputs, outputs=1, **attributes: self.node(op_type, inputs, outputs, **attributes)

    def node(self, op_type: str, inputs, outputs: int = 1, **attributes):
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
        if isinstance(item, (list, tuple)) and all(isinstance(v, int) for v in item):
            return self.constant(np.array(item, np.int64))
        if isinstance(item, (list, tuple)):
            return self.constant(np.array(item, helper.tensor_dtype_to_np_dtype(self.opmath)))
        return self.constant(np.asarray(item))

    def constant(self, array: np.ndarray) -> str:
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            name = f"const{next(self._names)}"
            self.nodes.append(helper.make_node("Constant", [], [name], name=name,
                                               value=onnx.numpy_helper.from_array(array, name)))
            self._constants[key] = name
        return self._constants[key]

    def branch(self) -> "Graph":
        """A Graph for a subgraph of this body (an If branch); its names stay unique within the body."""
        child = Graph(self.opmath)
        child._names = self._names
        return child

    def graph(self, outputs) -> onnx.GraphProto:
        """This Graph as a subgraph whose outputs are the values `outputs`."""
        names = [f"out{next(self._names)}" for _ in outputs]
        nodes = self.nodes + [helper.make_node("Identity", [v], [n], name=n) for v, n in zip(outputs, names)]
        return helper.make_graph(nodes, names[0], [], [onnx.ValueInfoProto(name=n) for n in names])

    def opmath_dtype(self):
        return helper.tensor_dtype_to_np_dtype(self.opmath).type

    def function(self, name: str, overload: str, inputs, outputs, doc: str = "") -> onnx.FunctionProto:
        """The body as the FunctionProto `name` of the domain; `outputs` maps each output name to its value."""
        nodes = self.nodes + [helper.make_node("Identity", [value], [formal]) for formal, value in outputs.items()]
        function = helper.make_function(DOMAIN, name, list(inputs), list(outputs), nodes,
                                        [helper.make_opsetid("", DEFAULT_OPSET)], doc_string=doc)
        function.overload = overload
        return function


@dataclasses.dataclass(frozen=True)
class BodyKey:
    """What a node statically is, as far as its function body goes: the op, the arithmetic type, the attributes
    that shape the body (name, value pairs, defaults filled in) and which outputs the node names."""
    op_type: str
    opmath: int
    attributes: tuple = ()
    wanted: tuple = ()

    @property
    def overload(self) -> str:
        """The body's name among the op's bodies (the node's and the FunctionProto's `overload`)."""
        parts = [helper.tensor_dtype_to_np_dtype(self.opmath).name]
        parts += [f"{name}={_text(value)}" for name, value in self.attributes]
        if self.wanted and not all(self.wanted):
            parts.append("outputs=" + "".join("1" if w else "0" for w in self.wanted))
        return ",".join(parts)

    def attribute(self, name: str):
        return dict(self.attributes)[name]


def _text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(_text(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)
