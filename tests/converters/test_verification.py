"""export's verification (verify=True) against torch run in float64: a correct export of a deep batch-normed network
passes (its cancelled bias gradients are rounding noise, its LeakyReLU and max-pool inputs near their kinks flip in
torch's own float32 runs as in onnxruntime's), a wrong translation (the cross-entropy gradient times the batch size)
is still refused, and the user's module comes back from the float64 run as it was."""
from __future__ import annotations

import pytest

from resample_grad import converters
from resample_grad.converters import torch_backward, torch_export

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional


def _mse(output, target):
    return (output - target).square().mean()


def test_a_batch_normed_basic_unet_exports_by_default():
    """MONAI's BasicUNet, 2-D, batch norm, every parameter trainable, batch 2 of 64x64: the old check (torch's float32
    run as the reference, a floor of 1e-3 of the largest output) refused this correct export, naming a conv weight
    gradient (a LeakyReLU input within rounding of 0 flips) and the conv biases that batch norm cancels."""
    nets = pytest.importorskip("monai.networks.nets")
    torch.manual_seed(0)
    net = nets.BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, norm="batch").train()
    assert all(p.requires_grad for p in net.parameters())
    x, target = torch.randn(2, 1, 64, 64), torch.randn(2, 2, 64, 64)
    model = converters.export_training_step(net, _mse, x, target)  # verify=True
    assert any(o.name.endswith("conv.bias") for o in model.graph.output)


class _Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.norm, self.head = nn.Conv2d(2, 6, 3, padding=1), nn.BatchNorm2d(6), nn.Linear(6, 5)

    def forward(self, x):
        return self.head(F.relu(self.norm(self.conv(x))).mean((2, 3)))


def test_a_wrong_scale_is_still_refused(monkeypatch):
    """torchlib's nll_loss_forward put back (a constant total_weight: every gradient times the batch size, 8) in a
    batch-normed classifier's cross-entropy step: refused, naming a gradient and its relative error 8 - 1 = 7;
    without it, exported."""
    from onnxscript.function_libs.torch_lib.ops import nn as torchlib

    torch.manual_seed(0)
    x, classes = torch.randn(8, 2, 6, 6), torch.randint(0, 5, (8,))
    converters.export_training_step(_Classifier().train(), F.cross_entropy, x, classes)
    monkeypatch.setitem(torch_backward.TRANSLATIONS, "nll_loss_forward", torchlib.aten_nll_loss_forward)
    with pytest.raises(converters.VerificationError, match=r"output 'grad_[\w.]+' disagrees with torch.* = 7 > "):
        converters.export_training_step(_Classifier().train(), F.cross_entropy, x, classes)


def test_the_float64_run_leaves_the_module_as_it_was():
    """_in_double: inside, the module's floating parameters and buffers are float64; after, the same parameter
    objects hold the same float32 values and the same buffer objects are back (the integer one not advanced)."""
    module = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).train()
    params = {n: (p, p.detach().clone()) for n, p in module.named_parameters()}
    buffers = dict(module.named_buffers())
    values = {n: b.clone() for n, b in buffers.items()}
    step = torch_export._in_float64(lambda x: module(x).sum(), [torch.randn(2, 1, 5, 5)])
    assert step[0].dtype == torch.float64
    for name, (p, value) in params.items():
        assert dict(module.named_parameters())[name] is p and p.dtype == torch.float32 and torch.equal(p, value)
    for name, b in module.named_buffers():
        assert b is buffers[name] and torch.equal(b, values[name])


def test_the_float64_run_keeps_gradients_the_module_has():
    """A module whose parameters hold .grad (a backward already run): the float64 run happens (Module.to converts
    .grad in place, which the restore must undo), and the same grad objects come back with their float32 values."""
    module = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).train()
    module(torch.randn(4, 3)).sum().backward()
    grads = {n: (p.grad, p.grad.clone()) for n, p in module.named_parameters()}
    step = torch_export._in_float64(lambda x: module(x).sum(), [torch.randn(4, 3)])
    assert step is not None and step[0].dtype == torch.float64
    for name, p in module.named_parameters():
        grad, value = grads[name]
        assert p.grad is grad and grad.dtype == torch.float32 and torch.equal(grad, value)
