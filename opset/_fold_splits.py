"""A pass of inline()'s folding (imported with onnx_ir, when inline() runs): each main-graph Split of constants becomes
its parts as initializers. onnxscript's folder skips every node of more than one output, so what is computed from a
Split of constants stayed a computation; folded, it folds too.

OpenVINO 2026.4.1 needs it: a square matrix computed from constants that is B of one MatMul and, transposed, of
another gives the second one wrong (docs/ops.md, "Portable form"); kornia's warp_affine step inverts a constant
3 x 3 matrix through Splits. Folded, the matrix and its transpose are two initializers, which it computes right.
"""
from __future__ import annotations

import onnx
import onnx_ir as ir
from onnx.reference import ReferenceEvaluator


class FoldConstantSplits(ir.passes.InPlacePass):
    def __init__(self, input_size_limit: int, should_fold):
        super().__init__()
        self.input_size_limit = input_size_limit
        self.should_fold = should_fold  # False: the node stays (onnxscript's FoldConstantsPass's argument)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph, changed = model.graph, False
        for node in list(graph):
            inputs = [v for v in node.inputs if v is not None]
            if (node.op_type != "Split" or node.domain not in ("", "ai.onnx")
                    or any(v.const_value is None for v in inputs)
                    or sum(v.const_value.size for v in inputs) > self.input_size_limit
                    or any(v.is_graph_output() for v in node.outputs) or self.should_fold(node) is False):
                continue
            parts = _evaluate(node, inputs, model.opset_imports.get("", 1))
            for value, part in zip(list(node.outputs), parts, strict=True):
                folded = ir.Value(name=value.name, const_value=ir.tensor(part, name=value.name))
                ir.convenience.replace_all_uses_with(value, folded)
                value.name = None
                graph.register_initializer(folded)
            graph.remove(node, safe=True)
            changed = True
        return ir.passes.PassResult(model, changed)


def _evaluate(node: ir.Node, inputs: list, version: int) -> list:
    """The node's outputs by onnx's reference implementation."""
    proto = onnx.helper.make_model(onnx.helper.make_graph(
        [ir.serde.serialize_node(node)], node.op_type,
        [onnx.helper.make_tensor_value_info(v.name, v.const_value.dtype.value, None) for v in inputs],
        [onnx.helper.make_tensor_value_info(v.name, 0, None) for v in node.outputs]),
        opset_imports=[onnx.helper.make_opsetid("", version)])
    return ReferenceEvaluator(proto).run(None, {v.name: v.const_value.numpy() for v in inputs})
