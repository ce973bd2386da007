"""resample_grad.training.Trainer on plain onnxruntime: the stored step models of models/optimizer_steps.py trained
against torch.optim, the state kept in onnxruntime between steps, checkpoints (this package's safetensors against
the `safetensors` package, both ways, and bit for bit), the inference model against torch's forward, bad input.

Also run on Python 3.12 and 3.13 (docs/training.md says how): this file and test_optimizer_step.py need only the
test extra.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest

from resample_grad.models import optimizer_steps
from resample_grad.training import Trainer, _safetensors

TASKS = optimizer_steps.TASKS


def stored(name: str) -> onnx.ModelProto:
    return onnx.load(str(optimizer_steps.path(name)))


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("kernels", [True, False], ids=["kernels", "functions"])
def test_stored_step_trains_as_torch_optim(name, kernels):
    """The stored step, 20 steps on the kernels and on the portable functions: the loss curve of torch.optim on the
    same module and batch (live; the model's recorded curve too, which must be the same)."""
    torch = pytest.importorskip("torch")
    del torch
    model = stored(name)
    trainer, (x, target) = Trainer(model, kernels=kernels), optimizer_steps.batch(name)
    ours = [trainer.step(x, target) for _ in range(optimizer_steps.STEPS)]
    want = optimizer_steps.torch_losses(name)
    np.testing.assert_allclose(optimizer_steps.recorded_losses(model), want, rtol=1e-5)  # (the model is not stale)
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-4 * want[0])
    assert ours[-1] < 0.5 * ours[0]


def test_trained_parameters_are_torch_optims():
    torch = pytest.importorskip("torch")
    module, optimizer = optimizer_steps.module_and_optimizer("unet")
    trainer = Trainer(stored("unet"))
    x, target = optimizer_steps.batch("unet")
    for _ in range(5):
        optimizer.zero_grad()
        optimizer_steps.mse(module(torch.from_numpy(x)), torch.from_numpy(target)).backward()
        optimizer.step()
        trainer.step(x, target)
    ours = trainer.parameters()
    assert set(ours) == set(module.state_dict())
    for name, value in module.state_dict().items():
        np.testing.assert_allclose(ours[name], value.numpy(), rtol=1e-4, atol=1e-4 * float(value.abs().max()),
                                   err_msg=name)


def test_state_stays_in_onnxruntime_between_steps():
    """IO binding: each step writes the state into the spare set of OrtValues and the two sets swap, so after two
    steps every state tensor is again in the memory it started in (no new allocation, no copy through numpy)."""
    trainer = Trainer(stored("spatial_transformer"))
    x, target = optimizer_steps.batch("spatial_transformer")
    start = {name: value.data_ptr() for name, value in trainer._state.items()}
    trainer.step(x, target)
    moved = {name for name, value in trainer._state.items() if value.data_ptr() != start[name]}
    assert moved == set(trainer.carried) and "optimizer.learning_rate" not in moved
    trainer.step(x, target)
    assert {name: value.data_ptr() for name, value in trainer._state.items()} == start


# --------------------------------------------------------------------------- checkpoints

def test_checkpoint_round_trip_is_bit_for_bit(tmp_path):
    """save, load, and the loaded trainer continues exactly as the saved one does: the same bits."""
    x, target = optimizer_steps.batch("registration3d")
    trainer = Trainer(optimizer_steps.path("registration3d"))
    for _ in range(3):
        trainer.step(x, target)
    trainer.learning_rate = 4e-3
    trainer.save(tmp_path / "checkpoint.safetensors")
    loaded = Trainer.load(tmp_path / "checkpoint.safetensors")  # (the step model it names)
    before, after = trainer.state(), loaded.state()
    assert list(before) == list(after) and loaded.steps == 3 and loaded.learning_rate == np.float32(4e-3)
    for name in before:
        assert before[name].dtype == after[name].dtype and before[name].tobytes() == after[name].tobytes(), name
    for _ in range(2):
        assert trainer.step(x, target) == loaded.step(x, target)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(trainer.state().values(), loaded.state().values(),
                                                          strict=True))


def _arrays():
    import ml_dtypes

    rng = np.random.default_rng(0)
    return {"conv.weight": rng.standard_normal((4, 2, 3, 3)).astype(np.float32),
            "b": rng.standard_normal(3),  # float64
            "optimizer.step": np.array(7, np.int64), "mask": rng.random((2, 5)) > 0.5, "half": np.float16([1.5, -2]),
            "bf": np.array([1.25, -3.5], ml_dtypes.bfloat16), "bytes": np.arange(5, dtype=np.uint8),
            "i32": np.array([[1, -2]], np.int32), "scalar": np.array(0.25, np.float32), "empty": np.zeros((0, 3))}


def test_safetensors_files_are_the_reference_implementations(tmp_path):
    """Against huggingface's safetensors (the Rust implementation, from PyPI): our file has the bytes of its file,
    it reads ours, we read its."""
    numpy_io = pytest.importorskip("safetensors.numpy")
    arrays = {k: v for k, v in _arrays().items() if k != "bf"}  # (safetensors.numpy has no bfloat16)
    metadata = {"format": "resample_grad.training.Trainer"}
    _safetensors.save(tmp_path / "ours.safetensors", arrays, metadata)
    numpy_io.save_file(arrays, str(tmp_path / "theirs.safetensors"), metadata=metadata)
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()
    theirs = numpy_io.load_file(str(tmp_path / "ours.safetensors"))
    ours, read_metadata = _safetensors.load(tmp_path / "theirs.safetensors")
    assert read_metadata == metadata
    for name, value in arrays.items():
        for got in (theirs[name], ours[name]):
            assert got.dtype == value.dtype and got.shape == value.shape and got.tobytes() == value.tobytes(), name


def test_safetensors_bfloat16_against_torch(tmp_path):
    """bfloat16 (ml_dtypes here) read by safetensors' torch loader, and a torch bfloat16 file read back."""
    torch = pytest.importorskip("torch")
    torch_io = pytest.importorskip("safetensors.torch")
    arrays = _arrays()
    _safetensors.save(tmp_path / "ours.safetensors", arrays)
    loaded = torch_io.load_file(str(tmp_path / "ours.safetensors"))
    assert loaded["bf"].dtype == torch.bfloat16 and loaded["bf"].float().tolist() == [1.25, -3.5]
    torch_io.save_file({"bf": loaded["bf"]}, str(tmp_path / "torch.safetensors"))
    assert _safetensors.load(tmp_path / "torch.safetensors")[0]["bf"].tobytes() == arrays["bf"].tobytes()


def test_checkpoint_is_a_safetensors_file_of_the_state(tmp_path):
    numpy_io = pytest.importorskip("safetensors.numpy")
    trainer = Trainer(stored("unet"))
    trainer.save(tmp_path / "unet.safetensors")
    theirs = numpy_io.load_file(str(tmp_path / "unet.safetensors"))
    assert set(theirs) == set(trainer.state()) and "optimizer.enc1.0.weight.momentum_buffer" in theirs


def _file(header: bytes, data_bytes: int) -> bytes:
    return len(header).to_bytes(8, "little") + header + b"\0" * data_bytes


@pytest.mark.parametrize("data,message", [
    (b"\x05", "shorter than the 8-byte header length"),
    ((10**9).to_bytes(8, "little") + b"{}", "a header length of 1000000000 bytes"),
    ((2).to_bytes(8, "little") + b"[]", "its header is not a JSON object"),
    ((4).to_bytes(8, "little") + b"{x}:", "its header is not JSON"),
    (_file(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', 4),
     r"tensor 'a''s data_offsets \[0, 4\] do not follow the previous tensor's end 0 or do not hold \[2\] of F32"),
    (_file(b'{"a":{"dtype":"X9","shape":[],"data_offsets":[0,4]}}', 4),
     "tensor 'a' has a malformed entry"),
])
def test_malformed_checkpoint_is_named(data, message, tmp_path):
    (tmp_path / "bad.safetensors").write_bytes(data)
    with pytest.raises(_safetensors.CheckpointError, match=message):
        Trainer.load(tmp_path / "bad.safetensors", optimizer_steps.path("unet"))


def test_checkpoint_of_another_model_is_named(tmp_path):
    Trainer(stored("spatial_transformer")).save(tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="names no step model file .* pass step_model"):
        Trainer.load(tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match=r"does not fit the step model: it lacks \['dec1.0.weight', "):
        Trainer.load(tmp_path / "other.safetensors", stored("unet"))


# --------------------------------------------------------------------------- inference model

@pytest.mark.parametrize("name", TASKS)
def test_inference_model_is_torchs_forward_with_the_trained_weights(name, tmp_path):
    torch = pytest.importorskip("torch")
    import onnxruntime

    trainer = Trainer(stored(name))
    x, target = optimizer_steps.batch(name)
    for _ in range(3):
        trainer.step(x, target)
    model = trainer.export_inference_model(tmp_path / "inference.onnx")
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["input_0"] and [o.name for o in model.graph.output] == ["output_0"]
    module, _ = optimizer_steps.module_and_optimizer(name)
    module.load_state_dict({k: torch.from_numpy(v) for k, v in trainer.parameters().items()})
    want = module.eval()(torch.from_numpy(x)).detach().numpy()
    got = onnxruntime.InferenceSession(str(tmp_path / "inference.onnx")).run(None, {"input_0": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * float(np.abs(want).max()))


# --------------------------------------------------------------------------- bad input and imports

def test_bad_input_is_named():
    trainer = Trainer(stored("unet"))
    x, target = optimizer_steps.batch("unet")
    with pytest.raises(TypeError, match=r"Trainer.step: expected 2 arrays \(input_0, target_0\), got 1"):
        trainer.step(x)
    with pytest.raises(ValueError, match=r"Trainer.step: target_0 must be float32 of shape \[2, 1, 16, 16\], got "
                                         r"float64 of shape \[2, 1, 16, 16\]"):
        trainer.step(x, target.astype(np.float64))
    with pytest.raises(ValueError, match=r"input_0 must be float32 of shape \[2, 1, 16, 16\], got float32 of shape"):
        trainer.step(x[:1], target)
    from resample_grad import models
    with pytest.raises(ValueError, match="the step model has no optimizer"):
        Trainer(models.unet_training_step())
    with pytest.raises(FileNotFoundError, match="cannot read step model 'nowhere.onnx'"):
        Trainer("nowhere.onnx")
    with pytest.raises(TypeError, match="step_model must be an onnx.ModelProto or a path, got int"):
        Trainer(3)


def test_trainer_imports_neither_torch_nor_onnxruntime_training():
    code = ("import sys; from resample_grad.training import Trainer; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('onnxruntime.training')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
