"""Gradient graphs for ONNX forward models that use GridSample and Resize.

    gradient_model(model, wrt=["x", "grid"], output=None) -> ModelProto

The result takes the forward inputs plus `grad_<output>` (the gradient flowing into the
chosen output) and returns the forward outputs plus `grad_<name>` for every name in wrt.
It back-propagates through a chain of supported ops (no full autodiff engine):

| forward op | backward |
|---|---|
| GridSample (opset 16 and 20 spellings), 4-D | GridSampler2DGrad: the grad of X and/or grid, only what wrt needs |
| GridSample, 5-D (bilinear/linear, nearest) | GridSampler3DGrad |
| Resize (opsets 11 to 19), every attribute, any rank | ResizeGrad(dY, X, roi, scales, sizes): the forward's inputs |
| Identity, Neg, Add, Sub, Mul, Div (by a tensor that needs no gradient) | the usual rules, shapes as the forward |

ResizeGrad takes the forward's own roi, scales and sizes, so scales or sizes computed at run time are used as
computed. It follows onnxruntime's Resize exactly; the torch-semantics CANN ops (ResizeBilinearV2Grad,
UpsampleNearest*Grad) round scales and indices as aten does, which can pick another pixel than
onnxruntime at an exact boundary, so they are not used here (to_ascend turns ResizeGrad into them
where they agree). Anything else on the path from wrt to the output raises ResampleGradError naming
the node.
"""
from __future__ import annotations

import copy
from collections.abc import Callable

import onnx
from onnx import helper

from resample_grad import opset
from resample_grad.constants import DEFAULT_DOMAINS, GRID_SAMPLE_MODES, INTERPOLATION_MODES_3D, PADDING_MODES
from resample_grad.opset import ResampleGradError

OP = "gradient_model"


class _Builder:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.inferred = onnx.shape_inference.infer_shapes(model)
        self.shapes = {}
        graph = self.inferred.graph
        for value in list(graph.input) + list(graph.value_info) + list(graph.output):
            dims = value.type.tensor_type.shape.dim
            self.shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        self.nodes: list[onnx.NodeProto] = []
        self.counter = 0

    def name(self, hint: str) -> str:
        self.counter += 1
        return f"grad_{hint}_{self.counter}"

    def add(self, op_type, inputs, outputs, domain="", **attrs):
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.name(op_type), domain=domain, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            value = helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default


def _unsupported(node, what):
    return ResampleGradError(OP, f"node {node.name or node.op_type!r} ({node.op_type}): {what}")


# --------------------------------------------------------------------------- backward rules
# Each rule gets (builder, node, grad of each output, which inputs need a gradient) and returns
# the gradient name per input (None where not needed).

def _grid_sample(b: _Builder, node, grads, needed):
    mode = _attr(node, "mode", "bilinear")
    if mode not in GRID_SAMPLE_MODES:
        raise _unsupported(node, f"mode {mode!r} has no gradient op (bilinear/linear, nearest, bicubic/cubic)")
    padding = _attr(node, "padding_mode", "zeros")
    if padding not in PADDING_MODES:
        raise _unsupported(node, f"padding_mode {padding!r} is not supported")
    shape = b.shapes.get(node.input[0])
    rank = len(shape) if shape is not None else len(b.shapes.get(node.input[1]) or [])
    if rank not in (4, 5):
        raise _unsupported(node, "the rank of X must be known and 4 (GridSampler2DGrad) or 5 (GridSampler3DGrad), got "
                                 + (str(rank) if rank else "an unknown rank"))
    op_type = "GridSampler2DGrad" if rank == 4 else "GridSampler3DGrad"
    if rank == 5 and GRID_SAMPLE_MODES[mode] not in INTERPOLATION_MODES_3D:
        raise _unsupported(node, "cubic GridSample of a 5-D X has no gradient op (torch and CANN sample volumes "
                                 "bilinearly or nearest only)")
    outputs = [b.name("X") if needed[0] else "", b.name("grid") if needed[1] else ""]
    b.add(op_type, [grads[0], node.input[0], node.input[1]], outputs, domain=opset.DOMAIN,
          interpolation_mode=GRID_SAMPLE_MODES[mode], padding_mode=padding,
          align_corners=int(_attr(node, "align_corners", 0)))
    return [outputs[0] or None, outputs[1] or None]


RESIZE_ATTRIBUTES = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                     "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy")


def _resize(b: _Builder, node, grads, needed):
    """ResizeGrad with the forward's own roi / scales / sizes (run-time tensors) and attributes."""
    if any(needed[1:]):
        # strict=False: needed has an entry per input the node has; absent trailing inputs need nothing
        names = [n for n, k in zip(("roi", "scales", "sizes"), needed[1:], strict=False) if k]
        raise _unsupported(node, f"gradients for {', '.join(names)} are not defined (they only index the input)")
    if _attr(node, "mode", "nearest") not in ("nearest", "linear", "cubic"):
        raise _unsupported(node, f"mode {_attr(node, 'mode', None)!r} is not a Resize mode")
    if len(node.input) == 2:  # Resize-10 style scales without roi is not Resize-11+
        raise _unsupported(node, "a Resize with two inputs is Resize-10 (X, scales); convert the model to opset 11 "
                                 "or newer first")
    inputs = [grads[0], node.input[0]] + list(node.input[1:4]) + [""] * (4 - len(node.input))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name in RESIZE_ATTRIBUTES}
    out = b.add("ResizeGrad", inputs, [b.name("X")], domain=opset.DOMAIN, **attrs)
    return [out] + [None] * (len(node.input) - 1)


def _identity(b, node, grads, needed):
    return [grads[0]]


def _neg(b, node, grads, needed):
    return [b.add("Neg", [grads[0]], [b.name("neg")])]


def _add(b, node, grads, needed):
    return [grads[0] if n else None for n in needed]


def _sub(b, node, grads, needed):
    return [grads[0] if needed[0] else None, b.add("Neg", [grads[0]], [b.name("sub")]) if needed[1] else None]


def _mul(b, node, grads, needed):
    if all(needed):
        raise _unsupported(node, "Mul of two tensors that both need a gradient is not supported")
    other = node.input[1] if needed[0] else node.input[0]
    grad = b.add("Mul", [grads[0], other], [b.name("mul")])
    return [grad if needed[0] else None, grad if needed[1] else None]


def _div(b, node, grads, needed):
    if needed[1]:
        raise _unsupported(node, "Div needs a gradient for its divisor: not supported")
    return [b.add("Div", [grads[0], node.input[1]], [b.name("div")]), None]


RULES: dict[str, Callable] = {
    "GridSample": _grid_sample, "Resize": _resize, "Identity": _identity, "Neg": _neg,
    "Add": _add, "Sub": _sub, "Mul": _mul, "Div": _div,
}


def gradient_model(model: onnx.ModelProto, wrt: list[str], output: str | None = None) -> onnx.ModelProto:
    """A model computing the forward outputs and the gradients of `output` with respect to `wrt`."""
    model = copy.deepcopy(model)
    graph = model.graph
    output = output or graph.output[0].name
    if output not in {o.name for o in graph.output}:
        outputs = ", ".join(o.name for o in graph.output)
        raise ResampleGradError(OP, f"output {output!r} is not a graph output ({outputs})")
    inputs = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    for name in wrt:
        if name not in inputs:
            raise ResampleGradError(OP, f"wrt name {name!r} is not a graph input")
    b = _Builder(model)

    # values that depend on a wrt input, in forward order
    depends = set(wrt)
    for node in graph.node:
        if any(i in depends for i in node.input):
            depends.update(node.output)
    if output not in depends:
        raise ResampleGradError(OP, f"output {output!r} does not depend on {wrt}")

    grad_in = f"grad_{output}"
    grads: dict[str, str] = {output: grad_in}
    for node in reversed(list(graph.node)):
        if not any(o in grads for o in node.output):
            continue
        needed = [i in depends and i != "" for i in node.input]
        if not any(needed):
            continue
        rule = RULES.get(node.op_type)
        if rule is None or node.domain not in DEFAULT_DOMAINS:
            raise _unsupported(node, f"op {node.op_type!r} has no backward rule here (supported: {', '.join(RULES)})")
        if len(node.output) != 1:
            raise _unsupported(node, "only single-output forward ops are supported")
        input_grads = rule(b, node, [grads[node.output[0]]], needed)
        for name, grad in zip(node.input, input_grads, strict=True):  # a rule returns one gradient per input
            if grad is None or not name:
                continue
            if name in grads:  # a value used twice: gradients add
                grads[name] = b.add("Add", [grads[name], grad], [b.name("sum")])
            else:
                grads[name] = grad

    inferred_types = {v.name: v.type for v in list(b.inferred.graph.output) + list(b.inferred.graph.value_info)}
    declared_types = {o.name: o.type for o in graph.output}
    graph.input.append(helper.make_value_info(grad_in, inferred_types.get(output, declared_types[output])))
    for name in wrt:
        if name not in grads:
            raise ResampleGradError(OP, f"no gradient path from {name!r} to {output!r}")
        out_name = f"grad_{name}"
        b.add("Identity", [grads[name]], [out_name])
        source = next((i for i in graph.input if i.name == name), None)
        graph.output.append(helper.make_value_info(out_name, source.type) if source is not None
                            else helper.make_tensor_value_info(out_name, onnx.TensorProto.FLOAT, None))
    graph.node.extend(b.nodes)
    return opset.attach(model)
