"""Writes the forward models of the training test table and torch's references into a folder.

    python tests_training/make_cases.py OUT_DIR [NAME ...]

Run with a Python that has torch (2.13), onnx and onnxruntime: the test environment of the README, not
onnxruntime-training's (which has no torch). For each case of cases.py:

    OUT_DIR/<name>.onnx  the forward model (IR version 9, so that onnx 1.16 reads it)
    OUT_DIR/<name>.npz   inputs ("input:<name>", in the model's order), target, and torch's loss, the gradient of
                         every parameter ("grad:<p>"), its value ("param:<p>") and its value after one
                         torch.optim.SGD step ("sgd:<p>"); the loss is F.mse_loss(model(inputs), target)

Models come from torch's TorchScript exporter (dynamo=False, training mode, no constant folding: the route
onnxruntime-training's documentation takes), except the Resize cases: those are ONNX graphs built directly, and
their torch reference runs the Resize as onnxruntime's forward computes it, a matrix obtained by running
onnxruntime's Resize on a basis (an independent source: the code under test is the gradient).
"""
from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cases import CASES, LEARNING_RATE  # noqa: E402

IR_VERSION = 9


class UNet(nn.Module):
    """enc -> downsample (max pool 2-D; a strided conv 3-D: onnxruntime-training's AveragePool / MaxPool 3-D
    gradients are not what this table tests) -> mid -> upsample -> concat with enc -> dec."""

    def __init__(self, mode, align_corners=None, size=False, dims=2):
        super().__init__()
        conv = nn.Conv2d if dims == 2 else nn.Conv3d
        self.dims, self.mode, self.align_corners, self.size = dims, mode, align_corners, size
        self.enc = conv(2, 4, 3, padding=1)
        self.down = conv(4, 4, 2, stride=2) if dims == 3 else None
        self.mid = conv(4, 4, 3, padding=1)
        self.dec = conv(8, 2, 3, padding=1)

    def forward(self, x):
        e = torch.relu(self.enc(x))
        d = F.max_pool2d(e, 2) if self.dims == 2 else self.down(e)
        m = torch.relu(self.mid(d))
        kwargs = {} if self.align_corners is None else {"align_corners": self.align_corners}
        if self.size:
            u = F.interpolate(m, size=tuple(e.shape[2:]), mode=self.mode, **kwargs)
        else:
            u = F.interpolate(m, scale_factor=2, mode=self.mode, **kwargs)
        return self.dec(torch.cat([u, e], 1))


def base_grid(spatial, stretch=1.15):
    """The identity sampling grid (x first), a little wider than the image so that padding matters."""
    axes = [torch.linspace(-stretch, stretch, n) for n in spatial]
    mesh = torch.meshgrid(*axes, indexing="ij")
    return torch.stack(mesh[::-1], -1).unsqueeze(0)


class Warp(nn.Module):
    """flow = 0.3 tanh(conv(x)); warps conv features of x (image_grad) or x itself along base + flow."""

    def __init__(self, mode, padding, align_corners, dims=2, image_grad=True, spatial=None):
        super().__init__()
        conv = nn.Conv2d if dims == 2 else nn.Conv3d
        self.flow = conv(2, dims, 3, padding=1)
        self.feat = conv(2, 3, 3, padding=1) if image_grad else None
        self.mode, self.padding, self.align_corners, self.dims = mode, padding, align_corners, dims
        self.base = base_grid(spatial)

    def grid(self, x):
        flow = 0.3 * torch.tanh(self.flow(x))
        return self.base + flow.permute(0, 2, 3, 1) if self.dims == 2 else self.base + flow.permute(0, 2, 3, 4, 1)

    def forward(self, x):
        image = self.feat(x) if self.feat is not None else x
        return F.grid_sample(image, self.grid(x), mode=self.mode, padding_mode=self.padding,
                             align_corners=self.align_corners)


class WarpTwo(Warp):
    """Two grid_samples of different modes, paddings and align_corners on one flow field."""

    def __init__(self, spatial):
        super().__init__("bilinear", "zeros", False, spatial=spatial)

    def forward(self, x):
        image, grid = self.feat(x), self.grid(x)
        return (F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
                + F.grid_sample(image, 0.9 * grid, mode="bicubic", padding_mode="reflection", align_corners=True))


class STN(nn.Module):
    """theta = identity + loc(x) (a linear layer), grid = affine_grid(theta), y = grid_sample(x, grid)."""

    def __init__(self, mode, padding, align_corners, shape, dims=2):
        super().__init__()
        self.shape, self.dims = list(shape), dims
        self.loc = nn.Linear(int(np.prod(shape[1:])), dims * (dims + 1))
        with torch.no_grad():
            self.loc.weight.mul_(0.05)
            self.loc.bias.copy_(torch.eye(dims, dims + 1).flatten() + 0.05 * torch.randn(dims * (dims + 1)))
        self.mode, self.padding, self.align_corners = mode, padding, align_corners

    def forward(self, x):
        theta = self.loc(x.flatten(1)).view(-1, self.dims, self.dims + 1)
        grid = F.affine_grid(theta, self.shape, align_corners=self.align_corners)
        return F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding, align_corners=self.align_corners)


def torch_case(spec):
    """(module, example input) for a torch case."""
    kind = spec["kind"]
    if kind == "unet":
        dims = spec.get("dims", 2)
        x = torch.randn(2, 2, 8, 8) if dims == 2 else torch.randn(1, 2, 4, 8, 8)
        return UNet(spec["mode"], spec.get("align_corners"), spec.get("size", False), dims), x
    if kind == "warp":
        dims = spec.get("dims", 2)
        x = torch.randn(2, 2, 7, 9) if dims == 2 else torch.randn(1, 2, 4, 5, 6)
        return Warp(spec["mode"], spec["padding"], spec["align_corners"], dims, spec.get("image_grad", True),
                    list(x.shape[2:])), x
    if kind == "warp_two":
        x = torch.randn(2, 2, 7, 9)
        return WarpTwo(list(x.shape[2:])), x
    if kind == "stn":
        dims = spec.get("dims", 2)
        x = torch.randn(2, 2, 8, 8) if dims == 2 else torch.randn(2, 2, 4, 5, 6)
        return STN(spec["mode"], spec["padding"], spec["align_corners"], x.shape, dims), x
    raise ValueError(f"unknown kind {kind!r}")


def export(module, x, opset, path):
    module.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.onnx's deprecation and training-mode warnings
        torch.onnx.export(module, (x,), str(path), dynamo=False, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["input"], output_names=["output"])
    model = onnx.load(str(path))
    model.ir_version = min(model.ir_version, IR_VERSION)
    onnx.save(model, str(path))
    return model


def reference(module, inputs, seed):
    """Torch's loss, gradients and one SGD step for MSE against a random target."""
    with torch.no_grad():
        target = torch.randn(module(*inputs).shape, generator=torch.Generator().manual_seed(seed))
    params = dict(module.named_parameters())
    before = {name: p.detach().clone() for name, p in params.items()}
    sgd = torch.optim.SGD(module.parameters(), lr=LEARNING_RATE)
    sgd.zero_grad()
    loss = F.mse_loss(module(*inputs), target)
    loss.backward()
    out = {"target": target.numpy(), "loss": np.array(loss.item(), np.float32)}
    for name, p in params.items():
        out["grad:" + name] = p.grad.numpy().copy()
        out["param:" + name] = before[name].numpy()
    sgd.step()
    for name, p in params.items():
        out["sgd:" + name] = p.detach().numpy().copy()
    return out


# --------------------------------------------------------------------------- Resize built directly

def _resize_inputs(spec, batch):
    """(roi, scales, sizes) for a Resize whose batch axis has length `batch` (None: not given)."""
    axes = spec["attrs"].get("axes")
    scales, sizes, roi = spec.get("scales"), spec.get("sizes"), spec.get("roi")
    if sizes is not None and axes is None:
        sizes = [batch, 1] + list(sizes[2:])
    if scales is not None and axes is None:
        scales = [1.0, 1.0] + list(scales[2:])
    return roi, scales, sizes


def onnxruntime_resize_matrix(spec, spatial):
    """Resize as onnxruntime's CPU kernel computes it on one channel: y = M x + c (c: the extrapolation value
    tf_crop_and_resize writes outside the roi), M [out points, in points], from onnxruntime's forward run on the
    basis of the input points (batch axis) and on zeros."""
    points = int(np.prod(spatial))
    roi, scales, sizes = _resize_inputs(spec, points)
    inits, names = [], ["x"]
    for name, value, elem in (("roi", roi, TensorProto.FLOAT), ("scales", scales, TensorProto.FLOAT),
                              ("sizes", sizes, TensorProto.INT64)):
        if value is None:
            names.append("")
        else:
            inits.append(helper.make_tensor(name, elem, [len(value)], list(value)))
            names.append(name)
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **spec["attrs"])
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", 19)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    basis = np.eye(points, dtype=np.float32).reshape([points, 1] + list(spatial))
    ones = session.run(None, {"x": basis})[0]
    zeros = session.run(None, {"x": np.zeros_like(basis)})[0]
    out_spatial = list(ones.shape[2:])
    constant = zeros[0, 0].reshape(-1)
    matrix = (ones - zeros).reshape(points, -1).T
    return torch.from_numpy(matrix.astype(np.float32)), torch.from_numpy(constant.astype(np.float32)), out_spatial


class ResizeNet(nn.Module):
    """conv1 -> Resize (onnxruntime's forward as a matrix) -> conv2, one spatial rank of 1, 2 or 3."""

    def __init__(self, spec, spatial):
        super().__init__()
        conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[len(spatial)]
        self.conv1 = conv(2, 4, 3, padding=1)
        self.conv2 = conv(4, 2, 3, padding=1)
        self.matrix, self.constant, self.out_spatial = onnxruntime_resize_matrix(spec, spatial)

    def forward(self, x):
        h = self.conv1(x)
        n, c = h.shape[:2]
        r = (h.reshape(n, c, -1) @ self.matrix.T + self.constant).reshape([n, c] + self.out_spatial)
        return self.conv2(r)


def resize_case(name, spec, out_dir, seed):
    spatial = spec.get("spatial", [5, 6])
    x = torch.randn([2, 2] + list(spatial))
    net = ResizeNet(spec, spatial)
    roi, scales, sizes = spec.get("roi"), spec.get("scales"), spec.get("sizes")
    rank = 2 + len(spatial)
    conv_attrs = dict(pads=[1] * (2 * len(spatial)), kernel_shape=[3] * len(spatial))
    inits = [numpy_helper.from_array(p.detach().numpy(), n) for n, p in net.named_parameters()]
    graph_inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(x.shape))]
    feeds = {"input": x.numpy()}
    names = ["h", "", "", ""]
    if roi is not None:
        inits.append(helper.make_tensor("roi", TensorProto.FLOAT, [len(roi)], roi))
        names[1] = "roi"
    if scales is not None:
        names[2] = "scales"
        if spec.get("runtime_scales"):
            graph_inputs.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [len(scales)]))
            feeds["scales"] = np.array(scales, np.float32)
        else:
            inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
    if sizes is not None:
        names[3] = "sizes"
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], sizes))
    while names[-1] == "":
        names.pop()
    nodes = [helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["h"], name="conv1", **conv_attrs),
             helper.make_node("Resize", names, ["r"], name="resize", **spec["attrs"]),
             helper.make_node("Conv", ["r", "conv2.weight", "conv2.bias"], ["output"], name="conv2", **conv_attrs)]
    graph = helper.make_graph(nodes, name, graph_inputs,
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [None] * rank)],
                              initializer=inits)
    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", 19)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(out_dir / f"{name}.onnx"))
    return net, [x], feeds


def main(argv):
    out_dir = pathlib.Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or list(CASES)
    for index, name in enumerate(names):
        spec = CASES[name]
        torch.manual_seed(1000 + index)
        if spec["kind"] == "resize":
            module, inputs, feeds = resize_case(name, spec, out_dir, index)
        else:
            module, x = torch_case(spec)
            export(module, x, spec["opset"], out_dir / f"{name}.onnx")
            inputs, feeds = [x], {"input": x.numpy()}
        arrays = reference(module, inputs, seed=index)
        arrays.update({"input:" + k: v for k, v in feeds.items()})
        np.savez(out_dir / f"{name}.npz", **arrays)
    print(f"{len(names)} cases in {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1:])
