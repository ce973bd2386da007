"""Training steps that hold their optimizer, kept in models/ for machines without torch: `resample-grad demo` trains
each on plain onnxruntime (resample_grad.training.Trainer) beside torch's loss curve. `python -m
resample_grad.models.optimizer_steps` (needs torch) exports them with converters.export_training_step(...,
optimizer=...) into models/<name>_optimizer_step.onnx, with torch.optim's loss curve on the same batch recorded in
the model's metadata (TORCH_LOSSES), for where torch is not installed.

    unet: models/unet_step.py's U-Net (batch norm, max pooling, nearest and bilinear upsampling) learning to
        denoise smooth images; SGD with momentum
    spatial_transformer: a localisation network predicts an affine transform, affine_grid and grid_sample undo a
        shift of the image; AdamW
    registration3d: a 3-D CNN predicts a displacement field from (moving, fixed), trilinear upsampling, the moving
        volume warped by 5-D grid_sample onto the fixed one; Adam

The batches are numpy's (the same on every machine): the demo needs no torch to make them.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np

FOLDER = pathlib.Path(__file__).parent
STEPS = 20  # the demo's steps; TORCH_LOSSES holds torch.optim's loss at each
TORCH_LOSSES = "resample_grad.torch_losses"  # metadata key: a JSON list of STEPS losses
OPTIMIZER = "resample_grad.optimizer"  # metadata key: the optimizer, as its class and hyperparameters


def path(name: str) -> pathlib.Path:
    return FOLDER / f"{name}_optimizer_step.onnx"


def _blobs(rng, shape) -> np.ndarray:
    """Smooth random images or volumes: three Gaussian blobs each, on [n, c, *spatial]."""
    axes = np.meshgrid(*(np.linspace(0, 1, n) for n in shape[2:]), indexing="ij")
    out = np.zeros(shape, np.float32)
    for index in np.ndindex(*shape[:2]):
        for _ in range(3):
            centre, width = rng.uniform(0.3, 0.7, len(axes)), rng.uniform(0.12, 0.2)
            out[index] += np.exp(-sum((a - c) ** 2 for a, c in zip(axes, centre, strict=True)) / (2 * width ** 2))
    return out


def batch(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(input, target) of the task, float32."""
    rng = np.random.default_rng({"unet": 0, "spatial_transformer": 1, "registration3d": 2}[name])
    if name == "unet":
        clean = _blobs(rng, (2, 1, 16, 16))
        return (clean + 0.3 * rng.standard_normal(clean.shape)).astype(np.float32), clean
    if name == "spatial_transformer":
        image = _blobs(rng, (2, 1, 16, 16))
        return np.roll(image, 2, axis=3), image
    fixed = _blobs(rng, (1, 1, 8, 8, 8))
    return np.concatenate([np.roll(fixed, 1, axis=4), fixed], axis=1), fixed


TASKS = ("unet", "spatial_transformer", "registration3d")


def module_and_optimizer(name: str):
    """(torch module in train mode, its torch.optim optimizer), initialised from seed 0."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)
    if name == "unet":
        from .unet_step import unet

        module = unet()
        return module, torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)

    if name == "spatial_transformer":
        class SpatialTransformer(nn.Module):
            def __init__(self):
                super().__init__()
                self.loc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                                         nn.Linear(4 * 8 * 8, 6))
                with torch.no_grad():
                    self.loc[-1].weight.mul_(0.1)
                    self.loc[-1].bias.copy_(torch.tensor([1.0, 0, 0, 0, 1, 0]))

            def forward(self, x):
                grid = F.affine_grid(self.loc(x).view(-1, 2, 3), list(x.shape), align_corners=False)
                return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)

        module = SpatialTransformer()
        return module, torch.optim.AdamW(module.parameters(), lr=3e-3, weight_decay=1e-4)

    class Registration(nn.Module):
        def __init__(self, c=4):
            super().__init__()
            self.net = nn.Sequential(nn.Conv3d(2, c, 3, padding=1), nn.LeakyReLU(0.2), nn.AvgPool3d(2),
                                     nn.Conv3d(c, c, 3, padding=1), nn.LeakyReLU(0.2),
                                     nn.Upsample(scale_factor=2, mode="trilinear"), nn.Conv3d(c, 3, 3, padding=1))

        def forward(self, pair):
            displacement = self.net(pair).permute(0, 2, 3, 4, 1) * 0.1
            identity = F.affine_grid(torch.eye(3, 4).expand(pair.shape[0], 3, 4), [pair.shape[0], 1,
                                                                                   *pair.shape[2:]],
                                     align_corners=True)
            return F.grid_sample(pair[:, :1], identity + displacement, mode="bilinear", padding_mode="border",
                                 align_corners=True)

    module = Registration()
    return module, torch.optim.Adam(module.parameters(), lr=1e-2)


def mse(output, target):
    return (output - target).square().mean()


def torch_losses(name: str, steps: int = STEPS) -> list[float]:
    """torch.optim's losses on the task's batch: zero_grad, forward, backward, step, `steps` times."""
    import torch

    module, optimizer = module_and_optimizer(name)
    x, target = (torch.from_numpy(a) for a in batch(name))
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = mse(module(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def export(name: str, out=None):
    """converters.export_training_step of the task with its optimizer, torch's losses in the metadata; saved to out
    (default: path(name))."""
    import onnx
    import torch

    from resample_grad import converters

    module, optimizer = module_and_optimizer(name)
    x, target = (torch.from_numpy(a) for a in batch(name))
    model = converters.export_training_step(module, mse, x, target, optimizer=optimizer)
    for node in model.graph.node:  # the exporter's stack traces and scopes
        del node.metadata_props[:]
    model.doc_string = (f"The {name} training step with its {type(optimizer).__name__} update "
                        "(models/optimizer_steps.py); resample_grad.training.Trainer trains it.")
    group = optimizer.param_groups[0]
    settings = ", ".join(f"{k}={group[k]}" for k in ("lr", "momentum", "weight_decay") if group.get(k))
    onnx.helper.set_model_props(model, {TORCH_LOSSES: json.dumps(torch_losses(name)),
                                        OPTIMIZER: f"{type(optimizer).__name__}({settings})"})
    onnx.save(model, str(out or path(name)))
    return model


def recorded_losses(model) -> list[float]:
    """The torch.optim losses export() recorded in the model."""
    return json.loads(next(p.value for p in model.metadata_props if p.key == TORCH_LOSSES))


if __name__ == "__main__":
    for task in TASKS:
        export(task)
        print(path(task))
