"""Every Resize and GridSample case that the installed onnx ships as a backend node test gets a gradient.

The cases are discovered from onnx.backend.test.case (so a new onnx release adds its cases): each
forward model goes through converters.gradient_model in two variants, roi / scales / sizes as
initializers and fed at run time, and the gradient runs on both paths (native kernels, onnxscript
functions). Checked by the adjoint identity with onnxruntime's own forward,
<Resize(v) - Resize(0), w> == <v, dX> to 1e-5 relative to |v| |dX| (Resize(0) removes the
tf_crop_and_resize extrapolation constant), and for GridSample the grid gradient against torch autograd.
"""
from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

from resample_grad import converters, runtime

torch = pytest.importorskip("torch")


@functools.cache
def _cases():
    import warnings

    from onnx.backend.test.case import node as node_cases
    # one collection of every op (it registers the cases once per process); generating the Cast cases
    # overflows on purpose
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cases = node_cases.collect_testcases()
    return {c.name: c for c in cases if c.name.startswith(("test_resize_", "test_gridsample"))}


CASE_NAMES = sorted(_cases())
VARIANTS = ("initializers", "fed")


def test_the_installed_onnx_ships_the_cases():
    """onnx 1.23 ships 39 Resize and 18 GridSample node cases; fewer would mean the discovery broke."""
    assert sum(n.startswith("test_resize_") for n in CASE_NAMES) >= 39
    assert sum(n.startswith("test_gridsample") for n in CASE_NAMES) >= 18


@functools.cache
def forward_and_gradient(name: str, variant: str):
    """(forward model, feeds, gradient model, wrt) of a case; shared by the tests of both paths."""
    case = _cases()[name]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    node = model.graph.node[0]
    feeds = dict(zip([i.name for i in model.graph.input], case.data_sets[0][0], strict=True))
    if variant == "initializers":  # every input but X (and the grid) becomes an initializer
        kept = node.input[:2] if node.op_type == "GridSample" else node.input[:1]
        for name_ in [n for n in node.input if n and n not in kept and n in feeds]:
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(feeds.pop(name_)), name_))
        inputs = [i for i in model.graph.input if i.name in feeds]
        del model.graph.input[:]
        model.graph.input.extend(inputs)
    wrt = list(node.input[:2]) if node.op_type == "GridSample" else [node.input[0]]
    gradient = converters.gradient_model(model, wrt=wrt)
    return model, feeds, gradient, wrt


def _gradients(gradient_model, feeds, path):
    session = (runtime.session(gradient_model) if path == "kernel"
               else onnxruntime.InferenceSession(gradient_model.SerializeToString(),
                                                 providers=["CPUExecutionProvider"]))
    names = [o.name for o in gradient_model.graph.output]
    return dict(zip(names, session.run(None, feeds), strict=True))


@pytest.mark.parametrize("path", ["kernel", "function"])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", CASE_NAMES)
def test_gradient_satisfies_the_adjoint_identity(name, variant, path):
    model, feeds, gradient, wrt = forward_and_gradient(name, variant)
    x_name = wrt[0]
    forward = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    x = feeds[x_name]
    v = rng.standard_normal(x.shape).astype(np.float32)
    with_v, with_zero = dict(feeds), dict(feeds)
    with_v[x_name], with_zero[x_name] = v, np.zeros_like(v)
    linear_part = forward.run(None, with_v)[0].astype(np.float64) - forward.run(None, with_zero)[0]
    w = rng.standard_normal(linear_part.shape).astype(np.float32)
    grads = _gradients(gradient, {**with_v, f"grad_{model.graph.output[0].name}": w}, path)
    dx = grads[f"grad_{x_name}"].astype(np.float64)
    assert dx.shape == x.shape and dx.dtype == np.float64
    lhs, rhs = float((linear_part * w).sum()), float((v.astype(np.float64) * dx).sum())
    assert abs(lhs - rhs) <= 1e-5 * np.linalg.norm(v) * np.linalg.norm(dx), (lhs, rhs)
    if len(wrt) == 2:  # GridSample: the grid gradient against torch autograd
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
        mode = {b"linear": "bilinear", b"cubic": "bicubic"}.get(attrs.get("mode", b"linear"),
                                                                attrs.get("mode", b"bilinear").decode())
        tx = torch.from_numpy(v).requires_grad_()
        tg = torch.from_numpy(feeds[wrt[1]]).requires_grad_()
        y = torch.nn.functional.grid_sample(tx, tg, mode=mode,
                                            padding_mode=attrs.get("padding_mode", b"zeros").decode(),
                                            align_corners=bool(attrs.get("align_corners", 0)))
        want_x, want_grid = torch.autograd.grad(y, [tx, tg], torch.from_numpy(w))
        scale = max(1.0, float(want_grid.abs().max()))
        np.testing.assert_allclose(grads[f"grad_{wrt[1]}"], want_grid.numpy(), rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(grads[f"grad_{x_name}"], want_x.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", ["kernel", "function"])
def test_scales_fed_at_run_time_give_the_right_gradient(path):
    """The silent wrong gradient of the first gradient_model: test_resize_downsample_scales_linear with its scales
    a graph input (not an initializer) used the size ratio. ResizeGrad reads the fed scales: the gradient equals
    the one of the initializer variant and satisfies the adjoint identity."""
    name = "test_resize_downsample_scales_linear"
    fed_model, fed_feeds, fed_gradient, _ = forward_and_gradient(name, "fed")
    _, init_feeds, init_gradient, _ = forward_and_gradient(name, "initializers")
    scales_name = fed_model.graph.node[0].input[2]
    assert scales_name in fed_feeds and scales_name not in init_feeds  # really fed at run time
    np.testing.assert_allclose(fed_feeds[scales_name], [1.0, 1.0, 0.6, 0.6], rtol=1e-7)
    x = fed_feeds["X"]
    w = np.arange(1.0, 1.0 + 2, dtype=np.float32).reshape(1, 1, 1, 2)
    fed = _gradients(fed_gradient, {**fed_feeds, "grad_Y": w}, path)["grad_X"]
    initialised = _gradients(init_gradient, {**init_feeds, "grad_Y": w}, path)["grad_X"]
    np.testing.assert_array_equal(fed, initialised)
    # the forward reads X at src = (o + 0.5) / 0.6 - 0.5: o = 0 -> 0.333 (rows 0/1: 0.667, 0.333),
    # o = 1 -> 2.0 (column 2 exactly); the rows, half-pixel 2 -> 1, read 1/0.6 - 0.5 = 0.333 too
    want = np.zeros((1, 1, 2, 4), np.float64)
    for col, weight in ((0, 2 / 3), (1, 1 / 3)):
        want[0, 0, 0, col] += 1.0 * weight * (2 / 3)
        want[0, 0, 1, col] += 1.0 * weight * (1 / 3)
    want[0, 0, 0, 2] += 2.0 * (2 / 3)
    want[0, 0, 1, 2] += 2.0 * (1 / 3)
    np.testing.assert_allclose(fed, want, rtol=1e-6)
    assert x.shape == (1, 1, 2, 4)
