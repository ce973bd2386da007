"""Converters in: PyTorch export of the aten backward ops, and gradient graphs of ONNX GridSample / Resize."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from resample_grad import converters, opset, runtime
from resample_grad.opset import ResampleGradError

torch = pytest.importorskip("torch")
F = torch.nn.functional
warnings.filterwarnings("ignore")


def run_both(model, feeds):
    """The exported model on the native kernels and on the function bodies."""
    return {"kernel": runtime.run(runtime.session(model), feeds),
            "function": runtime.run(onnxruntime.InferenceSession(model.SerializeToString()), feeds)}


def close(ours, want, rtol=1e-4):
    want = want.detach().numpy()
    np.testing.assert_allclose(ours, want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max()))


# --------------------------------------------------------------------------- torch export

H, W = 6, 7


def _base():
    ys, xs = torch.meshgrid((torch.arange(H) * 2 + 1) / H - 1, (torch.arange(W) * 2 + 1) / W - 1, indexing="ij")
    return torch.stack([xs.reshape(-1), ys.reshape(-1), torch.ones(H * W)], 1)


@pytest.mark.parametrize("mode,padding,corners", [(m, p, i % 2) for i, (m, p) in enumerate(
    itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"]))])
def test_export_spatial_transformer_step(mode, padding, corners):
    """affine grid (a matmul, as affine_grid computes it) + grid_sample, backward by torch.func.vjp."""
    base = _base()

    def step(x, theta, go):
        def forward(x, theta):
            grid = (base @ theta.transpose(1, 2)).reshape(2, H, W, 2)
            return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=bool(corners))
        return torch.func.vjp(forward, x, theta)[1](go)

    gen = torch.Generator().manual_seed(0)
    x, go = torch.randn(2, 3, 5, 5, generator=gen), torch.randn(2, 3, H, W, generator=gen)
    theta = torch.tensor([[1.0, 0.1, 0.05], [-0.1, 0.9, 0.0]]) + 0.2 * torch.randn(2, 2, 3, generator=gen)
    model = converters.export(step, (x, theta, go))
    ops = [n for n in model.graph.node if n.domain == opset.DOMAIN]
    assert [n.op_type for n in ops] == ["GridSampler2DGrad"]
    attrs = {a.name: helper.get_attribute_value(a) for a in ops[0].attribute}
    assert attrs == {"interpolation_mode": mode.encode(), "padding_mode": padding.encode(), "align_corners": corners}
    onnx.checker.check_model(model, full_check=True)
    want = step(x, theta, go)
    feeds = dict(zip([i.name for i in model.graph.input], [x.numpy(), theta.numpy(), go.numpy()], strict=True))
    for outputs in run_both(model, feeds).values():
        for ours, expected in zip(outputs, want, strict=True):
            close(ours, expected)


def test_export_output_mask_leaves_the_grid_gradient_out():
    def grad_x_only(x, grid, go):
        return torch.func.vjp(lambda x: F.grid_sample(x, grid, align_corners=False), x)[1](go)[0]

    x, grid, go = torch.randn(1, 2, 5, 5), torch.rand(1, 3, 4, 2) * 2 - 1, torch.randn(1, 2, 3, 4)
    model = converters.export(grad_x_only, (x, grid, go))
    (node,) = [n for n in model.graph.node if n.domain == opset.DOMAIN]
    assert node.output[1] == ""  # the grid gradient is not computed
    feeds = dict(zip([i.name for i in model.graph.input], [x.numpy(), grid.numpy(), go.numpy()], strict=True))
    for outputs in run_both(model, feeds).values():
        close(outputs[0], grad_x_only(x, grid, go))


def test_export_upsampling_decoder():
    """nearest-exact 1d and 2d, bilinear with and without align_corners, backward by torch.func.vjp."""
    def decoder_grads(z, seq, g_img, g_seq):
        def forward(z, seq):
            a = F.interpolate(z, scale_factor=2, mode="nearest-exact")
            b = F.interpolate(a, size=(13, 11), mode="bilinear", align_corners=True)
            c = F.interpolate(b, scale_factor=1.5, mode="bilinear", align_corners=False)
            s = F.interpolate(seq, size=17, mode="nearest-exact")
            return c, s
        return torch.func.vjp(forward, z, seq)[1]((g_img, g_seq))

    z, seq = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 7)
    g_img, g_seq = torch.randn(2, 3, 19, 16), torch.randn(2, 3, 17)
    model = converters.export(decoder_grads, (z, seq, g_img, g_seq))
    found = sorted(n.op_type for n in model.graph.node if n.domain == opset.DOMAIN)
    assert found == ["ResizeBilinearV2Grad", "ResizeBilinearV2Grad", "UpsampleNearestExact1dGrad",
                     "UpsampleNearestExact2dGrad"]
    modes = sorted((helper.get_attribute_value(n.attribute[[a.name for a in n.attribute].index("align_corners")]),
                    helper.get_attribute_value(n.attribute[[a.name for a in n.attribute].index("half_pixel_centers")]))
                   for n in model.graph.node if n.op_type == "ResizeBilinearV2Grad")
    assert modes == [(0, 1), (1, 0)]
    want = decoder_grads(z, seq, g_img, g_seq)
    feeds = dict(zip([i.name for i in model.graph.input], [t.numpy() for t in (z, seq, g_img, g_seq)], strict=True))
    for outputs in run_both(model, feeds).values():
        for ours, expected in zip(outputs, want, strict=True):
            close(ours, expected)


FAMILY_OVERLOADS = ["grid_sampler_2d_backward", "grid_sampler_3d_backward", "upsample_nearest1d_backward",
                    "upsample_nearest2d_backward", "upsample_nearest3d_backward", "_upsample_nearest_exact1d_backward",
                    "_upsample_nearest_exact2d_backward", "_upsample_nearest_exact3d_backward",
                    "upsample_linear1d_backward", "upsample_bilinear2d_backward", "upsample_trilinear3d_backward",
                    "upsample_bicubic2d_backward", "_upsample_bilinear2d_aa_backward",
                    "_upsample_bicubic2d_aa_backward"]


@pytest.mark.parametrize("name", FAMILY_OVERLOADS)
def test_translation_table_names_the_aten_overloads(name):
    """Every overload of every backward of the family (.default, and .vec where torch has one), documented."""
    table = converters.torch_translation_table()
    packet = getattr(torch.ops.aten, name)
    for overload in [o for o in packet.overloads() if o in ("default", "vec")]:
        translation = table[getattr(packet, overload)]
        assert translation.__doc__.startswith(name + "(")


# --------------------------------------------------------------------------- gradient graphs of ONNX forward models

def forward_model(node, inputs, initializers=(), opset_version=18):
    graph = helper.make_graph([node], "forward",
                              [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)])


GRID_SAMPLE_CASES = [(m, p, c, v) for (m, p, c), v in zip(
    itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [0, 1]),
    itertools.cycle([16, 20]))]


@pytest.mark.parametrize("mode,padding,corners,opset_version", GRID_SAMPLE_CASES)
def test_gradient_of_grid_sample(mode, padding, corners, opset_version):
    spelled = {20: {"bilinear": "linear", "bicubic": "cubic"}}.get(opset_version, {}).get(mode, mode)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=spelled, padding_mode=padding,
                            align_corners=corners)
    forward = forward_model(node, {"x": [2, 3, 5, 6], "grid": [2, 4, 7, 2]}, opset_version=max(opset_version, 18))
    model = converters.gradient_model(forward, wrt=["x", "grid"])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (2, 4, 7, 2)).astype(np.float32)
    grad_y = rng.standard_normal((2, 3, 4, 7)).astype(np.float32)
    tx, tg = torch.from_numpy(x).requires_grad_(), torch.from_numpy(grid).requires_grad_()
    y = F.grid_sample(tx, tg, mode=mode, padding_mode=padding, align_corners=bool(corners))
    want = torch.autograd.grad(y, [tx, tg], torch.from_numpy(grad_y))
    for outputs in run_both(model, {"x": x, "grid": grid, "grad_y": grad_y}).values():
        np.testing.assert_allclose(outputs[0], y.detach().numpy(), rtol=1e-5, atol=1e-5)  # the forward
        close(outputs[1], want[0])
        close(outputs[2], want[1])


RESIZE_CASES = {  # name: (Resize attributes, torch interpolate kwargs, input size, output size)
    "linear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                             dict(mode="bilinear", align_corners=True), (5, 6), (9, 4)),
    "linear_half_pixel": (dict(mode="linear", coordinate_transformation_mode="half_pixel"),
                          dict(mode="bilinear", align_corners=False), (5, 6), (9, 4)),
    "linear_pytorch_half_pixel": (dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
                                  dict(mode="bilinear", align_corners=False), (4, 4), (8, 8)),
    "nearest_exact_2d": (dict(mode="nearest", coordinate_transformation_mode="half_pixel",
                              nearest_mode="round_prefer_ceil"),
                         dict(mode="nearest-exact"), (5, 6), (11, 4)),
    "nearest_exact_1d": (dict(mode="nearest", coordinate_transformation_mode="half_pixel",
                              nearest_mode="round_prefer_ceil"),
                         dict(mode="nearest-exact"), (6,), (13,)),
}


@pytest.mark.parametrize("name", list(RESIZE_CASES))
def test_gradient_of_resize(name):
    attrs, torch_kwargs, in_size, out_size = RESIZE_CASES[name]
    x_shape, y_shape = (2, 3, *in_size), (2, 3, *out_size)
    sizes = numpy_helper.from_array(np.array(y_shape, np.int64), "sizes")
    forward = forward_model(helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs), {"x": list(x_shape)},
                            [sizes])
    model = converters.gradient_model(forward, wrt=["x"])
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(np.float32)
    grad_y = rng.standard_normal(y_shape).astype(np.float32)
    tx = torch.from_numpy(x).requires_grad_()
    y = F.interpolate(tx, size=out_size, **torch_kwargs)
    (want,) = torch.autograd.grad(y, [tx], torch.from_numpy(grad_y))
    for outputs in run_both(model, {"x": x, "grad_y": grad_y}).values():
        close(outputs[1], want)


def test_every_resize_maps_to_resize_grad_with_the_forward_inputs():
    """The gradient node reads the forward's own roi / scales / sizes and copies every attribute."""
    scales = numpy_helper.from_array(np.array([1, 1, 1.5, 0.75], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic",
                            coordinate_transformation_mode="asymmetric", cubic_coeff_a=-0.5, exclude_outside=1)
    model = converters.gradient_model(forward_model(node, {"x": [1, 2, 6, 8]}, [scales]), wrt=["x"])
    (grad,) = [n for n in model.graph.node if n.domain == opset.DOMAIN]
    assert grad.op_type == "ResizeGrad"
    assert list(grad.input)[1:4] in (["x", "", "scales"], ["x", f"{opset.DOMAIN}_empty_float32", "scales"])
    attrs = {a.name: helper.get_attribute_value(a) for a in grad.attribute}
    assert attrs == {"mode": b"cubic", "coordinate_transformation_mode": b"asymmetric", "cubic_coeff_a": -0.5,
                     "exclude_outside": 1}


def test_gradient_through_a_chain_with_elementwise_ops():
    """y = Resize(GridSample(x, grid) * 2 - b): gradients for x and grid through the whole chain."""
    nodes = [helper.make_node("GridSample", ["x", "grid"], ["s"], mode="bilinear", padding_mode="border"),
             helper.make_node("Mul", ["s", "two"], ["m"]),
             helper.make_node("Sub", ["m", "b"], ["d"]),
             helper.make_node("Resize", ["d", "", "", "sizes"], ["y"], mode="linear",
                              coordinate_transformation_mode="half_pixel")]
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array([1, 2, 8, 10], np.int64), "sizes")]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", f, [1, 2, 5, 5]),
                                               helper.make_tensor_value_info("grid", f, [1, 4, 5, 2]),
                                               helper.make_tensor_value_info("b", f, [1, 2, 4, 5])],
                              [helper.make_tensor_value_info("y", f, None)], initializer=inits)
    forward = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model = converters.gradient_model(forward, wrt=["x", "grid"])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 4, 5, 2)).astype(np.float32)
    b = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    grad_y = rng.standard_normal((1, 2, 8, 10)).astype(np.float32)
    tx, tg = torch.from_numpy(x).requires_grad_(), torch.from_numpy(grid).requires_grad_()
    y = F.interpolate(F.grid_sample(tx, tg, padding_mode="border", align_corners=False) * 2 - torch.from_numpy(b),
                      size=(8, 10), mode="bilinear", align_corners=False)
    want = torch.autograd.grad(y, [tx, tg], torch.from_numpy(grad_y))
    for outputs in run_both(model, {"x": x, "grid": grid, "b": b, "grad_y": grad_y}).values():
        close(outputs[1], want[0])
        close(outputs[2], want[1])


def test_gradients_of_roi_scales_or_sizes_are_refused():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="linear")
    f = TensorProto.FLOAT
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", f, [1, 2, 4, 4]),
                                            helper.make_tensor_value_info("scales", f, [4])],
                              [helper.make_tensor_value_info("y", f, None)])
    with pytest.raises(ResampleGradError, match="node 'up' \\(Resize\\): gradients for scales are not defined"):
        converters.gradient_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), wrt=["scales"])


def test_cubic_grid_sample_of_a_volume_is_refused():
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp", mode="cubic")
    forward = forward_model(node, {"x": [1, 2, 3, 4, 5], "grid": [1, 2, 3, 4, 3]}, opset_version=20)
    with pytest.raises(ResampleGradError, match="node 'warp' \\(GridSample\\): cubic GridSample of a 5-D X"):
        converters.gradient_model(forward, wrt=["x"])


def test_unsupported_op_on_the_path_is_named():
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
                              [helper.make_tensor_value_info("x", f, [1, 2])],
                              [helper.make_tensor_value_info("y", f, None)])
    with pytest.raises(ResampleGradError, match="node 'act' \\(Relu\\): op 'Relu' has no backward rule"):
        converters.gradient_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), wrt=["x"])
