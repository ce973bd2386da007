"""export_training_step(..., optimizer=...) against torch.optim: the same module trained by torch (zero_grad, forward,
backward, optimizer.step) and by the exported step on plain onnxruntime (resample_grad.training.Trainer), the
parameters, the buffers and the optimizer state compared after every step.

Networks: the demo's U-Net (models/unet_step.py: batch norm, max pooling, nearest and bilinear upsampling), a
spatial transformer (affine_grid, grid_sample), monai's BasicUNet and a kornia warp_affine with a learned transform
(the test extra). Optimizers: SGD (momentum, nesterov, dampening, weight decay), Adam (amsgrad) and AdamW.
"""
from __future__ import annotations

import copy
import functools

import numpy as np
import pytest

from resample_grad import converters
from resample_grad.training import Trainer

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
STEPS = 6
RTOL = 1e-4  # float32: after STEPS updates of sums over thousands of terms, relative to the tensor's largest value


class SpatialTransformer(nn.Module):
    """A localisation network predicts theta (from the identity); affine_grid and grid_sample warp the input."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(4 * 8 * 8, 6))
        with torch.no_grad():  # near the identity (not at it: a zero layer would give loc's first layer zero gradients,
            # which Adam's first steps normalise into full steps of float32 noise)
            self.loc[-1].weight.mul_(0.1)
            self.loc[-1].bias.copy_(torch.tensor([1.0, 0, 0, 0, 1, 0]))
        self.head = nn.Conv2d(1, 1, 3, padding=1)

    def forward(self, x):
        grid = F.affine_grid(self.loc(x).view(-1, 2, 3), list(x.shape), align_corners=False)
        return self.head(F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False))


class KorniaWarp(nn.Module):
    """kornia.geometry.warp_affine of the input by a learned affine matrix (in pixels: a learned change of a tenth of
    it keeps the optimizers' steps on it small), then a convolution."""

    def __init__(self):
        super().__init__()
        self.register_buffer("start", torch.tensor([[[1.0, 0.05, 0.5], [-0.05, 1.0, -0.5]]]))
        self.change = nn.Parameter(torch.full((1, 2, 3), 0.01))
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        from kornia.geometry.transform import warp_affine

        matrix = self.start + 0.1 * self.change
        return self.conv(warp_affine(x, matrix.expand(x.shape[0], 2, 3), tuple(x.shape[-2:])))


def _unet():
    from resample_grad.models import unet_step

    return unet_step.unet(), (2, 1, 16, 16)


def _basic_unet():
    from monai.networks.nets import BasicUNet

    torch.manual_seed(0)
    return BasicUNet(2, 1, 1, features=(4, 4, 8, 8, 16, 4), bias=False, upsample="nontrainable"), (1, 1, 32, 32)


NETWORKS = {  # name: () -> (module in train mode, input shape)
    "unet": _unet,
    "spatial-transformer": lambda: (torch.manual_seed(0) and SpatialTransformer(), (2, 1, 16, 16)),
    "monai-basicunet": _basic_unet,
    "kornia-warp": lambda: (torch.manual_seed(0) and KorniaWarp(), (2, 2, 12, 12)),
}
OPTIMIZERS = {  # name: parameters -> torch.optim optimizer
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "sgd-nesterov-decay": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-2),
    "sgd-dampening": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3),
    "sgd-plain": lambda p: torch.optim.SGD(p, lr=0.05),
    "adam-amsgrad": lambda p: torch.optim.Adam(p, lr=3e-3, weight_decay=1e-2, amsgrad=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=3e-3, betas=(0.8, 0.95), weight_decay=0.1),
}
CASES = [("unet", o) for o in OPTIMIZERS] + [(n, o) for n in list(NETWORKS)[1:] for o in ("sgd-momentum", "adamw")]


def smooth(shape, generator):
    """Random images varying over a quarter of their size: a warp of white noise would move every sample across
    pixels whose values are unrelated, so float32 rounding alone sends torch's own float32 and float64 runs of SGD
    on a spatial transformer 40 % apart within 6 steps."""
    coarse = torch.randn((*shape[:2], *(max(2, n // 4) for n in shape[2:])), generator=generator)
    return F.interpolate(coarse, size=tuple(shape[2:]), mode="bilinear" if len(shape) == 4 else "trilinear",
                         align_corners=False)


def mse(output, target):
    return (output - target).square().mean()


@functools.cache
def exported(network: str, optimizer: str):
    """(module, optimizer, batch, step model): the module and optimizer as they were at the export."""
    module, shape = NETWORKS[network]()
    module.train()
    generator = torch.Generator().manual_seed(1)
    x = smooth(shape, generator)
    target = smooth(module(x).shape, generator)  # (this forward moves batch-norm statistics)
    optim = OPTIMIZERS[optimizer](module.parameters())
    return module, optim, (x, target), converters.export_training_step(module, mse, x, target, optimizer=optim)


def torch_state(module, optim) -> dict:
    """{step model input name: float64 array} of torch's module and optimizer."""
    names = {id(p): n for n, p in module.named_parameters()}
    state = {n: v for n, v in module.state_dict().items()}
    for param, kept in optim.state.items():
        state.update({f"optimizer.{names[id(param)]}.{slot}": v for slot, v in kept.items() if slot != "step"})
    return {n: v.detach().double().numpy() for n, v in state.items()}


def assert_close(ours: dict, want: dict, step: int, truth: dict | None = None):
    """Each of torch.optim's tensors (want) within RTOL of its largest value, or, where float32 rounding alone moves
    torch further (a gradient summed with cancellation, squared into exp_avg_sq), no further from torch run in
    float64 (truth) than 4 times torch float32's own distance to it."""
    for name, value in want.items():
        got = np.asarray(ours[name], np.float64)
        scale = max(float(np.abs(value).max(initial=0.0)), 1e-12)
        error = float(np.abs(got - value).max(initial=0.0)) / scale
        if error <= RTOL:
            continue
        assert truth is not None, f"after step {step}: {name}: max |ours - torch.optim| / {scale:.3g} = {error:.3g}"
        ours_error = float(np.abs(got - truth[name]).max())
        torch_error = float(np.abs(value - truth[name]).max())
        assert ours_error <= 4 * torch_error, (
            f"after step {step}: {name}: max |ours - torch.optim| / {scale:.3g} = {error:.3g}, and against torch in "
            f"float64 ours is {ours_error:.3g} away, torch's float32 {torch_error:.3g}")


@pytest.mark.parametrize("network,optimizer", [pytest.param(n, o, id=f"{n}-{o}",
                                                            marks=pytest.mark.xdist_group(f"optim-{n}-{o}"))
                                               for n, o in CASES])
def test_steps_follow_torch_optim(network, optimizer):
    module, optim, (x, target), model = exported(network, optimizer)
    module, double = copy.deepcopy(module), copy.deepcopy(module).double()
    reference, reference64 = OPTIMIZERS[optimizer](module.parameters()), OPTIMIZERS[optimizer](double.parameters())
    reference.load_state_dict(optim.state_dict())
    reference64.load_state_dict(optim.state_dict())
    trainer = Trainer(model)
    losses = []
    for step in range(1, STEPS + 1):
        want = []
        for net, opt, dtype in ((module, reference, torch.float32), (double, reference64, torch.float64)):
            opt.zero_grad()
            loss = mse(net(x.to(dtype)), target.to(dtype))
            loss.backward()
            opt.step()
            want.append(loss.item())
        losses.append(trainer.step(x.numpy(), target.numpy()))
        assert abs(losses[-1] - want[0]) <= RTOL * want[0], f"step {step}: loss {losses[-1]}, torch.optim's {want}"
        assert_close(trainer.state(), torch_state(module, reference), step, torch_state(double, reference64))
        assert trainer.steps == step
    assert losses[-1] < losses[0]  # (it trains: a step that changed nothing would fail here)


@pytest.mark.xdist_group("optim-unet-adamw")
def test_learning_rate_is_an_input():
    """A schedule: the learning rate changed between steps, in torch's param group and in the trainer alike."""
    module, optim, (x, target), model = exported("unet", "adamw")
    module = copy.deepcopy(module)
    reference = OPTIMIZERS["adamw"](module.parameters())
    schedule = torch.optim.lr_scheduler.StepLR(reference, step_size=2, gamma=0.3)
    trainer = Trainer(model)
    for step in range(1, 6):
        trainer.learning_rate = reference.param_groups[0]["lr"]
        reference.zero_grad()
        mse(module(x), target).backward()
        reference.step()
        schedule.step()
        trainer.step(x.numpy(), target.numpy())
        assert_close(trainer.state(), torch_state(module, reference), step)
    assert trainer.learning_rate == pytest.approx(3e-3 * 0.3 ** 2, rel=1e-6)


@pytest.mark.xdist_group("optim-started")
@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adamw"])
def test_export_continues_an_optimizer_with_state(optimizer):
    """An optimizer that already took steps: its momentum buffers, moments and step count start the exported step."""
    module, shape = _unet()
    x, target = torch.randn(shape), torch.randn(shape)
    optim = OPTIMIZERS[optimizer](module.parameters())
    for _ in range(2):
        optim.zero_grad()
        mse(module(x), target).backward()
        optim.step()
    model = converters.export_training_step(module, mse, x, target, optimizer=optim)
    assert {(p.dtype, p.grad.dtype) for p in module.parameters()} == {(torch.float32, torch.float32)}  # (left alone)
    trainer = Trainer(model)
    assert trainer.steps == 2 or optimizer.startswith("sgd")
    for step in range(3, 6):
        optim.zero_grad()
        mse(module(x), target).backward()
        optim.step()
        trainer.step(x.numpy(), target.numpy())
        assert_close(trainer.state(), torch_state(module, optim), step)


@pytest.mark.xdist_group("optim-unet-sgd-momentum")
def test_step_model_inputs_and_outputs():
    module, optim, _, model = exported("unet", "sgd-momentum")
    params, buffers = list(dict(module.named_parameters())), list(dict(module.named_buffers()))
    slots = [f"optimizer.{n}.momentum_buffer" for n in params]
    assert [i.name for i in model.graph.input] == ["input_0", "target_0", *params, *buffers, *slots,
                                                   "optimizer.step", "optimizer.learning_rate"]
    outputs = [o.name for o in model.graph.output]
    assert outputs[:1 + len(params)] == ["loss", *(f"{n}_updated" for n in params)]
    assert outputs[-len(slots) - 1:] == [f"{n}_updated" for n in [*slots, "optimizer.step"]]
    assert {f"{n}_updated" for n in buffers if "running" in n} <= set(outputs)
    assert {"UpsampleNearest2dGrad", "ResizeBilinearV2Grad"} <= {n.op_type for n in model.graph.node}


# --------------------------------------------------------------------------- refused and bad input

def _linear():
    return nn.Linear(3, 2)


@pytest.mark.parametrize("make,error,message", [
    (lambda m: torch.optim.RMSprop(m.parameters()), converters.ExportRefused,
     "export: torch.optim.rmsprop.RMSprop is refused: only torch.optim.SGD, Adam and AdamW are translated"),
    (lambda m: torch.optim.Adagrad(m.parameters()), converters.ExportRefused, "torch.optim.adagrad.Adagrad is refused"),
    (lambda m: torch.optim.SGD([{"params": [m.weight]}, {"params": [m.bias], "lr": 0.1}], lr=0.01), ValueError,
     "the optimizer has 2 parameter groups; expected one"),
    (lambda m: torch.optim.SGD([m.weight], lr=0.01), ValueError,
     r"the optimizer's parameters must be the module's trainable parameters; it lacks \['bias'\]"),
    (lambda m: torch.optim.SGD([*m.parameters(), nn.Parameter(torch.ones(2))], lr=0.01), ValueError,
     "it has tensors that are not among them"),
    (lambda m: "sgd", TypeError, "optimizer must be a torch.optim.Optimizer"),
])
def test_bad_optimizer_is_named(make, error, message):
    module = _linear()
    with pytest.raises(error, match=message):
        converters.export_training_step(module, mse, torch.ones(4, 3), torch.ones(4, 2), optimizer=make(module))
