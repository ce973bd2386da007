"""Hostile input: a defined result or a clear error on every path, never a crash.

Expected values come from the reference on a modified, non-hostile input (an independent
statement of the documented behaviour), and from torch where torch defines the result.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import PATHS, one_node_model, run_model
from resample_grad import opset, runtime
from resample_grad.opset import ResampleGradError

N, C, H, W, HO, WO = 1, 2, 4, 5, 2, 3
POINT = (0, 1, 1)  # the grid point that gets the hostile coordinate
SPECIAL = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf, "+1e30": 1e30, "-1e30": -1e30}


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, C, HO, WO)).astype(np.float32), rng.standard_normal((N, C, H, W)).astype(np.float32),
            rng.uniform(-0.9, 0.9, (N, HO, WO, 2)).astype(np.float32))


def _run(path, go, x, grid, attrs):
    model = one_node_model("GridSampler2DGrad", {"grad_output": go.shape, "input": x.shape, "grid": grid.shape},
                           ["grad_input", "grad_grid"], attrs)
    return run_model(model, {"grad_output": go, "input": x, "grid": grid}, path)


def _reference(go, x, grid, attrs):
    return opset.OPS["GridSampler2DGrad"].reference(go, x, grid, attrs["interpolation_mode"], attrs["padding_mode"],
                                                    attrs["align_corners"])


def _expected(value, axis, attrs, go, x, grid):
    """(grad_input, grad_grid, the axes of the point whose grid gradient must be ~0) as documented."""
    interp, padding, corners = attrs["interpolation_mode"], attrs["padding_mode"], attrs["align_corners"]
    reads_nothing = (np.isnan(value) or padding in ("zeros", "reflection")
                     or (interp == "bicubic" and not np.isfinite(value)))
    moved = grid.copy()
    if reads_nothing:
        go_without = go.copy()
        go_without[POINT[0], :, POINT[1], POINT[2]] = 0  # the point contributes nothing
        moved[POINT] = 0.0
        gi, gg = _reference(go_without, x, moved, attrs)
        gg = gg.copy()
        gg[POINT] = 0
        return gi, gg, ()
    size = (W, H)[axis]
    edge = (1.0 if corners else 1.0 - 1.0 / size) * np.sign(value)  # the centre of the edge pixel
    moved[POINT + (axis,)] = edge
    gi, gg = _reference(go, x, moved, attrs)
    return gi, gg, (axis,)


HOSTILE = [(i, p, c, name, axis) for (i, p, c), name, axis in itertools.product(
    itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [0, 1]), SPECIAL, [0, 1])]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("interp,padding,corners,name,axis", HOSTILE)
def test_hostile_grid_coordinate(interp, padding, corners, name, axis, path):
    attrs = dict(interpolation_mode=interp, padding_mode=padding, align_corners=corners)
    go, x, grid = _inputs()
    grid[POINT + (axis,)] = SPECIAL[name]
    gi, gg = _run(path, go, x, grid, attrs)
    assert np.isfinite(gi).all() and np.isfinite(gg).all()
    want_gi, want_gg, flat_axes = _expected(SPECIAL[name], axis, attrs, go, x, _inputs()[2])
    np.testing.assert_allclose(gi, want_gi, rtol=1e-5, atol=1e-5)
    other = [a for a in (0, 1) if a not in flat_axes]
    if flat_axes:  # clamped to the edge: that axis's gradient vanishes, the other follows the edge point
        np.testing.assert_allclose(gg[POINT + (axis,)], 0.0, atol=1e-4)
        np.testing.assert_allclose(gg[POINT][other], want_gg[POINT][other], rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(gg[POINT], 0.0)
    mask = np.ones(gg.shape[:3], bool)
    mask[POINT] = False
    np.testing.assert_allclose(gg[mask], want_gg[mask], rtol=1e-5, atol=1e-5)


TORCH_DEFINED = [(i, p, name) for i, p, name in itertools.product(["bilinear", "nearest"], ["zeros", "border"], SPECIAL)
                 if not (p == "border" and name == "nan")]  # border + NaN: torch's result depends on its code path


@pytest.mark.parametrize("interp,padding,name", TORCH_DEFINED)
def test_hostile_grid_matches_torch_where_torch_defines_it(interp, padding, name):
    torch = pytest.importorskip("torch")
    go, x, grid = _inputs(1)
    grid[POINT + (0,)] = SPECIAL[name]
    ti, tg = torch.ops.aten.grid_sampler_2d_backward(torch.from_numpy(go), torch.from_numpy(x), torch.from_numpy(grid),
                                                     ["bilinear", "nearest"].index(interp), ["zeros", "border"].index(padding),
                                                     False, [True, True])
    for path in PATHS:
        gi, gg = _run(path, go, x, grid, dict(interpolation_mode=interp, padding_mode=padding, align_corners=0))
        np.testing.assert_allclose(gi, ti.numpy(), rtol=1e-5, atol=1e-5)
        # torch's CPU kernel gives NaN grid gradients for a NaN or infinite point (its scalar path, as on
        # CUDA, gives 0): where torch is NaN, ours is the documented 0
        finite = np.isfinite(tg.numpy())
        np.testing.assert_allclose(gg[finite], tg.numpy()[finite], rtol=1e-5, atol=1e-5)
        assert (gg[~finite] == 0).all()


# --------------------------------------------------------------------------- scales

SCALES = [  # (value, valid?, text)
    (0.0, True, None), (1e30, True, None), (2.5, True, None),
    (-1.0, False, "'scales' must be a finite scale >= 0"), (float("nan"), False, "'scales' must be a finite scale >= 0"),
    (float("inf"), False, "'scales' must be a finite scale >= 0"), (1e-45, False, "'scales' is too small"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value,valid,text", SCALES, ids=[str(s[0]) for s in SCALES])
def test_nearest_exact_scales(value, valid, text, path):
    go = np.arange(2 * 3 * 7, dtype=np.float32).reshape(2, 3, 7)
    model = one_node_model("UpsampleNearestExact1dGrad", {"grad_output": go.shape}, ["grad_input"],
                           dict(input_size=[2, 3, 4], scales=value))
    if valid:
        (got,) = run_model(model, {"grad_output": go}, path)
        np.testing.assert_allclose(got.sum(axis=2), go.sum(axis=2), rtol=1e-6)  # every element lands somewhere
        if value == 1e30:
            assert (got[:, :, 1:] == 0).all()  # index scale 1e-30: everything reads input 0
        return
    with pytest.raises(Exception) as error:
        if path == "kernel":  # the kernel alone: no attach, so the kernel's own check answers
            model.ir_version = 9
            runtime.session(model.SerializeToString()).run(None, {"grad_output": go})
        else:
            run_model(model, {"grad_output": go}, path)
    assert text in str(error.value) and "UpsampleNearestExact1dGrad" in str(error.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op_type,inputs,outputs,attrs", [
    ("GridSampler2DGrad", {"grad_output": (0, 2, 3, 3), "input": (0, 2, 4, 4), "grid": (0, 3, 3, 2)}, ["gi", "gg"], {}),
    ("GridSampler2DGrad", {"grad_output": (2, 0, 3, 3), "input": (2, 0, 4, 4), "grid": (2, 3, 3, 2)}, ["gi", "gg"], {}),
    ("UpsampleNearestExact1dGrad", {"grad_output": (0, 3, 8)}, ["gi"], dict(input_size=[0, 3, 4])),
    ("UpsampleNearestExact2dGrad", {"grad_output": (2, 0, 8, 8)}, ["gi"], dict(input_size=[2, 0, 4, 4])),
    ("ResizeBilinearV2Grad", {"grads": (0, 2, 8, 8), "original_image": (0, 2, 4, 4)}, ["y"], dict(half_pixel_centers=1)),
    ("ResizeBilinearV2Grad", {"grads": (2, 0, 8, 8), "original_image": (2, 0, 4, 4)}, ["y"], dict(align_corners=1)),
])
def test_empty_batch_or_channels_give_empty_outputs(op_type, inputs, outputs, attrs, path):
    model = one_node_model(op_type, inputs, outputs, attrs)
    got = run_model(model, {k: np.zeros(v, np.float32) for k, v in inputs.items()}, path)
    want = {"GridSampler2DGrad": [inputs.get("input"), inputs.get("grid")],
            "ResizeBilinearV2Grad": [inputs.get("original_image")]}.get(op_type, [tuple(attrs.get("input_size", ()))])
    assert [g.shape for g in got] == [tuple(w) for w in want]
