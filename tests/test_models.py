"""The example models: valid, and their gradients equal torch autograd of the same forward."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from conftest import PATHS
from resample_grad import models
from resample_grad.cli import random_inputs, run_on

torch = pytest.importorskip("torch")
F = torch.nn.functional
RUNS = {"reference": "reference", "function": "functions", "kernel": "kernels"}


@pytest.mark.parametrize("name", list(models.BUILDERS))
def test_model_passes_full_check(name):
    onnx.checker.check_model(models.BUILDERS[name](), full_check=True)


@pytest.mark.parametrize("path", PATHS)
def test_spatial_transformer_step_matches_torch_autograd(path):
    model = models.spatial_transformer_step()
    feeds = random_inputs(model, seed=3)
    feeds["theta"] = (np.array([[0.9, 0.2, 0.1], [-0.15, 1.1, -0.05]]) + 0.05 * np.random.default_rng(1).standard_normal(
        (2, 2, 3))).astype(np.float32)
    out = run_on(model, feeds, RUNS[path])
    x = torch.from_numpy(feeds["x"]).requires_grad_()
    theta = torch.from_numpy(feeds["theta"]).requires_grad_()
    grid = F.affine_grid(theta, [2, 3, 24, 24], align_corners=False)
    y = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    loss = ((y - torch.from_numpy(feeds["target"])) ** 2).mean()
    grad_x, grad_theta = torch.autograd.grad(loss, [x, theta])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-5)
    np.testing.assert_allclose(out["grad_x"], grad_x.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out["grad_theta"], grad_theta.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("path", PATHS)
def test_decoder_step_matches_torch_autograd(path):
    model = models.decoder_step()
    feeds = random_inputs(model, seed=4)
    out = run_on(model, feeds, RUNS[path])
    z = torch.from_numpy(feeds["z"]).requires_grad_()
    up1 = F.interpolate(z, scale_factor=2, mode="nearest-exact")
    up2 = F.interpolate(up1, scale_factor=2, mode="bilinear", align_corners=False)
    loss = (up2 * torch.from_numpy(feeds["weight"])).sum()
    (grad_z,) = torch.autograd.grad(loss, [z])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-4)
    np.testing.assert_allclose(out["grad_z"], grad_z.numpy(), rtol=1e-4, atol=1e-5)


def _unet_step_oracle(feeds):
    """torch autograd of models/unet_step.py's module with the parameters and buffers of feeds (train mode)."""
    from resample_grad.models import unet_step

    module = unet_step.unet()
    module.load_state_dict({k: torch.from_numpy(v) for k, v in feeds.items() if k in module.state_dict()})
    params = dict(module.named_parameters())
    loss = unet_step.mse(module(torch.from_numpy(feeds["input_0"])), torch.from_numpy(feeds["target_0"]))
    grads = torch.autograd.grad(loss, list(params.values()))
    return {"loss": loss, **{f"grad_{n}": g for n, g in zip(params, grads)},
            **{f"{n}_updated": b for n, b in module.named_buffers()}}


@pytest.mark.parametrize("path", PATHS)
def test_unet_training_step_matches_torch_autograd(path):
    from resample_grad.models import unet_step

    model = models.unet_training_step()
    module = unet_step.unet()
    state = {k: v.numpy() for k, v in module.state_dict().items()}
    feeds = {**random_inputs(model, seed=5), **state}
    out = run_on(model, feeds, RUNS[path])
    want = _unet_step_oracle(feeds)
    assert list(out) == list(want)
    assert [i.name for i in model.graph.input] == ["input_0", "target_0", *dict(module.named_parameters()),
                                                   *dict(module.named_buffers())]
    assert {"UpsampleNearest2dGrad", "ResizeBilinearV2Grad"} <= {n.op_type for n in model.graph.node}
    for name, value in want.items():
        np.testing.assert_allclose(out[name], value.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_stored_unet_training_step_is_what_unet_step_exports(tmp_path):
    """models/unet_training_step.onnx is not stale: the same inputs, outputs and nodes as an export now."""
    from resample_grad.models import unet_step

    stored, fresh = models.unet_training_step(), unet_step.export(tmp_path / "fresh.onnx")

    def summary(model):
        return ([(v.name, str(v.type)) for v in [*model.graph.input, *model.graph.output]],
                sorted((n.domain, n.op_type) for n in model.graph.node))
    assert summary(stored) == summary(fresh)
