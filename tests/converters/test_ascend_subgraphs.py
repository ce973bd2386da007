"""to_ascend on a model whose resample_grad nodes sit inside If / Loop bodies: each becomes its standard-ONNX body
(the converter plans GE ops from main-graph shapes only), and the converted model computes what the original does.

Oracle: the gradient of a 2x nearest upsampling is the sum over each 2x2 block of dy (torch's upsample_nearest2d
backward, written here with NumPy's reshape)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from resample_grad import opset
from resample_grad.constants import VERSION
from resample_grad.converters.ascend import to_ascend
from resample_grad.opset._common import walk


def _if_model() -> onnx.ModelProto:
    """dx = If(c, UpsampleNearest2dGrad(dy) [sizes], UpsampleNearest2dGrad(dy) [scales 2]) inside a Loop-free If."""
    branches = []
    for name, scales in (("then", {}), ("else", {"scales_h": 2.0, "scales_w": 2.0})):
        node = helper.make_node("UpsampleNearest2dGrad", ["dy"], [f"{name}_dx"], domain=opset.DOMAIN,
                                name=f"{name}_grad", output_size=[8, 8], input_size=[2, 3, 4, 4], **scales)
        branches.append(helper.make_graph([node], name, [], [
            helper.make_tensor_value_info(f"{name}_dx", TensorProto.FLOAT, [2, 3, 4, 4])]))
    node = helper.make_node("If", ["c"], ["dx"], name="choose", then_branch=branches[0], else_branch=branches[1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("dy", TensorProto.FLOAT, [2, 3, 8, 8]),
                                            helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("dx", TensorProto.FLOAT, [2, 3, 4, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(opset.DOMAIN, VERSION)])


@pytest.mark.parametrize("fallback", [None, "node", "all"])
def test_nodes_in_subgraphs_become_their_standard_bodies(fallback):
    conversion = to_ascend(_if_model(), fallback=fallback)
    model = conversion.model
    onnx.checker.check_model(model, full_check=True)
    left = [n for n in walk(model.graph.node) if n.domain not in ("", "ai.onnx")]
    assert not left and not model.functions
    assert {o.domain for o in model.opset_import} <= {"", "ai.onnx"}
    reports = {r.node: r.action for r in conversion.nodes}
    assert set(reports) == {"then_grad", "else_grad"}
    assert all(a.startswith("fallback") for a in reports.values())
    if fallback is None:
        assert "inside a subgraph of If node 'choose'" in reports["then_grad"]

    dy = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    expected = dy.reshape(2, 3, 4, 2, 4, 2).sum(axis=(3, 5))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for c in (True, False):
        (dx,) = session.run(None, {"dy": dy, "c": np.array(c)})
        np.testing.assert_allclose(dx, expected, rtol=1e-6, atol=1e-6)
