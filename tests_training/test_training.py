"""onnxruntime-training's API trains the table's models on the CPU with resample_grad.training, as torch does.

For every forward model of cases.py: resample_grad.training.generate_artifacts builds the artifacts (MSE loss,
SGD), a CPU api.Module with session_options() computes the loss and every parameter's gradient for one batch, equal
to torch autograd's to 1e-4 relative (float32), and one api.Optimizer step moves every parameter as
torch.optim.SGD's step did. References: make_cases.py (torch, in another environment).
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from cases import CASES, LEARNING_RATE, TOLERANCE
from resample_grad import runtime, training
from resample_grad.training import api, artifacts


def relative_error(ours, reference) -> float:
    ours, reference = np.asarray(ours, np.float64), np.asarray(reference, np.float64)
    assert ours.shape == reference.shape, f"shape {ours.shape}, expected {reference.shape}"
    scale = np.abs(reference).max()
    difference = np.abs(ours - reference).max()
    return float(difference / scale) if scale > 0 else float(difference)


class Trained:
    """generate_artifacts, then one training step and one SGD step on a CPU Module; what they gave."""

    def __init__(self, model, reference, folder: pathlib.Path, **options):
        self.params = [k[len("grad:"):] for k in reference.files if k.startswith("grad:")]
        graph_inputs = [i.name for i in (model if isinstance(model, onnx.ModelProto) else onnx.load(model)).graph.input]
        self.inputs = [reference["input:" + name] for name in graph_inputs if "input:" + name in reference.files]
        training.generate_artifacts(model, requires_grad=self.params, loss=artifacts.LossType.MSELoss,
                                    optimizer=artifacts.OptimType.SGD, artifact_directory=folder, **options)
        suffix = ".ort" if options.get("ort_format") else ".onnx"
        self.state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
        self.module = api.Module(str(folder / f"training_model{suffix}"), self.state,
                                 str(folder / f"eval_model{suffix}"), device="cpu",
                                 session_options=training.session_options())
        self.optimizer = api.Optimizer(str(folder / f"optimizer_model{suffix}"), self.module)
        self.optimizer.set_learning_rate(LEARNING_RATE)
        self.module.train()
        self.loss = float(self.module(*self.inputs, reference["target"]))
        self.grads = {p: np.array(self.state.parameters[p].grad) for p in self.params}
        self.before = {p: np.array(self.state.parameters[p].data) for p in self.params}
        self.optimizer.step()
        self.after = {p: np.array(self.state.parameters[p].data) for p in self.params}

    def errors(self, reference) -> dict:
        """Relative error of the loss, of each gradient ("grad p") and of each SGD step ("step p")."""
        errors = {"loss": relative_error(self.loss, reference["loss"])}
        for p in self.params:
            np.testing.assert_array_equal(self.before[p], reference["param:" + p])  # the exported values
            errors["grad " + p] = relative_error(self.grads[p], reference["grad:" + p])
            errors["step " + p] = relative_error(self.after[p] - self.before[p],
                                                 reference["sgd:" + p] - reference["param:" + p])
        return errors


def check(trained: Trained, reference, name: str) -> None:
    errors = trained.errors(reference)
    bad = {k: v for k, v in errors.items() if not v <= TOLERANCE}
    assert not bad, f"{name}: relative errors above {TOLERANCE} against torch: {bad}"


@pytest.mark.parametrize("name", list(CASES))
def test_one_training_step_equals_torch(name, cases_dir, tmp_path):
    reference = np.load(cases_dir / f"{name}.npz")
    model = onnx.load(str(cases_dir / f"{name}.onnx"))
    trained = Trained(model, reference, tmp_path)
    check(trained, reference, name)
    # the eval session (the eval model with its com.microsoft import) computes the loss the parameters now give
    trained.module.eval()
    assert np.isfinite(float(trained.module(*trained.inputs, reference["target"])))


@pytest.mark.parametrize("name", ["warp_two_op20", "stn_bicubic_border_ac_op20", "unet_bilinear_op17",
                                  "warp3d_nearest_border_ac1_op20"])
def test_unnamed_nodes_and_a_path(name, cases_dir, tmp_path):
    """The builder names gradient nodes after their forward node: generate_artifacts names unnamed nodes first."""
    model = onnx.load(str(cases_dir / f"{name}.onnx"))
    for node in model.graph.node:
        node.name = ""
    path = tmp_path / "forward.onnx"
    onnx.save(model, str(path))
    reference = np.load(cases_dir / f"{name}.npz")
    check(Trained(path, reference, tmp_path / "artifacts"), reference, name)


@pytest.mark.parametrize("name", ["warp_two_op17", "unet_bicubic_op20", "stn3d_op20"])
def test_ort_format_artifacts(name, cases_dir, tmp_path):
    reference = np.load(cases_dir / f"{name}.npz")
    trained = Trained(onnx.load(str(cases_dir / f"{name}.onnx")), reference, tmp_path, ort_format=True)
    assert sorted(p.name for p in tmp_path.glob("*.ort")) == ["eval_model.ort", "optimizer_model.ort",
                                                              "training_model.ort"]
    check(trained, reference, name)


def test_artifacts_read_by_onnxruntime_1_19(cases_dir, tmp_path):
    """Every artifact imports com.microsoft (the training library's domain) and has an IR version onnxruntime reads;
    each GridSample's gradient node carries its forward node's attributes."""
    model = onnx.load(str(cases_dir / "warp_two_op20.onnx"))
    Trained(model, np.load(cases_dir / "warp_two_op20.npz"), tmp_path)
    for kind in ("training", "eval", "optimizer"):
        artifact = onnx.load(str(tmp_path / f"{kind}_model.onnx"))
        assert any(o.domain == "com.microsoft" for o in artifact.opset_import), kind
        assert artifact.ir_version <= 10, kind
    trained = onnx.load(str(tmp_path / "training_model.onnx"))
    grads = sorted((n.op_type, tuple(sorted((a.name, helper.get_attribute_value(a)) for a in n.attribute)))
                   for n in trained.graph.node if n.domain == "resample_grad")
    assert grads == [("GridSampler2DGrad", (("align_corners", 0), ("interpolation_mode", b"bilinear"),
                                            ("padding_mode", b"zeros"))),
                     ("GridSampler2DGrad", (("align_corners", 1), ("interpolation_mode", b"bicubic"),
                                            ("padding_mode", b"reflection")))]


def test_exported_inference_model_runs_on_plain_session_options(cases_dir, tmp_path):
    reference = np.load(cases_dir / "unet_bilinear_op17.npz")
    trained = Trained(onnx.load(str(cases_dir / "unet_bilinear_op17.onnx")), reference, tmp_path)
    trained.module.export_model_for_inferencing(str(tmp_path / "inference.onnx"), ["output"])
    import onnxruntime

    session = onnxruntime.InferenceSession(str(tmp_path / "inference.onnx"), runtime.session_options(),
                                           providers=["CPUExecutionProvider"])
    assert session.run(None, {"input": trained.inputs[0]})[0].shape == reference["target"].shape


def test_torch_is_not_imported():
    assert "torch" not in sys.modules
    assert training.available()


# --------------------------------------------------------------------------- refusals

def _resize_model(policy: str) -> onnx.ModelProto:
    conv = helper.make_node("Conv", ["input", "w"], ["h"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    resize = helper.make_node("Resize", ["h", "", "", "sizes"], ["output"], mode="linear", axes=[2, 3],
                              keep_aspect_ratio_policy=policy)
    graph = helper.make_graph([conv, resize], "g",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 4, 6])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, None, None])],
                              initializer=[helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [0.1] * 9),
                                           helper.make_tensor("sizes", TensorProto.INT64, [2], [8, 9])])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 19)])


def test_keep_aspect_ratio_policy_without_scales_is_refused(tmp_path):
    training.generate_artifacts(_resize_model("not_larger"), requires_grad=["w"], loss=artifacts.LossType.MSELoss,
                                artifact_directory=tmp_path)
    state = api.CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))
    module = api.Module(str(tmp_path / "training_model.onnx"), state, str(tmp_path / "eval_model.onnx"), device="cpu",
                        session_options=training.session_options())
    module.train()
    with pytest.raises(Exception, match="keep_aspect_ratio_policy 'not_larger' needs input 'scales'"):
        module(np.ones((1, 1, 4, 6), np.float32), np.ones((1, 1, 6, 9), np.float32))  # 4x6 by min(8/4, 9/6)


def _grid_sample_model(rank: int, mode: str) -> onnx.ModelProto:
    spatial = [3, 4, 5][: rank - 2]
    graph = helper.make_graph(
        [helper.make_node("Add", ["grid", "offset"], ["moved"]),
         helper.make_node("GridSample", ["x", "moved"], ["output"], mode=mode)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1] + spatial),
              helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1] + spatial + [rank - 2])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1] + spatial)],
        initializer=[helper.make_tensor("offset", TensorProto.FLOAT, [rank - 2], [0.1] * (rank - 2))])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 20)])


def test_five_dimensional_cubic_grid_sample_is_refused(tmp_path):
    with pytest.raises(ValueError,
                       match="GridSample node .* is 5-D with mode 'cubic'; GridSampler3DGrad has bilinear and nearest"):
        training.generate_artifacts(_grid_sample_model(5, "cubic"), requires_grad=["offset"],
                                    loss=artifacts.LossType.MSELoss, artifact_directory=tmp_path)


def test_another_custom_op_library_with_grid_sample_is_refused(tmp_path):
    with pytest.raises(ValueError, match="takes one custom-op library and this model's GridSample gradients need"):
        training.generate_artifacts(_grid_sample_model(4, "linear"), requires_grad=["offset"],
                                    loss=artifacts.LossType.MSELoss, artifact_directory=tmp_path,
                                    custom_op_library=runtime.training_library_path())
