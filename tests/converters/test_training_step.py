"""Training steps of real networks through converters.export_training_step.

Each network of NETWORKS (torch.nn only) is exported once (its tests share one xdist worker); the step's loss and
the gradients of the input and of every parameter must match torch autograd to 1e-4 relative on both paths
(native kernels, onnxscript functions), the graph must hold only standard ONNX and resample_grad nodes, BatchNorm's
updated running statistics must be torch's, and to_ascend must convert the step. REAL_LIBRARY does the same for
networks and calls of kornia and monai (the test extra).
"""
from __future__ import annotations

import functools

import numpy as np
import onnxruntime
import pytest

from resample_grad import converters, opset, runtime

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
RTOL = 1e-4


def conv_block(dims, cin, cout, norm):
    conv = (nn.Conv2d, nn.Conv3d)[dims - 2]
    norms = {"batch": (nn.BatchNorm2d, nn.BatchNorm3d)[dims - 2](cout), "group": nn.GroupNorm(2, cout),
             "instance": (nn.InstanceNorm2d, nn.InstanceNorm3d)[dims - 2](cout, affine=True)}
    return nn.Sequential(conv(cin, cout, 3, padding=1, bias=False), norms[norm], nn.ReLU(inplace=True))  # (the norm
    # would cancel a bias: its gradient would be rounding noise)


class UNet(nn.Module):
    """Two levels: conv blocks, max pooling, upsampling by `mode`, skip connections by concatenation."""

    def __init__(self, dims=2, mode="nearest", channels=4, norm="batch"):
        super().__init__()
        c, self.mode = channels, mode
        self.enc1, self.enc2 = conv_block(dims, 1, c, norm), conv_block(dims, c, 2 * c, norm)
        self.mid = conv_block(dims, 2 * c, 2 * c, "batch")
        self.dec2, self.dec1 = conv_block(dims, 4 * c, c, norm), conv_block(dims, 2 * c, c, norm)
        self.pool = (nn.MaxPool2d, nn.MaxPool3d)[dims - 2](2)
        self.head = (nn.Conv2d, nn.Conv3d)[dims - 2](c, 1, 1)

    def up(self, x):
        corners = {} if self.mode == "nearest" else {"align_corners": False}
        return F.interpolate(x, scale_factor=2, mode=self.mode, **corners)

    def forward(self, x):
        a = self.enc1(x)
        b = self.enc2(self.pool(a))
        y = self.dec2(torch.cat([self.up(self.mid(self.pool(b))), b], 1))
        return self.head(self.dec1(torch.cat([self.up(y), a], 1)))


class SpatialTransformer(nn.Module):
    """Localisation CNN -> affine theta (translation damped by a slice assignment) -> affine_grid -> grid_sample."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.MaxPool2d(2),
                                 nn.ReLU(),
                                 nn.Conv2d(4, 4, 3, padding=1), nn.AdaptiveAvgPool2d(2), nn.ReLU())
        self.fc = nn.Linear(16, 6)

    def forward(self, x):
        theta = self.fc(self.loc(x).flatten(1)).view(-1, 2, 3) + torch.eye(2, 3)
        theta[:, :, 2] *= 0.5  # in place, on a view
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


class GaussianPyramid(nn.Module):
    """A learned convolution, then a Gaussian pyramid (depthwise 5x5 blur, reflection padding, down by 2 by slicing
    and by average pooling), collapsed back by bilinear upsampling."""

    def __init__(self, channels=2, levels=2):
        super().__init__()
        taps = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0])
        self.register_buffer("kernel", (torch.outer(taps, taps) / 256).expand(channels, 1, 5, 5).clone())
        self.conv = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.GroupNorm(1, channels), nn.ReLU())
        self.levels = levels

    def blur(self, x):
        return F.conv2d(F.pad(x, (2, 2, 2, 2), mode="reflect"), self.kernel, groups=x.shape[1])

    def forward(self, x):
        levels = [self.conv(x)]
        for k in range(self.levels):
            blurred = self.blur(levels[-1])
            levels.append(blurred[..., ::2, ::2] if k % 2 == 0 else
                          F.avg_pool2d(blurred, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False))
        out = levels[-1]
        for level in reversed(levels[:-1]):
            out = F.interpolate(out, size=level.shape[-2:], mode="bilinear", align_corners=False) + level
        return out


class Registration(nn.Module):
    """A 3-D CNN predicting a displacement field from (moving, fixed); the moving volume warped by 5-D grid_sample."""

    def __init__(self, channels=4):
        super().__init__()
        c = channels
        self.net = nn.Sequential(nn.Conv3d(2, c, 3, padding=1, bias=False), nn.InstanceNorm3d(c, affine=True),
                                 nn.LeakyReLU(0.2),
                                 nn.AvgPool3d(2), nn.Conv3d(c, c, 3, padding=1), nn.ReLU(),
                                 nn.Upsample(scale_factor=2, mode="trilinear"), nn.Conv3d(c, 3, 3, padding=1))

    def forward(self, pair):
        moving = pair[:, :1]
        displacement = self.net(pair).permute(0, 2, 3, 4, 1) * 0.1
        identity = F.affine_grid(torch.eye(3, 4).expand(pair.shape[0], 3, 4), list(moving.shape), align_corners=True)
        return F.grid_sample(moving, identity + displacement, mode="bilinear", padding_mode="border",
                             align_corners=True)


def mse(output, target):
    return (output - target).square().mean()


# name: (module factory, input shape)
NETWORKS = {
    "unet2d-nearest": (lambda: UNet(2, "nearest", norm="batch"), (2, 1, 16, 16)),
    "unet2d-bilinear": (lambda: UNet(2, "bilinear", norm="group"), (2, 1, 16, 16)),
    "unet3d-trilinear": (lambda: UNet(3, "trilinear", channels=2, norm="instance"), (2, 1, 8, 8, 8)),
    "spatial-transformer": (SpatialTransformer, (2, 1, 12, 12)),
    "gaussian-pyramid": (GaussianPyramid, (2, 2, 16, 16)),
    "registration3d": (Registration, (1, 2, 8, 8, 8)),
}
# the resample_grad op each network's backward needs
FAMILY_OPS = {"unet2d-nearest": {"UpsampleNearest2dGrad"}, "unet2d-bilinear": {"ResizeBilinearV2Grad"},
              "unet3d-trilinear": {"UpsampleTrilinear3dBackward"}, "spatial-transformer": {"GridSampler2DGrad"},
              "gaussian-pyramid": {"ResizeBilinearV2Grad"},
              "registration3d": {"UpsampleTrilinear3dBackward", "GridSampler3DGrad"}}
FORWARD_GE_OPS = {"unet3d-trilinear": {"ResizeUpsampleTrilinear"},
                  "registration3d": {"ResizeUpsampleTrilinear"}}  # (its forward grid_sample is decomposed)


def torch_step(module, loss_fn, inputs, targets):
    """The oracle: torch autograd on a copy of the module (train mode), {output name: float64 array}."""
    import copy

    module = copy.deepcopy(module)
    inputs = [x.detach().clone().requires_grad_(True) for x in inputs]
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    loss = loss_fn(module(*inputs), *targets)
    grads = torch.autograd.grad(loss, [*params.values(), *inputs])
    want = {"loss": loss, **{f"grad_{n}": g for n, g in zip(params, grads, strict=False)},
            **{f"grad_input_{k}": g for k, g in enumerate(grads[len(params):])},
            **{f"{n}_updated": b for n, b in module.named_buffers()}}
    return {k: v.detach().double().numpy() for k, v in want.items()}


def export_case(module, loss_fn, inputs, targets):
    """(model, feeds, torch's results) of one exported training step."""
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    given = {**{f"input_{k}": x for k, x in enumerate(inputs)}, **{f"target_{k}": t for k, t in enumerate(targets)}}
    want = torch_step(module, loss_fn, inputs, targets)
    model = converters.export_training_step(module, loss_fn, tuple(inputs), tuple(targets), input_gradients=True)
    feeds = {i.name: (given.get(i.name) if i.name in given else state[i.name]).detach().numpy()
             for i in model.graph.input}
    return model, feeds, want


@functools.cache
def network_export(name):
    factory, shape = NETWORKS[name]
    torch.manual_seed(0)
    module = factory().train()
    x = torch.randn(shape)
    target = torch.randn(module(x).shape)  # (this forward moves the module's running statistics: as a real loop)
    return (module, *export_case(module, mse, [x], [target]))


@functools.cache
def run_path(export, name, path):
    model, feeds = export(name)[-3:-1]
    session = (runtime.session(model) if path == "kernel"
               else onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))
    return dict(zip([o.name for o in model.graph.output], runtime.run(session, feeds), strict=False))


def assert_matches(got: dict, want: dict, names, rtol=RTOL):
    """Each output within rtol of torch's, relative to its largest magnitude, or to a thousandth of the step's
    largest gradient when the output is smaller: a bias that a normalisation cancels has a gradient of rounding
    noise (1e-8 against gradients of 1), which both sides compute differently."""
    floor = 1e-3 * max(float(np.abs(v).max(initial=0.0)) for k, v in want.items() if k.startswith("grad_"))
    for name in names:
        ours, expected = np.asarray(got[name], np.float64), want[name]
        assert ours.shape == expected.shape, f"{name}: shape {ours.shape}, torch {expected.shape}"
        scale = max(float(np.abs(expected).max(initial=0.0)), floor)
        error = float(np.abs(ours - expected).max(initial=0.0)) / scale
        assert error <= rtol, f"{name}: max |ours - torch| / {scale:.3g} = {error:.3g} > {rtol}"


def grouped(names, group, paths=("kernel", "function")):
    return [pytest.param(name, path, marks=pytest.mark.xdist_group(f"{group}-{name}"), id=f"{name}-{path}")
            for name in names for path in paths]


@pytest.mark.parametrize("name,path", grouped(NETWORKS, "network"))
def test_training_step_matches_torch_autograd(name, path):
    module, model, _, want = network_export(name)
    foreign = sorted({f"{n.domain}::{n.op_type}" for n in model.graph.node
                      if n.domain not in ("", "ai.onnx", opset.DOMAIN)})
    assert not foreign, f"unsupported nodes: {foreign}"
    assert FAMILY_OPS[name] <= {n.op_type for n in model.graph.node if n.domain == opset.DOMAIN}
    params = [n for n, p in module.named_parameters()]
    outputs = [o.name for o in model.graph.output]
    assert outputs[:len(params) + 2] == ["loss", *(f"grad_{n}" for n in params), "grad_input_0"]
    assert [i.name for i in model.graph.input][2:2 + len(params)] == params
    assert_matches(run_path(network_export, name, path), want, outputs)  # running statistics included


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"network-{n}")) for n in NETWORKS])
def test_training_step_converts_for_ascend(name, tmp_path):
    model = network_export(name)[1]
    conversion = converters.to_ascend(model, "Ascend910B1", tmp_path)
    # the forward nodes ATC's parser cannot read (5-D Resize and GridSample) become GE forward ops too
    ge_ops = FAMILY_OPS[name] | FORWARD_GE_OPS.get(name, set())
    assert {r.ge_op for r in conversion.nodes} == ge_ops
    ge_nodes = {n.op_type for n in conversion.model.graph.node if n.domain == "resample_grad.ge"}
    standard = {n.op_type for n in conversion.model.graph.node if n.domain == "ai.onnx"}
    assert ge_nodes == ge_ops and {"Conv", "ConvTranspose"} <= standard  # left to ATC's ONNX parser
    assert len(ge_nodes) + len(standard) == len({n.op_type for n in conversion.model.graph.node})
    assert (tmp_path / "model.ascend.onnx").exists()


@pytest.mark.xdist_group("network-unet2d-nearest")
def test_batch_norm_trains_on_batch_statistics():
    """torchlib translates batch norm with training=False (running statistics); the export must not: the running
    statistics fed in are far from the batch's, and the loss still matches torch's train-mode loss."""
    module, model, feeds, want = network_export("unet2d-nearest")
    feeds = {**feeds, **{k: (v + 5.0 if k.endswith("running_mean") else v) for k, v in feeds.items()}}
    got = dict(zip([o.name for o in model.graph.output],
                   onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds), strict=False))
    assert_matches(got, want, ["loss", "grad_enc1.0.weight"])
    moved = got["enc1.1.running_mean_updated"] - (feeds["enc1.1.running_mean"] * 0.9)
    np.testing.assert_allclose(moved, want["enc1.1.running_mean_updated"] - 0.9 * (feeds["enc1.1.running_mean"] - 5.0),
                               rtol=1e-4, atol=1e-6)


@pytest.mark.xdist_group("network-spatial-transformer")
def test_module_state_is_left_alone():
    """Exporting runs the step on copies: the caller's parameters and running statistics keep their values."""
    torch.manual_seed(1)
    module = SpatialTransformer().train()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    converters.export_training_step(module, mse, torch.randn(2, 1, 12, 12), torch.randn(2, 1, 12, 12))
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())


# --------------------------------------------------------------------------- bad input

class Frozen(nn.Module):
    def forward(self, x):
        return x * 2


@pytest.mark.parametrize("call,error,message", [
    (lambda: converters.export_training_step(lambda x: x, mse, torch.ones(2), torch.ones(2)), TypeError,
     "export_training_step: module must be a torch.nn.Module, got function"),
    (lambda: converters.export_training_step(Frozen(), mse, torch.ones(2), torch.ones(2)), ValueError,
     "export_training_step: module Frozen has no trainable parameters"),
    (lambda: converters.export_training_step(nn.Linear(3, 2), lambda y, t: y - t, torch.ones(4, 3), torch.ones(4, 2)),
     ValueError,
     "export_training_step: loss_fn must return a scalar floating-point tensor, got a tensor of shape [4, 2]"),
    (lambda: converters.export_training_step(nn.Linear(3, 2), "mse", torch.ones(4, 3)), TypeError,
     "export_training_step: loss_fn must be callable"),
    (lambda: converters.export_training_step(nn.Linear(3, 2), mse, (torch.ones(4, 3), 3)), TypeError,
     "export_training_step: inputs must be tensors, got int at position 1"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        call()


# --------------------------------------------------------------------------- real libraries (the test extra)

def _kornia_calls():
    """kornia's own functions, differentiated with respect to images and transform parameters: warp_affine updates a
    view in place (H[..., -1, -1] += 1), rotate too, pyrdown / pyrup blur by convolution and resample bilinearly."""
    from kornia.geometry import transform

    gen = torch.Generator().manual_seed(3)
    affine = torch.tensor([[[0.9, 0.1, 1.0], [-0.1, 1.1, -0.5]]]).repeat(2, 1, 1)
    return [(lambda x, m: transform.warp_affine(x, m, (7, 8)), (torch.randn(2, 3, 8, 9, generator=gen), affine)),
            (lambda x, a: transform.rotate(x, a),
             (torch.randn(2, 3, 8, 9, generator=gen), torch.tensor([15.0, -30.0]))),
            (transform.pyrdown, (torch.randn(2, 3, 16, 12, generator=gen),)),
            (transform.pyrup, (torch.randn(2, 3, 8, 6, generator=gen),))]


class KorniaCalls(nn.Module):
    """The kornia calls as one module whose parameters are their inputs, so one exported step covers them all."""

    def __init__(self):
        super().__init__()
        self.calls = _kornia_calls()
        self.values = nn.ParameterList([nn.Parameter(t.clone()) for _, tensors in self.calls for t in tensors])

    def forward(self, weights):
        total, k = 0.0, 0
        for (call, tensors), w in zip(self.calls, weights, strict=False):
            out = call(*(self.values[k + i] for i in range(len(tensors))))  # (a slice would wrap them anew)
            total = total + (out * w[:out.numel()].reshape(out.shape)).sum()
            k += len(tensors)
        return total


def _monai_unet():
    """monai's UNet: strided and transposed convolutions, batch norm, PReLU, residual units."""
    from monai.networks.nets import UNet as MonaiUNet

    net = MonaiUNet(2, 1, 2, channels=(4, 8, 16), strides=(2, 2), num_res_units=1, norm="batch")
    return net, [torch.randn(2, 1, 16, 16)], [torch.randn(2, 2, 16, 16)], mse


def _monai_basic_unet():
    """monai's BasicUNet: replication padding in its up-sampling blocks, max pooling, bilinear upsampling. No bias in
    the convolutions an instance norm follows (it cancels them: their gradients would be rounding noise)."""
    from monai.networks.nets import BasicUNet

    net = BasicUNet(2, 1, 2, features=(4, 4, 8, 8, 16, 4), bias=False, upsample="nontrainable")
    return net, [torch.randn(1, 1, 32, 32)], [torch.randn(1, 2, 32, 32)], mse


REAL_LIBRARY = {  # name: () -> (module, inputs, targets, loss_fn)
    "kornia-geometry": lambda: (KorniaCalls(), [torch.randn(4, 1200)], [], lambda total: total),
    "monai-unet-batchnorm": _monai_unet,
    "monai-basicunet-bilinear": _monai_basic_unet,
}


@functools.cache
def library_export(name):
    torch.manual_seed(0)
    module, inputs, targets, loss_fn = REAL_LIBRARY[name]()
    return (module, *export_case(module.train(), loss_fn, inputs, targets))


@pytest.mark.parametrize("name,path", grouped(REAL_LIBRARY, "library"))
def test_real_library_step_matches_torch_autograd(name, path):
    model, _, want = library_export(name)[1:]
    assert not {n.domain for n in model.graph.node} - {"", "ai.onnx", opset.DOMAIN}
    assert_matches(run_path(library_export, name, path), want, [o.name for o in model.graph.output])
