"""converters.export hands torch.onnx.export the traced graph as an ExportedProgram (torch_export._program), which the
exporter translates without capturing it again with torch.export; what a program cannot hold (a non-tensor
argument) goes as the graph, as before. Both against torch autograd."""
from __future__ import annotations

import numpy as np
import pytest
from test_training_step import assert_matches, export_case

from resample_grad import runtime
from resample_grad.converters import torch_export

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional


class Net(nn.Module):
    """A convolution, BatchNorm (its running statistics are updated in place: copies into the step's inputs), an
    in-place update of a view (its backward is as_strided_scatter, with a constant index tensor), nearest x2."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3)

    def forward(self, x):
        y = self.norm(self.conv(x))
        y[:, :, 0] *= 2
        return F.interpolate(y, scale_factor=2, mode="nearest")


def _mse(output, target):
    return (output - target).square().mean()


def _spied(monkeypatch) -> list:
    """The values _program returns, in a list."""
    programs, make = [], torch_export._program

    def spy(graph, args):
        programs.append(make(graph, args))
        return programs[-1]

    monkeypatch.setattr(torch_export, "_program", spy)
    return programs


def test_training_step_goes_as_a_program_and_matches_torch_autograd(monkeypatch):
    programs = _spied(monkeypatch)

    def no_capture(*args, **kwargs):
        raise AssertionError("torch.export.export was called: the exporter captured the traced graph again")

    monkeypatch.setattr(torch.export, "export", no_capture)
    torch.manual_seed(0)
    x, target = torch.randn(2, 2, 5, 5), torch.randn(2, 3, 10, 10)
    model, feeds, want = export_case(Net().train(), _mse, [x], [target])
    (program,) = programs
    assert isinstance(program, torch.export.ExportedProgram)
    assert any(isinstance(c, torch.Tensor) for c in program.constants.values()), "the constant index is not lifted"
    assert torch.ops.aten.copy_.default not in {node.target for node in program.graph.nodes}
    outputs = [o.name for o in model.graph.output]
    assert {"running_mean_updated", "running_var_updated"} <= {name.split(".")[-1] for name in outputs}
    assert_matches(dict(zip(outputs, runtime.run(runtime.session(model), feeds), strict=True)), want, outputs)


def test_a_non_tensor_argument_goes_as_the_graph(monkeypatch):
    programs = _spied(monkeypatch)
    x, seed = torch.randn(1, 2, 4, 3, generator=torch.Generator().manual_seed(0)), torch.Generator().manual_seed(1)
    up = torch.randn(1, 2, 12, 9, generator=seed)

    def fn(x, factor):  # factor: a Python int
        return torch.func.vjp(lambda t: F.interpolate(t, scale_factor=factor, mode="bilinear"), x)[1](up)[0] * factor

    model = torch_export.export(fn, [x, 3], verify=False)
    assert programs == [None]
    (got,) = runtime.run(runtime.session(model), {model.graph.input[0].name: x.numpy()})
    want = fn(x, 3).numpy()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_program_leaves_the_traced_graph_as_it_is():
    """export() falls back to the traced graph when _program returns None, so _program must work on a copy."""
    torch.manual_seed(0)
    module = Net().train()
    x = torch.randn(2, 2, 5, 5)

    def fn(x, weight, bias, mean, var):  # the BatchNorm step updates mean and var in place
        y = F.batch_norm(F.conv2d(x, weight, bias, padding=1), mean, var, training=True)
        return torch.autograd.grad(y[:, :, 0].square().sum(), weight)[0]

    args = [x.requires_grad_(False), module.conv.weight.detach().requires_grad_(True), module.conv.bias.detach(),
            torch.zeros(3), torch.ones(3)]
    graph = torch_export.trace(fn, args)
    before = [(node.op, node.name, node.target, node.meta.get("val")) for node in graph.graph.nodes]
    assert torch.ops.aten.copy_.default in {node.target for node in graph.graph.nodes}
    assert isinstance(torch_export._program(graph, args), torch.export.ExportedProgram)
    after = [(node.op, node.name, node.target, node.meta.get("val")) for node in graph.graph.nodes]
    assert after == before


def test_autograd_grad_of_an_argument_that_requires_grad():
    """functionalize's inputs do not require grad: trace() takes a first pass when an argument does."""
    gen = torch.Generator().manual_seed(2)
    x, weight = torch.randn(1, 2, 6, 5, generator=gen), torch.randn(3, 2, 3, 3, generator=gen).requires_grad_(True)

    def fn(x, weight):
        y = F.interpolate(F.conv2d(x, weight), scale_factor=2, mode="bilinear", align_corners=False)
        return torch.autograd.grad(y.square().sum(), weight)[0]

    model = torch_export.export(fn, [x, weight], verify=False)
    (got,) = runtime.run(runtime.session(model), {i.name: a.detach().numpy()
                                                  for i, a in zip(model.graph.input, [x, weight], strict=True)})
    want = fn(x, weight).numpy()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_a_torch_without_the_private_modules_exports_the_graph(monkeypatch):
    """_program builds the ExportedProgram with torch 2.13's private torch._export helpers: where they cannot be
    imported, the traced graph goes to the exporter as before, and the step still matches torch autograd."""
    import builtins

    programs, real_import = _spied(monkeypatch), builtins.__import__

    def without_private_modules(name, globals=None, *args, **kwargs):  # for torch_export's imports only: torch's
        # own exporter needs these modules
        if name.startswith("torch._export") and (globals or {}).get("__name__") == torch_export.__name__:
            raise ImportError(f"no module named {name!r}")
        return real_import(name, globals, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_private_modules)
    torch.manual_seed(0)
    x, target = torch.randn(2, 2, 5, 5), torch.randn(2, 3, 10, 10)
    model, feeds, want = export_case(Net().train(), _mse, [x], [target])
    assert programs == [None]
    outputs = [o.name for o in model.graph.output]
    assert_matches(dict(zip(outputs, runtime.run(runtime.session(model), feeds), strict=True)), want, outputs)
