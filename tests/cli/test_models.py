"""The example models: valid, and their gradients equal torch autograd of the same forward, on every path."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from conftest import PATHS
from resample_grad import models
from resample_grad.paths import random_inputs, run_on

torch = pytest.importorskip("torch")
F = torch.nn.functional
RUNS = {"reference": "reference", "function": "functions", "kernel": "kernels"}
STEPS = ("spatial_transformer_step", "decoder_step", "fpn_decoder_step", "registration_step", "super_resolution_step",
         "resize_training_step", "unet_training_step")


def _tensors(feeds, *names):
    return [torch.from_numpy(feeds[name]).requires_grad_() for name in names]


def _close(ours, theirs, tolerance=1e-5):
    """max |ours - torch| / max |torch| (float32 sums in another order differ by a few ulps of the largest term)."""
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    error = np.abs(ours.astype(np.float64) - theirs).max() / np.abs(theirs).max()
    assert error <= tolerance, f"max |ours - torch| / max |torch| = {error:.2e} > {tolerance:.0e}"


@pytest.mark.parametrize("name", list(models.BUILDERS))
def test_model_passes_full_check_and_carries_its_functions(name):
    model = models.BUILDERS[name]()
    onnx.checker.check_model(model, full_check=True)
    ops = {n.op_type for n in model.graph.node if n.domain == "resample_grad"}
    assert ops and ops == {f.name for f in model.functions if f.domain == "resample_grad"}


def test_every_op_has_a_single_op_model_and_every_model_a_test():
    from resample_grad import opset
    single = {next(n.op_type for n in models.BUILDERS[name]().graph.node)
              for name in models.BUILDERS if name not in STEPS}
    assert single == set(opset.OPS)
    assert set(models.BUILDERS) == set(SINGLE_OP_FORWARDS) | set(STEPS)


# --------------------------------------------------------------------------- one model per op
# model -> the torch forward whose autograd the op computes, from the tensor the op's output is the gradient of

SINGLE_OP_FORWARDS = {
    "upsample_nearest_exact1d_grad": lambda x: F.interpolate(x, size=250, mode="nearest-exact"),
    "upsample_nearest_exact2d_grad": lambda x: F.interpolate(x, scale_factor=(2.5, 1.5), mode="nearest-exact"),
    "resize_bilinear_v2_grad": lambda x: F.interpolate(x, size=(64, 48), mode="bilinear", align_corners=False),
    "upsample_nearest2d_grad": lambda x: F.interpolate(x, size=(32, 40)),  # torch's default mode, nearest
    "upsample_nearest3d_grad": lambda x: F.interpolate(x, size=(12, 16, 16), mode="nearest"),
    "upsample_nearest_exact3d_grad": lambda x: F.interpolate(x, scale_factor=(1.5, 2.0, 2.5), mode="nearest-exact"),
    "upsample_bilinear2d_grad": lambda x: F.interpolate(x, size=(48, 64), mode="bilinear", align_corners=True),
    "upsample_trilinear3d_backward":
        lambda x: F.interpolate(x, size=(12, 16, 20), mode="trilinear", align_corners=False),
    "upsample_bicubic2d_grad": lambda x: F.interpolate(x, size=(60, 80), mode="bicubic", align_corners=False),
    "upsample_bilinear2d_aa_backward": lambda x: F.interpolate(x, size=(24, 20), mode="bilinear", antialias=True),
    "upsample_bicubic2d_aa_grad": lambda x: F.interpolate(x, size=(20, 28), mode="bicubic", antialias=True),
    # TensorFlow's half-pixel nearest, floor((i + 0.5) * in / out), is torch's nearest-exact
    "resize_nearest_neighbor_v2_grad": lambda x: F.interpolate(x, size=(48, 75), mode="nearest-exact"),
    "resize_bicubic_v2_grad": lambda x: F.interpolate(x, size=(48, 64), mode="bicubic", align_corners=False),
    "resize_linear_grad": lambda x: F.interpolate(x, size=250, mode="linear", align_corners=False),
    "resize_grad": lambda x: F.interpolate(x, size=(24, 20), mode="bilinear", antialias=True),
    "grid_sampler_2d_grad": lambda x, grid: F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                                                          align_corners=False),
    "grid_sampler_3d_grad": lambda x, grid: F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                                                          align_corners=False),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(SINGLE_OP_FORWARDS))
def test_single_op_model_matches_torch_autograd(name, path):
    model = models.BUILDERS[name]()
    feeds = models.example_inputs(name, seed=2, model=model)
    out = run_on(model, feeds, RUNS[path])
    node = model.graph.node[0]
    forward = SINGLE_OP_FORWARDS[name]
    grad = torch.from_numpy(feeds[node.input[0]])
    if name.startswith("grid_sampler"):  # grad_output, input, grid -> both gradients
        x, grid = _tensors(feeds, node.input[1], node.input[2])
        wanted = torch.autograd.grad(forward(x, grid), [x, grid], grad)
    else:  # the output's shape is the forward input's
        x = torch.randn(list(out[node.output[0]].shape), dtype=torch.float32, requires_grad=True)
        wanted = torch.autograd.grad(forward(x), [x], grad)
    for output, want in zip(node.output, wanted, strict=True):
        _close(out[output], want)


# --------------------------------------------------------------------------- training steps

def _mse(a, b):
    return ((a - b) ** 2).mean()


@pytest.mark.parametrize("path", PATHS)
def test_spatial_transformer_step_matches_torch_autograd(path):
    model = models.spatial_transformer_step()
    feeds = models.example_inputs("spatial_transformer_step", seed=3, model=model)
    out = run_on(model, feeds, RUNS[path])
    x, theta = _tensors(feeds, "x", "theta")
    grid = F.affine_grid(theta, [2, 3, 24, 24], align_corners=False)
    y = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    loss = _mse(y, torch.from_numpy(feeds["target"]))
    grad_x, grad_theta = torch.autograd.grad(loss, [x, theta])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-5)
    _close(out["grad_x"], grad_x)
    _close(out["grad_theta"], grad_theta)


@pytest.mark.parametrize("path", PATHS)
def test_decoder_step_matches_torch_autograd(path):
    model = models.decoder_step()
    feeds = models.example_inputs("decoder_step", seed=4, model=model)
    out = run_on(model, feeds, RUNS[path])
    (z,) = _tensors(feeds, "z")
    up1 = F.interpolate(z, scale_factor=2, mode="nearest-exact")
    up2 = F.interpolate(up1, scale_factor=2, mode="bilinear", align_corners=False)
    loss = (up2 * torch.from_numpy(feeds["weight"])).sum()
    (grad_z,) = torch.autograd.grad(loss, [z])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-4)
    _close(out["grad_z"], grad_z)


@pytest.mark.parametrize("path", PATHS)
def test_fpn_decoder_step_matches_torch_autograd(path):
    model = models.fpn_decoder_step()
    feeds = models.example_inputs("fpn_decoder_step", seed=5, model=model)
    out = run_on(model, feeds, RUNS[path])
    top, lateral = _tensors(feeds, "top", "lateral")
    p = lateral + F.interpolate(top, scale_factor=2)  # torch's default: nearest
    y = torch.from_numpy(feeds["skip"]) + F.interpolate(p, size=(40, 40), mode="bilinear", align_corners=False)
    loss = _mse(y, torch.from_numpy(feeds["target"]))
    grad_top, grad_lateral = torch.autograd.grad(loss, [top, lateral])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-5)
    _close(out["grad_top"], grad_top)
    _close(out["grad_lateral"], grad_lateral)


@pytest.mark.parametrize("path", PATHS)
def test_registration_step_matches_torch_autograd(path):
    model = models.registration_step()
    feeds = models.example_inputs("registration_step", seed=6, model=model)
    out = run_on(model, feeds, RUNS[path])
    moving, flow = _tensors(feeds, "moving", "flow")
    fixed = torch.from_numpy(feeds["fixed"])
    identity = F.affine_grid(torch.eye(3, 4)[None], list(fixed.shape), align_corners=True)  # [1, D, H, W, (x, y, z)]
    flow_up = F.interpolate(flow, scale_factor=2, mode="trilinear", align_corners=True)
    warped = F.grid_sample(moving, identity + flow_up.permute(0, 2, 3, 4, 1), mode="bilinear", padding_mode="zeros",
                           align_corners=True)
    loss = _mse(warped, fixed)
    grad_moving, grad_flow = torch.autograd.grad(loss, [moving, flow])
    np.testing.assert_allclose(out["loss"], loss.item(), rtol=1e-5)
    assert np.abs(grad_flow.numpy()).max() > 1e-4  # the warp moves voxels: the flow gradient is not trivially 0
    _close(out["grad_moving"], grad_moving)
    _close(out["grad_flow"], grad_flow)


@pytest.mark.parametrize("path", PATHS)
def test_super_resolution_step_matches_torch_autograd(path):
    model = models.super_resolution_step()
    feeds = models.example_inputs("super_resolution_step", seed=7, model=model)
    out = run_on(model, feeds, RUNS[path])
    lr, residual = _tensors(feeds, "lr", "residual")
    sr = F.interpolate(lr, scale_factor=4, mode="bicubic", align_corners=False) + residual
    down = F.interpolate(sr, scale_factor=0.25, mode="bicubic", antialias=True, align_corners=False)
    loss = _mse(sr, torch.from_numpy(feeds["hr"])) + 0.5 * _mse(down, lr)
    grad_lr, grad_residual = torch.autograd.grad(loss, [lr, residual])
    np.testing.assert_allclose(out["total_loss"], loss.item(), rtol=1e-5)
    _close(out["grad_residual"], grad_residual)
    _close(out["grad_lr"], grad_lr)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scales", [(2.0, 2.0), (1.5, 2.5), (0.75, 0.5)])
def test_resize_training_step_with_fed_scales_matches_torch_autograd(scales, path):
    """One model, the scales fed at run time: up, non-uniform, and down (cubic without antialias)."""
    model = models.resize_training_step()
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    grad_y = rng.standard_normal((2, 3, int(16 * scales[0]), int(16 * scales[1]))).astype(np.float32)
    feeds = {"x": x, "scales": np.array([1, 1, *scales], np.float32), "grad_y": grad_y}
    out = run_on(model, feeds, RUNS[path])
    (xt,) = _tensors(feeds, "x")
    y = F.interpolate(xt, scale_factor=scales, mode="bicubic", align_corners=False)
    (grad_x,) = torch.autograd.grad(y, [xt], torch.from_numpy(grad_y))
    _close(out["y"], y)
    _close(out["grad_x"], grad_x)


def _unet_step_oracle(feeds):
    """torch autograd of models/unet_step.py's module with the parameters and buffers of feeds (train mode)."""
    from resample_grad.models import unet_step

    module = unet_step.unet()
    module.load_state_dict({k: torch.from_numpy(v) for k, v in feeds.items() if k in module.state_dict()})
    params = dict(module.named_parameters())
    loss = unet_step.mse(module(torch.from_numpy(feeds["input_0"])), torch.from_numpy(feeds["target_0"]))
    grads = torch.autograd.grad(loss, list(params.values()))
    return {"loss": loss, **{f"grad_{n}": g for n, g in zip(params, grads, strict=True)},
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
