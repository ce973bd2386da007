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

N, C, H, W, HO, WO = 1, 2, 4, 5, 2, 3
D, DO = 3, 2
SPECIAL = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf, "+1e30": 1e30, "-1e30": -1e30}
# spatial axes -> (op, input names, output names, input spatial sizes, output spatial sizes, the grid point that gets
# the hostile coordinate)
GRID = {2: ("GridSampler2DGrad", ("grad_output", "input", "grid"), ["grad_input", "grad_grid"], (H, W), (HO, WO),
            (0, 1, 1)),
        3: ("GridSampler3DGrad", ("grad", "x", "grid"), ["dx", "dgrid"], (D, H, W), (DO, HO, WO), (0, 1, 1, 2))}
POINT = GRID[2][5]


# more points than half the pixels with their margins: the functions sort box taps (SortBoxTaps) for bilinear
# and bicubic with zeros padding, not tap keys
DENSE = {2: ((3, 3), (8, 8)), 3: ((2, 2, 2), (5, 5, 5))}


def _inputs(seed=0, spatial=2, dense=False):
    rng = np.random.default_rng(seed)
    _, _, _, sizes, out, _ = GRID[spatial]
    sizes, out = DENSE[spatial] if dense else (sizes, out)
    return (rng.standard_normal((N, C, *out)).astype(np.float32),
            rng.standard_normal((N, C, *sizes)).astype(np.float32),
            rng.uniform(-0.9, 0.9, (N, *out, spatial)).astype(np.float32))


def _run(path, go, x, grid, attrs):
    op_type, names, outputs, *_ = GRID[grid.shape[-1]]
    model = one_node_model(op_type, dict(zip(names, (go.shape, x.shape, grid.shape), strict=True)), outputs, attrs)
    return run_model(model, dict(zip(names, (go, x, grid), strict=True)), path)


def _reference(go, x, grid, attrs):
    return opset.OPS[GRID[grid.shape[-1]][0]].reference(go, x, grid, **attrs)


def _expected(value, axis, attrs, go, x, grid):
    """(grad_input, grad_grid, the axes of the point whose grid gradient must be ~0) as documented."""
    interp, padding, corners = attrs["interpolation_mode"], attrs["padding_mode"], attrs["align_corners"]
    spatial = grid.shape[-1]
    point = GRID[spatial][5]
    reads_nothing = (np.isnan(value) or padding in ("zeros", "reflection")
                     or (interp == "bicubic" and not np.isfinite(value)))
    moved = grid.copy()
    if reads_nothing:
        go_without = go.copy()
        go_without[(point[0], slice(None)) + point[1:]] = 0  # the point contributes nothing
        moved[point] = 0.0
        gi, gg = _reference(go_without, x, moved, attrs)
        gg = gg.copy()
        gg[point] = 0
        return gi, gg, ()
    size = x.shape[2:][::-1][axis]  # grid channel x indexes the last axis
    edge = (1.0 if corners else 1.0 - 1.0 / size) * np.sign(value)  # the centre of the edge pixel
    moved[point + (axis,)] = edge
    gi, gg = _reference(go, x, moved, attrs)
    return gi, gg, (axis,)


def _check_hostile(interp, padding, corners, name, axis, path, spatial, dense=False):
    attrs = dict(interpolation_mode=interp, padding_mode=padding, align_corners=corners)
    point = GRID[spatial][5]
    go, x, grid = _inputs(spatial=spatial, dense=dense)
    grid[point + (axis,)] = SPECIAL[name]
    gi, gg = _run(path, go, x, grid, attrs)
    assert np.isfinite(gi).all() and np.isfinite(gg).all()
    want_gi, want_gg, flat_axes = _expected(SPECIAL[name], axis, attrs, go, x, _inputs(spatial=spatial, dense=dense)[2])
    np.testing.assert_allclose(gi, want_gi, rtol=1e-5, atol=1e-5)
    other = [a for a in range(spatial) if a not in flat_axes]
    if flat_axes:  # clamped to the edge: that axis's gradient vanishes, the others follow the edge point
        np.testing.assert_allclose(gg[point + (axis,)], 0.0, atol=1e-4)
        np.testing.assert_allclose(gg[point][other], want_gg[point][other], rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(gg[point], 0.0)
    mask = np.ones(gg.shape[:-1], bool)
    mask[point] = False
    np.testing.assert_allclose(gg[mask], want_gg[mask], rtol=1e-5, atol=1e-5)


HOSTILE = [(i, p, c, name, axis) for (i, p, c), name, axis in itertools.product(
    itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [0, 1]), SPECIAL, [0, 1])]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("interp,padding,corners,name,axis", HOSTILE)
def test_hostile_grid_coordinate(interp, padding, corners, name, axis, path):
    _check_hostile(interp, padding, corners, name, axis, path, 2)


HOSTILE_3D = [(i, p, c, name, axis) for (i, p, c), name, axis in itertools.product(
    itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [0, 1]), SPECIAL, [0, 1, 2])]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("interp,padding,corners,name,axis", HOSTILE_3D)
def test_hostile_grid_coordinate_3d(interp, padding, corners, name, axis, path):
    """GridSampler3DGrad, the same documented behaviour along x, y and z (z indexes D)."""
    _check_hostile(interp, padding, corners, name, axis, path, 3)


HOSTILE_BOX = [(spatial, i, p, c, name, axis) for spatial, (i, p, c), name, axis in itertools.product(
    [2, 3], itertools.product(["bilinear", "bicubic"], ["zeros", "border", "reflection"], [0, 1]), SPECIAL, [0, 1, 2])
    if (spatial, i) != (3, "bicubic") and axis < spatial]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("spatial,interp,padding,corners,name,axis", HOSTILE_BOX)
def test_hostile_grid_coordinate_among_dense_points(spatial, interp, padding, corners, name, axis, path):
    """The same with more points than pixels, where the functions sort box taps instead of tap keys."""
    _check_hostile(interp, padding, corners, name, axis, path, spatial, dense=True)


TORCH_DEFINED = [(i, p, name) for i, p, name in itertools.product(["bilinear", "nearest"], ["zeros", "border"], SPECIAL)
                 if not (p == "border" and name == "nan")]  # border + NaN: torch's result depends on its code path


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("interp,padding,name", TORCH_DEFINED)
def test_hostile_grid_matches_torch_where_torch_defines_it(interp, padding, name, spatial):
    torch = pytest.importorskip("torch")
    go, x, grid = _inputs(1, spatial)
    grid[GRID[spatial][5] + (0,)] = SPECIAL[name]
    backward = torch.ops.aten.grid_sampler_2d_backward if spatial == 2 else torch.ops.aten.grid_sampler_3d_backward
    ti, tg = backward(torch.from_numpy(go), torch.from_numpy(x), torch.from_numpy(grid),
                      ["bilinear", "nearest"].index(interp), ["zeros", "border"].index(padding), False, [True, True])
    for path in PATHS:
        gi, gg = _run(path, go, x, grid, dict(interpolation_mode=interp, padding_mode=padding, align_corners=0))
        np.testing.assert_allclose(gi, ti.numpy(), rtol=1e-5, atol=1e-5)
        # torch's CPU kernel gives NaN grid gradients for a NaN or infinite point (its scalar path, as on
        # CUDA, gives 0): where torch is NaN, ours is the documented 0
        finite = np.isfinite(tg.numpy())
        np.testing.assert_allclose(gg[finite], tg.numpy()[finite], rtol=1e-5, atol=1e-5)
        assert (gg[~finite] == 0).all()


def _near_reflection_boundaries(size, corners, dtype):
    """Grid x values (float) whose pixels lie at and beside the fold points of reflection, k spans from the image
    for k up to 2^19 (within the 2^23 pixels where reflection is defined): where a remainder by the period taken
    through a rounded quotient would be off by one."""
    span, low = (size - 1, 0.0) if corners else (size, -0.5)
    pixels = [low + k * span + d for k in (1, 2, 3, 7, 64, 1001, 65536, 99991, 1 << 19) for d in (0.0, 0.25)]
    values = [(2 * p / (size - 1) - 1) if corners else ((2 * p + 1) / size - 1) for p in pixels]
    values = np.array(values + [-v for v in values], dtype)
    inf = np.array(np.inf, dtype)
    return np.concatenate([values, np.nextafter(values, inf), np.nextafter(values, -inf)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("interp,corners", list(itertools.product(["bilinear", "nearest", "bicubic"], [0, 1])))
def test_reflection_far_outside_matches_torch(interp, corners, dtype):
    """Reflection folds a coordinate many spans away by a remainder (aten's fmod): points at and one ulp beside
    the folds, as far as 2^19 spans out, against torch on every path."""
    torch = pytest.importorskip("torch")
    np_dtype = np.dtype(dtype).type
    xs = _near_reflection_boundaries(W, corners, np_dtype)
    rng = np.random.default_rng(5)
    grid = np.stack([xs, rng.uniform(-0.9, 0.9, xs.size).astype(np_dtype)], -1).reshape(1, 1, xs.size, 2)
    go = rng.standard_normal((1, C, 1, xs.size)).astype(np_dtype)
    x = rng.standard_normal((1, C, H, W)).astype(np_dtype)
    ti, tg = torch.ops.aten.grid_sampler_2d_backward(
        torch.from_numpy(go), torch.from_numpy(x), torch.from_numpy(grid),
        ["bilinear", "nearest", "bicubic"].index(interp), 2, bool(corners), [True, True])
    attrs = dict(interpolation_mode=interp, padding_mode="reflection", align_corners=corners)
    model = one_node_model("GridSampler2DGrad", {"grad_output": go.shape, "input": x.shape, "grid": grid.shape},
                           ["grad_input", "grad_grid"], attrs, dtype=dtype)
    # far out, a grid value's rounding moves its pixel by up to ~0.25: the folds are where the answers jump, so
    # the comparison is exact in position (same rounding as torch) and loose only in the sums' last digits
    tol = 1e-4 if dtype == "float32" else 1e-10
    for path in PATHS:
        gi, gg = run_model(model, {"grad_output": go, "input": x, "grid": grid}, path)
        np.testing.assert_allclose(gi, ti.numpy(), rtol=tol, atol=tol, err_msg=path)
        np.testing.assert_allclose(gg, tg.numpy(), rtol=tol, atol=tol * np.abs(tg.numpy()).max(), err_msg=path)


GRAD_OUTPUT_HOSTILE = [(spatial, interp, name) for spatial, interp, name in itertools.product(
    [2, 3], ["bilinear", "nearest", "bicubic"], ["nan", "+inf", "-inf"]) if not (spatial == 3 and interp == "bicubic")]


@pytest.mark.parametrize("spatial,interp,name", GRAD_OUTPUT_HOSTILE)
def test_non_finite_grad_output_reaches_only_its_pixels_as_in_torch(spatial, interp, name):
    """A NaN or infinite gradient at one point reaches that point's pixels and no others, as in torch. (The
    functions sum runs of sorted taps by prefix sums: a non-finite value must not carry into every later pixel.)"""
    torch = pytest.importorskip("torch")
    go, x, grid = _inputs(2, spatial)
    go[(0, 1) + GRID[spatial][5][1:]] = SPECIAL[name]
    backward = torch.ops.aten.grid_sampler_2d_backward if spatial == 2 else torch.ops.aten.grid_sampler_3d_backward
    ti, tg = backward(torch.from_numpy(go), torch.from_numpy(x), torch.from_numpy(grid),
                      ["bilinear", "nearest", "bicubic"].index(interp), 0, False, [True, True])
    assert np.isfinite(ti.numpy()).mean() > 0.5  # the case means something: most pixels stay finite
    for path in PATHS:
        with np.errstate(invalid="ignore"):  # the reference's inf - inf and 0 * inf, as torch's
            gi, gg = _run(path, go, x, grid, dict(interpolation_mode=interp, padding_mode="zeros", align_corners=0))
        np.testing.assert_allclose(gi, ti.numpy(), rtol=1e-5, atol=1e-5, err_msg=path)
        # the point's own grid gradient is inf - inf in some order: non-finite in both, its sign or NaN may differ
        finite = np.isfinite(tg.numpy())
        np.testing.assert_allclose(gg[finite], tg.numpy()[finite], rtol=1e-5, atol=1e-5, err_msg=path)
        assert not np.isfinite(gg[~finite]).any(), path


# --------------------------------------------------------------------------- scales

SCALES = [  # (value, valid?, text)
    (0.0, True, None), (1e30, True, None), (2.5, True, None),
    (-1.0, False, "'scales' must be a finite scale >= 0"),
    (float("nan"), False, "'scales' must be a finite scale >= 0"),
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


SIZE_2x2 = np.array([4, 4], np.int32)
EMPTY = [  # (op, inputs: name -> shape or value, outputs, attributes, the output shapes)
    ("GridSampler2DGrad", {"grad_output": (0, 2, 3, 3), "input": (0, 2, 4, 4), "grid": (0, 3, 3, 2)}, ["gi", "gg"], {},
     [(0, 2, 4, 4), (0, 3, 3, 2)]),
    ("GridSampler2DGrad", {"grad_output": (2, 0, 3, 3), "input": (2, 0, 4, 4), "grid": (2, 3, 3, 2)}, ["gi", "gg"], {},
     [(2, 0, 4, 4), (2, 3, 3, 2)]),
    ("GridSampler3DGrad", {"grad": (0, 2, 2, 3, 3), "x": (0, 2, 3, 4, 4), "grid": (0, 2, 3, 3, 3)}, ["dx", "dgrid"], {},
     [(0, 2, 3, 4, 4), (0, 2, 3, 3, 3)]),
    ("GridSampler3DGrad", {"grad": (2, 0, 2, 3, 3), "x": (2, 0, 3, 4, 4), "grid": (2, 2, 3, 3, 3)}, ["dx", "dgrid"],
     dict(interpolation_mode="nearest", padding_mode="reflection"), [(2, 0, 3, 4, 4), (2, 2, 3, 3, 3)]),
    ("UpsampleNearestExact1dGrad", {"grad_output": (0, 3, 8)}, ["gi"], dict(input_size=[0, 3, 4]), [(0, 3, 4)]),
    ("UpsampleNearestExact2dGrad", {"grad_output": (2, 0, 8, 8)}, ["gi"], dict(input_size=[2, 0, 4, 4]),
     [(2, 0, 4, 4)]),
    ("UpsampleNearestExact3dGrad", {"grad_output": (0, 2, 4, 4, 4)}, ["gi"], dict(input_size=[-1, 2, 2, 2, 2]),
     [(0, 2, 2, 2, 2)]),
    ("UpsampleNearest2dGrad", {"grad_output": (0, 2, 8, 8)}, ["gi"], dict(input_size=[0, 2, 4, 4], output_size=[8, 8]),
     [(0, 2, 4, 4)]),
    ("UpsampleNearest2dGrad", {"grad_output": (2, 0, 8)}, ["gi"], dict(input_size=[2, -1, 3], output_size=[8]),
     [(2, 0, 3)]),
    ("UpsampleNearest3dGrad", {"grad_output": (2, 0, 4, 4, 4)}, ["gi"],
     dict(input_size=[2, 0, 2, 2, 2], scales=[2.0, 2.0, 2.0]), [(2, 0, 2, 2, 2)]),
    ("UpsampleBilinear2dGrad", {"grad_output": (0, 2, 8, 8)}, ["gi"],
     dict(input_size=[-1, 2, 4, 4], output_size=[8, 8], align_corners=1), [(0, 2, 4, 4)]),
    ("UpsampleBilinear2dGrad", {"grad_output": (1, 0, 8)}, ["gi"], dict(input_size=[1, 0, 5], output_size=[8]),
     [(1, 0, 5)]),
    ("UpsampleTrilinear3dBackward", {"grad_output": (2, 0, 4, 4, 4)}, ["gi"],
     dict(input_size=[2, 0, 2, 3, 2], output_size=[4, 4, 4]), [(2, 0, 2, 3, 2)]),
    ("UpsampleBicubic2dGrad", {"grad_output": (0, 2, 8, 8)}, ["gi"], dict(input_size=[0, 2, 4, 4], align_corners=1),
     [(0, 2, 4, 4)]),
    ("UpsampleBilinear2dAABackward", {"grad_output": (2, 0, 3, 3)}, ["gi"], dict(input_size=[2, 0, 8, 8]),
     [(2, 0, 8, 8)]),
    ("UpsampleBicubic2dAAGrad", {"grad_output": (0, 2, 3, 3)}, ["gi"],
     dict(input_size=[0, -1, 8, 8], output_size=[3, 3]),
     [(0, 2, 8, 8)]),
    ("ResizeBilinearV2Grad", {"grads": (0, 2, 8, 8), "original_image": (0, 2, 4, 4)}, ["y"], dict(half_pixel_centers=1),
     [(0, 2, 4, 4)]),
    ("ResizeBilinearV2Grad", {"grads": (2, 0, 8, 8), "original_image": (2, 0, 4, 4)}, ["y"], dict(align_corners=1),
     [(2, 0, 4, 4)]),
    ("ResizeBicubicV2Grad", {"grads": (0, 2, 8, 8), "original_image": (0, 2, 4, 4)}, ["y"], {}, [(0, 2, 4, 4)]),
    ("ResizeBicubicV2Grad", {"grads": (2, 0, 8, 8), "original_image": (2, 0, 4, 4)}, ["y"], dict(align_corners=1),
     [(2, 0, 4, 4)]),
    ("ResizeLinearGrad", {"grads": (0, 2, 8), "original_image": (0, 2, 4)}, ["y"], {}, [(0, 2, 4)]),
    ("ResizeLinearGrad", {"grads": (2, 0, 8), "original_image": (2, 0, 4)}, ["y"], dict(scale=2.0), [(2, 0, 4)]),
    ("ResizeNearestNeighborV2Grad", {"grads": (0, 2, 8, 8), "size": SIZE_2x2}, ["y"], {}, [(0, 2, 4, 4)]),
    ("ResizeNearestNeighborV2Grad", {"grads": (2, 0, 8, 8), "size": SIZE_2x2}, ["y"], dict(half_pixel_centers=1),
     [(2, 0, 4, 4)]),
    ("ResizeGrad", {"dY": (0, 2, 8, 8), "X": (0, 2, 4, 4), "roi": np.zeros(0, np.float32),
                    "scales": np.array([1, 1, 2, 2], np.float32)}, ["dx"], dict(mode="linear"), [(0, 2, 4, 4)]),
    ("ResizeGrad", {"dY": (2, 0, 8, 8), "X": (2, 0, 4, 4), "roi": np.zeros(0, np.float32),
                    "scales": np.zeros(0, np.float32), "sizes": np.array([8, 8], np.int64)}, ["dx"],
     dict(mode="cubic", axes=[2, 3]), [(2, 0, 4, 4)]),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op_type,inputs,outputs,attrs,want", EMPTY, ids=[f"{e[0]}-{k}" for k, e in enumerate(EMPTY)])
def test_empty_batch_or_channels_give_empty_outputs(op_type, inputs, outputs, attrs, want, path):
    """N = 0 or C = 0: outputs of the right shape, no crash; a grid gradient with C = 0 is zeros (no channel reads)."""
    values = {k: v for k, v in inputs.items() if isinstance(v, np.ndarray)}
    model = one_node_model(op_type, {k: getattr(v, "shape", v) for k, v in inputs.items()}, outputs, attrs,
                           input_dtypes={k: v.dtype for k, v in values.items()})
    feeds = {k: v if k in values else np.zeros(v, np.float32) for k, v in inputs.items()}
    got = run_model(model, feeds, path)
    assert [g.shape for g in got] == want
    for g in got:
        assert (np.asarray(g, np.float64) == 0).all()


@pytest.mark.parametrize("path", ["function", "kernel"])
@pytest.mark.parametrize("name,value", [("scales", np.array([[1, 1], [2, 2]], np.float32)),
                                        ("sizes", np.array([[1, 2], [8, 8]], np.int64))])
def test_resize_grad_reads_scales_and_sizes_of_any_rank_flat(name, value, path):
    """As the reference and the kernel (onnxruntime's Resize reads them flat too); the function refused a 2-D one at
    session creation (a shape inference error in its Concat)."""
    inputs = {"dY": (1, 2, 8, 8), "X": (1, 2, 4, 4), "roi": (0,), "scales": (0,), "sizes": (0,)}
    inputs[name] = value.shape
    model = one_node_model("ResizeGrad", inputs, ["dx"], dict(mode="cubic"),
                           input_dtypes={"roi": np.float32, "scales": np.float32, "sizes": np.int64})
    rng = np.random.default_rng(0)
    feeds = {"dY": rng.standard_normal((1, 2, 8, 8)).astype(np.float32), "X": np.zeros((1, 2, 4, 4), np.float32),
             "roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32), "sizes": np.zeros(0, np.int64)}
    feeds[name] = value
    (want,) = run_model(model, feeds, "reference")
    (got,) = run_model(model, feeds, path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
