"""The newest IR version the installed onnxruntime loads, probed with a one-node model.

Shared by resample_grad.opset and resample_grad.training, so it needs only what onnx 1.16 has
(training's environment) and takes the onnxruntime module from its caller.
"""
from __future__ import annotations

from resample_grad.constants import FUNCTION_IR_VERSION


def max_ir_version(onnxruntime) -> int:
    """The newest IR version, from onnx's own down to FUNCTION_IR_VERSION, for which `onnxruntime` opens an
    Identity model; FUNCTION_IR_VERSION when it opens none (the caller then meets the real error)."""
    import onnx
    from onnx import helper

    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
    for ir in range(onnx.IR_VERSION, FUNCTION_IR_VERSION - 1, -1):
        model = helper.make_model(graph, ir_version=ir, opset_imports=[helper.make_opsetid("", 17)])
        try:
            onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            return ir
        except Exception:  # noqa: BLE001 - any refusal means "too new"
            continue
    return FUNCTION_IR_VERSION
