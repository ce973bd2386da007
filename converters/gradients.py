"""Gradient graphs for ONNX forward models that use GridSample and Resize.

    gradient_model(model, wrt=["x", "grid"], output=None) -> ModelProto

The result takes the forward inputs plus `grad_<output>` (the gradient flowing into the
chosen output) and returns the forward outputs plus `grad_<name>` for every name in wrt.
It back-propagates through a chain of supported ops (no full autodiff engine):

| forward op | backward |
|---|---|
| GridSample (opset 16 and 20 spellings), 4-D | GridSampler2DGrad: the grad of X and/or grid, only what wrt needs |
| Resize, linear, coordinate_transformation_mode align_corners / half_pixel / pytorch_half_pixel (output sizes > 1) / asymmetric | ResizeBilinearV2Grad (align_corners=1 / half_pixel_centers=1 / both 0) |
| Resize, nearest, half_pixel + round_prefer_ceil (torch's nearest-exact export), 3-D or 4-D | UpsampleNearestExact1dGrad / 2dGrad |
| Identity, Neg, Add, Sub, Mul, Div (by a tensor that needs no gradient) | the usual rules, shapes as the forward |

Anything else on the path from wrt to the output raises ResampleGradError naming the node and
the attribute value. Resize must scale only the spatial axes, with antialias=0, and its input
shape must be known (it becomes input_size).
"""
from __future__ import annotations

import copy
from typing import Callable, Dict, List, Optional

import onnx
from onnx import helper, numpy_helper

from resample_grad import opset
from resample_grad.opset import ResampleGradError

OP = "gradient_model"

GRID_SAMPLE_MODES = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest", "bicubic": "bicubic", "cubic": "bicubic"}


class _Builder:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.inferred = onnx.shape_inference.infer_shapes(model)
        self.shapes = {}
        for value in list(self.inferred.graph.input) + list(self.inferred.graph.value_info) + list(self.inferred.graph.output):
            dims = value.type.tensor_type.shape.dim
            self.shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        self.constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        self.nodes: List[onnx.NodeProto] = []
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
    if padding not in ("zeros", "border", "reflection"):
        raise _unsupported(node, f"padding_mode {padding!r} is not supported")
    shape = b.shapes.get(node.input[0])
    if shape is not None and len(shape) != 4:
        raise _unsupported(node, f"only 4-D GridSample maps onto GridSampler2DGrad, X has rank {len(shape)}")
    outputs = [b.name("X") if needed[0] else "", b.name("grid") if needed[1] else ""]
    b.add("GridSampler2DGrad", [grads[0], node.input[0], node.input[1]], outputs, domain=opset.DOMAIN,
          interpolation_mode=GRID_SAMPLE_MODES[mode], padding_mode=padding, align_corners=int(_attr(node, "align_corners", 0)))
    return [outputs[0] or None, outputs[1] or None]


def _resize(b: _Builder, node, grads, needed):
    if needed[1:] and any(needed[1:]):
        raise _unsupported(node, "gradients for roi, scales or sizes are not defined")
    mode = _attr(node, "mode", "nearest")
    transform = _attr(node, "coordinate_transformation_mode", "half_pixel")
    nearest_mode = _attr(node, "nearest_mode", "round_prefer_floor")
    if _attr(node, "antialias", 0):
        raise _unsupported(node, "antialias=1 is not supported")
    if _attr(node, "axes", None) is not None:
        raise _unsupported(node, "the axes attribute is not supported; give scales or sizes for every axis")
    x_shape = b.shapes.get(node.input[0])
    y_shape = b.shapes.get(node.output[0])
    if not x_shape or any(d is None for d in x_shape[2:]) or not y_shape or any(d is None for d in y_shape[2:]):
        raise _unsupported(node, "the spatial input and output sizes must be known (shape inference could not tell)")
    rank = len(x_shape)
    if y_shape[:2] != x_shape[:2] and all(d is not None for d in x_shape[:2] + y_shape[:2]):
        raise _unsupported(node, f"only the spatial axes may be resized, got {x_shape} -> {y_shape}")
    scales = None
    if len(node.input) > 2 and node.input[2] and node.input[2] in b.constants and b.constants[node.input[2]].size:
        scales = [float(s) for s in b.constants[node.input[2]]]
        if scales[:2] != [1.0, 1.0]:
            raise _unsupported(node, f"scales {scales} resize N or C; only the spatial axes may be resized")
        scales = scales[2:]
    input_size = [-1, -1] + list(x_shape[2:])
    if mode == "linear":
        if rank != 4:
            raise _unsupported(node, f"linear Resize of rank {rank} has no gradient op (ResizeBilinearV2Grad is 2-D)")
        if transform == "pytorch_half_pixel" and min(y_shape[2:]) <= 1:
            raise _unsupported(node, "coordinate_transformation_mode 'pytorch_half_pixel' with an output size of 1 "
                                     "(it then samples pixel 0, which no gradient op models)")
        flags = {"align_corners": (1, 0), "half_pixel": (0, 1), "pytorch_half_pixel": (0, 1), "asymmetric": (0, 0)}
        if transform not in flags:
            raise _unsupported(node, f"coordinate_transformation_mode {transform!r} with mode 'linear' has no gradient "
                                     f"op (align_corners, half_pixel, pytorch_half_pixel, asymmetric map)")
        corners, half = flags[transform]
        out = b.add("ResizeBilinearV2Grad", [grads[0], node.input[0]], [b.name("X")], domain=opset.DOMAIN,
                    align_corners=corners, half_pixel_centers=half, scales=scales or [0.0, 0.0])
        return [out] + [None] * (len(node.input) - 1)
    if mode == "nearest":
        if transform != "half_pixel" or nearest_mode != "round_prefer_ceil":
            raise _unsupported(node, f"nearest Resize with coordinate_transformation_mode {transform!r} and nearest_mode "
                                     f"{nearest_mode!r} has no gradient op (half_pixel + round_prefer_ceil maps: "
                                     f"nearest-exact)")
        if rank == 3:
            out = b.add("UpsampleNearestExact1dGrad", [grads[0]], [b.name("X")], domain=opset.DOMAIN,
                        input_size=input_size, scales=(scales or [0.0])[0])
        elif rank == 4:
            out = b.add("UpsampleNearestExact2dGrad", [grads[0]], [b.name("X")], domain=opset.DOMAIN,
                        input_size=input_size, scales_h=(scales or [0.0, 0.0])[0], scales_w=(scales or [0.0, 0.0])[1])
        else:
            raise _unsupported(node, f"nearest Resize of rank {rank} has no gradient op (1-D and 2-D map)")
        return [out] + [None] * (len(node.input) - 1)
    raise _unsupported(node, f"mode {mode!r} has no gradient op (linear and nearest map)")


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


RULES: Dict[str, Callable] = {
    "GridSample": _grid_sample, "Resize": _resize, "Identity": _identity, "Neg": _neg,
    "Add": _add, "Sub": _sub, "Mul": _mul, "Div": _div,
}


def gradient_model(model: onnx.ModelProto, wrt: List[str], output: Optional[str] = None) -> onnx.ModelProto:
    """A model computing the forward outputs and the gradients of `output` with respect to `wrt`."""
    model = copy.deepcopy(model)
    graph = model.graph
    output = output or graph.output[0].name
    if output not in {o.name for o in graph.output}:
        raise ResampleGradError(OP, f"output {output!r} is not a graph output ({', '.join(o.name for o in graph.output)})")
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
    grads: Dict[str, str] = {output: grad_in}
    for node in reversed(list(graph.node)):
        if not any(o in grads for o in node.output):
            continue
        needed = [i in depends and i != "" for i in node.input]
        if not any(needed):
            continue
        rule = RULES.get(node.op_type)
        if rule is None or node.domain not in ("", "ai.onnx"):
            raise _unsupported(node, f"op {node.op_type!r} has no backward rule here (supported: {', '.join(RULES)})")
        if len(node.output) != 1:
            raise _unsupported(node, "only single-output forward ops are supported")
        input_grads = rule(b, node, [grads[node.output[0]]], needed)
        for name, grad in zip(node.input, input_grads):
            if grad is None or not name:
                continue
            if name in grads:  # a value used twice: gradients add
                grads[name] = b.add("Add", [grads[name], grad], [b.name("sum")])
            else:
                grads[name] = grad

    inferred_types = {v.name: v.type for v in list(b.inferred.graph.output) + list(b.inferred.graph.value_info)}
    graph.input.append(helper.make_value_info(grad_in, inferred_types.get(output, {o.name: o.type for o in graph.output}[output])))
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
