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


def _spatial_transformer(t):
    grid = F.affine_grid(t["theta"], [2, 3, 24, 24], align_corners=False)
    y = F.grid_sample(t["x"], grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return _mse(y, t["target"])


def _decoder(t):
    up1 = F.interpolate(t["z"], scale_factor=2, mode="nearest-exact")
    up2 = F.interpolate(up1, scale_factor=2, mode="bilinear", align_corners=False)
    return (up2 * t["weight"]).sum()


def _fpn_decoder(t):
    p = t["lateral"] + F.interpolate(t["top"], scale_factor=2)  # torch's default: nearest
    y = t["skip"] + F.interpolate(p, size=(40, 40), mode="bilinear", align_corners=False)
    return _mse(y, t["target"])


def _registration(t):
    shape = list(t["fixed"].shape)
    identity = F.affine_grid(torch.eye(3, 4)[None], shape, align_corners=True)  # [1, D, H, W, (x, y, z)]
    flow_up = F.interpolate(t["flow"], scale_factor=2, mode="trilinear", align_corners=True)
    warped = F.grid_sample(t["moving"], identity + flow_up.permute(0, 2, 3, 4, 1), mode="bilinear",
                           padding_mode="zeros", align_corners=True)
    return _mse(warped, t["fixed"])


def _super_resolution(t):
    sr = F.interpolate(t["lr"], scale_factor=4, mode="bicubic", align_corners=False) + t["residual"]
    down = F.interpolate(sr, scale_factor=0.25, mode="bicubic", antialias=True, align_corners=False)
    return _mse(sr, t["hr"]) + 0.5 * _mse(down, t["lr"])


# model -> (seed, its loss output and that output's tolerance, the inputs it differentiates, the torch forward of
# the loss from the feeds as tensors)
TORCH_STEPS = {
    "spatial_transformer_step": (3, "loss", 1e-5, ("x", "theta"), _spatial_transformer),
    "decoder_step": (4, "loss", 1e-4, ("z",), _decoder),
    "fpn_decoder_step": (5, "loss", 1e-5, ("top", "lateral"), _fpn_decoder),
    "registration_step": (6, "loss", 1e-5, ("moving", "flow"), _registration),
    "super_resolution_step": (7, "total_loss", 1e-5, ("lr", "residual"), _super_resolution),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(TORCH_STEPS))
def test_training_step_matches_torch_autograd(name, path):
    seed, loss_name, loss_tolerance, wrt, forward = TORCH_STEPS[name]
    model = models.BUILDERS[name]()
    feeds = models.example_inputs(name, seed=seed, model=model)
    out = run_on(model, feeds, RUNS[path])
    tensors = {k: torch.from_numpy(v).requires_grad_(k in wrt) for k, v in feeds.items()}
    loss = forward(tensors)
    grads = torch.autograd.grad(loss, [tensors[k] for k in wrt])
    np.testing.assert_allclose(out[loss_name], loss.item(), rtol=loss_tolerance)
    for k, grad in zip(wrt, grads, strict=True):
        assert np.abs(grad.numpy()).max() > 1e-4, k  # (a gradient that is trivially 0 would prove nothing)
        _close(out[f"grad_{k}"], grad)


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
