"""--fallback node on a forward GridSample / Resize that no GE op computes on the product: the node is written in
standard ONNX ops (the tap engine's body, opset.inline(forward=...)'s), at ATC's opset, and computes what
onnxruntime's own GridSample / Resize compute on the original node (the oracle)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from test_ascend_forward import INFERENCE, _grid_model, _ort, _resize_model

from resample_grad import models, runtime
from resample_grad.converters import ascend
from resample_grad.opset import ResampleGradError
from test_ascend import A2, TRAINING

RNG = np.random.default_rng(35)

CASES = [  # model, product, why no GE op computes it
    (lambda: _grid_model(20, 2, "cubic", "reflection", 0), TRAINING, "not available on Atlas training series"),
    (lambda: _grid_model(20, 3, "linear", "reflection", 0), INFERENCE, "not available on Atlas inference series"),
    (lambda: _grid_model(18, 3, "nearest", "zeros", 1), INFERENCE, "not available on Atlas inference series"),
    (lambda: (_resize_model("asymmetric", [1, 2, 3, 4, 5], None, [1, 2, 6, 8, 10], mode="nearest"), None), A2,
     "mode 'nearest' (only 'linear' has a 5-D GE op here"),
    (lambda: (_resize_model("half_pixel", [1, 2, 3, 4, 5], None, [1, 2, 1, 8, 10]), None), A2,
     "half_pixel with an output axis of length 1"),
    (lambda: (_resize_model("align_corners", [1, 2, 3, 4, 5], [1, 1, 2, 2, 2], [1, 2, 6, 8, 10]), None), TRAINING,
     "not available on Atlas training series"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{c[2][:24]}" for c in CASES])
def test_fallback_node_writes_the_forward_node_in_standard_ops(case, tmp_path):
    build, soc, why = case
    model, feeds = build()
    if feeds is None:
        feeds = {"x": RNG.standard_normal([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
                 .astype(np.float32)}
    with pytest.raises(ResampleGradError, match="--fallback node writes"):
        ascend.to_ascend(model, soc=soc)
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path, fallback="node")
    (report,) = conversion.nodes
    assert report.ge_op is None and report.action.startswith("fallback: ") and why in report.action
    lowered = onnx.load(tmp_path / "model.ascend.onnx")
    assert {o.domain for o in lowered.opset_import} <= {"", "ai.onnx"} and not lowered.functions
    assert max(o.version for o in lowered.opset_import) <= ascend.ATC_MAX_OPSET
    assert not {n.op_type for n in lowered.graph.node} & {"GridSample", "Resize"}
    np.testing.assert_allclose(_ort(lowered, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("soc", [TRAINING, INFERENCE])
def test_registration_step_converts_with_fallback_node_on_every_family(soc):
    conversion = ascend.to_ascend(models.registration_step(), soc=soc, fallback="node")
    actions = {r.node: (r.ge_op, r.action.split(":")[0]) for r in conversion.nodes}
    assert set(actions) == {"Resize", "GridSample", "warp_backward", "upsample_backward"}
    assert any(ge is None for ge, _ in actions.values()) and any(ge for ge, _ in actions.values())


def test_registration_step_with_fallback_all_is_standard_onnx_at_opset_18():
    """The whole step (opset 20, 5-D GridSample, trilinear Resize and their gradients) in standard ONNX ATC reads:
    every output equal to the original model's on onnxruntime with this package's kernels."""
    model = models.registration_step()
    conversion = ascend.to_ascend(model, soc=A2, fallback="all")
    assert {o.domain: o.version for o in conversion.model.opset_import} == {"": 18}
    assert not conversion.model.functions
    assert all(r.ge_op is None for r in conversion.nodes)
    feeds = models.example_inputs("registration_step", seed=5, model=model)
    ours = _ort_all(conversion.model, feeds)
    for name, value in zip([o.name for o in model.graph.output], runtime.run(runtime.session(model), feeds),
                           strict=True):
        np.testing.assert_allclose(ours[name], value, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(value).max()))


def _ort_all(model, feeds) -> dict:
    import onnxruntime
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True))
