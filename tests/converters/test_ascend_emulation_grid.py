"""Converted GridSampler2DGrad / GridSampler3DGrad nodes against what CANN's kernels compute (cann_emulation_grid.py,
written from hicann/ops-cv@6ae8765) and against aten's grid_sampler backward.

Every mapped node must compute aten's gradient; a node whose kernel is not established on that SoC (the training
series' AI CPU task, 3-D on Ascend 950) must be refused with the reason or fall back. Mutated nodes (align_corners
flipped, padding modes swapped, the layout of 950's SIMT kernel) must fail the comparison.
"""
from __future__ import annotations

import cann_emulation as cann
import ml_dtypes
import numpy as np
import pytest
import torch
from onnx import helper

from conftest import one_node_model
from resample_grad import opset
from resample_grad.converters import ascend
from resample_grad.opset._common import ResampleGradError
from test_ascend import NODES

A2, A3, N950, TRAINING = "Ascend910B1", "Ascend910_9391", "Ascend950PR", "Ascend910"
CODES = {"bilinear": 0, "nearest": 1, "bicubic": 2, "zeros": 0, "border": 1, "reflection": 2}
NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# relative to max |dx|: float32 coordinates; the half types: the float32 result rounded once against torch's rounding
TOLERANCE = {"float32": 2e-5, "float16": 2 * 2.0 ** -11, "bfloat16": 2 * 2.0 ** -8}


def _error(ours, reference) -> float:
    ours, reference = np.asarray(ours, np.float64), np.asarray(reference, np.float64)
    return float(np.abs(ours - reference).max() / max(1.0, np.abs(reference).max()))


def _ge_nodes(model):
    return [n for n in model.graph.node if n.domain == cann.GE_DOMAIN]


def _grid(rng, shape, kind):
    """Grids past the image (|g| up to 1.6), or exactly on pixel borders and centres (k / size steps of [-1, 1],
    where rounding and floor meet their ties)."""
    if kind == "outside":
        return rng.uniform(-1.6, 1.6, shape).astype(np.float32)
    steps = rng.integers(-12, 13, shape).astype(np.float32)
    return (steps / np.float32(8)).astype(np.float32)  # multiples of 1/8: every pixel border and centre of size 4, 8


def _case(rank, mode, padding, corners, dtype="float32", sizes=None, kind="outside", seed=0):
    """A GridSampler node (2-D or 3-D) and aten's backward of it in that dtype."""
    rng = np.random.default_rng(seed)
    n_, c, spatial_in, spatial_out = sizes or ((2, 3, (6, 7), (4, 5)) if rank == 4 else (1, 2, (4, 5, 6), (3, 4, 2)))
    x = rng.standard_normal((n_, c) + spatial_in).astype(np.float32)
    grid = _grid(rng, (n_,) + spatial_out + (rank - 2,), kind)
    dy = rng.standard_normal((n_, c) + spatial_out).astype(np.float32)
    x, grid, dy = (a.astype(NUMPY[dtype]) for a in (x, grid, dy))
    attrs = dict(interpolation_mode=mode, padding_mode=padding, align_corners=corners)
    if rank == 4:
        op, names, outputs = "GridSampler2DGrad", ("grad_output", "input", "grid"), ["grad_input", "grad_grid"]
        backward = torch.ops.aten.grid_sampler_2d_backward
    else:
        op, names, outputs = "GridSampler3DGrad", ("grad", "x", "grid"), ["dx", "dgrid"]
        backward = torch.ops.aten.grid_sampler_3d_backward
    feeds = dict(zip(names, (dy, x, grid), strict=True))
    model = opset.attach(one_node_model(op, {k: v.shape for k, v in feeds.items()}, outputs, attrs, dtype))
    # the half types: aten in float32 on the half-valued inputs, rounded to the dtype once (aten's CPU kernel in
    # float16 rounds every partial sum: 1.7e-3 of max |dx| off on bilinear 6 x 7)
    tensors = [torch.from_numpy(np.asarray(a, np.float32)) for a in (dy, x, grid)]
    dx, dgrid = backward(*tensors, CODES[mode], CODES[padding], bool(corners), [True, True])
    rounded = [t.to(TORCH[dtype]).float().numpy() for t in (dx, dgrid)]
    return model, feeds, dict(zip(outputs, rounded, strict=True))


def _agrees(conversion, feeds, reference, dtype="float32", **options):
    result = cann.run_converted(conversion.model, feeds, conversion.family, **options)
    return max(_error(result[k], v) for k, v in reference.items())


# --------------------------------------------------------------------------- the converter's test table

GRID_TABLE = [c for c in NODES if c[1].startswith("GridSampler")]


@pytest.mark.parametrize("case", GRID_TABLE, ids=[c[0] for c in GRID_TABLE])
def test_table_grid_nodes_compute_aten(case):
    name, op, inputs, outputs, attrs, soc, *_ = case
    rank = len(next(iter(inputs.values())))
    full = dict(dict(interpolation_mode="bilinear", padding_mode="zeros", align_corners=0), **attrs)
    sizes = (inputs["grid"][0], next(iter(inputs.values()))[1], tuple(list(inputs.values())[1][2:]),
             tuple(inputs["grid"][1:-1]))
    model, feeds, reference = _case(rank, full["interpolation_mode"], full["padding_mode"], full["align_corners"],
                                    sizes=sizes)
    conversion = ascend.to_ascend(model, soc=soc, wide_modes=True)
    assert [n.op_type for n in _ge_nodes(conversion.model)] == [op]
    assert _agrees(conversion, feeds, reference) < 1e-5, name


# --------------------------------------------------------------------------- a sweep against aten

SWEEP = [(rank, mode, padding, corners, kind)
         for rank in (4, 5) for mode in (("bilinear", "nearest", "bicubic") if rank == 4 else ("bilinear", "nearest"))
         for padding in ("zeros", "border", "reflection") for corners in (0, 1) for kind in ("outside", "borders")]


@pytest.mark.parametrize("case", SWEEP, ids=["-".join(map(str, c)) for c in SWEEP])
def test_grid_sweep_on_a2_and_a3_equals_aten(case):
    """Every (mode, padding, align_corners) on both ranks, grids past the image and exactly on pixel borders and
    centres (nearest's ties to even, floor at integers), on an image of 8 x 4 (x 4) whose borders the grid hits."""
    rank, mode, padding, corners, kind = case
    sizes = (2, 3, (4, 8), (5, 6)) if rank == 4 else (1, 3, (4, 8, 4), (3, 2, 4))
    model, feeds, reference = _case(rank, mode, padding, corners, sizes=sizes, kind=kind, seed=len(SWEEP))
    for soc in (A2, A3):
        conversion = ascend.to_ascend(model, soc=soc, wide_modes=True)
        assert len(_ge_nodes(conversion.model)) == 1, conversion.summary()
        assert _agrees(conversion, feeds, reference) < 1e-5, (case, soc)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rank,mode", [(4, "bilinear"), (4, "bicubic"), (5, "bilinear"), (5, "nearest")])
def test_half_types_through_casts_equal_aten(rank, mode, dtype):
    """Half types: Casts to float32 around the node (as aclnn does for 3-D, aclnn_grid_sampler3d_backward.cpp:270-280;
    the 2-D kernels' half keys compute in float32 themselves): the float32 result rounded once."""
    model, feeds, reference = _case(rank, mode, "border", 0, dtype=dtype)
    conversion = ascend.to_ascend(model, soc=A2, wide_modes=True)
    assert [n.op_type for n in conversion.model.graph.node].count("Cast") == 5
    assert _agrees(conversion, feeds, reference) < TOLERANCE[dtype]


def test_native_half_2d_computes_in_float32_inside():
    """GridSampler2DGrad's float16 keys (3, 4, 8) cast to float32 inside: native_half gives the Cast path's result."""
    model, feeds, reference = _case(4, "bilinear", "zeros", 1, dtype="float16")
    conversion = ascend.to_ascend(model, soc=A2, native_half=True)
    assert "Cast" not in [n.op_type for n in conversion.model.graph.node]
    assert _agrees(conversion, feeds, reference) < TOLERANCE["float16"]


def test_native_half_3d_on_a2_is_refused():
    """GridSampler3DGrad's A2/A3 kernel has only its float32 key: a float16 node has no kernel body."""
    model, feeds, _ = _case(5, "bilinear", "zeros", 0, dtype="float16")
    with pytest.raises(ResampleGradError, match="the A2/A3 kernel of GridSampler3DGrad has no float16 body"):
        ascend.to_ascend(model, soc=A2, native_half=True)
    conversion = ascend.to_ascend(model, soc=A2, native_half=True, fallback="node")
    assert not _ge_nodes(conversion.model)


# --------------------------------------------------------------------------- not established: refused / fallback

@pytest.mark.parametrize("rank,soc,reason", [
    (4, TRAINING, "runs as an AI CPU task on Atlas training series"),
    (5, TRAINING, "runs as an AI CPU task on Atlas training series"),
    (5, N950, "GridSampler3DGrad on Ascend 950 reads its tensors channels first"),
])
def test_kernels_not_established_fall_back_with_the_reason(rank, soc, reason):
    model, _, _ = _case(rank, "bilinear", "zeros", 0)
    with pytest.raises(ResampleGradError, match=reason):
        ascend.to_ascend(model, soc=soc)
    conversion = ascend.to_ascend(model, soc=soc, fallback="node")
    assert not _ge_nodes(conversion.model)
    assert conversion.nodes[0].action.startswith("fallback")


def test_more_than_2048_channels_is_refused():
    model = opset.attach(one_node_model("GridSampler2DGrad", {"grad_output": (1, 2049, 2, 2), "input": (1, 2049, 3, 3),
                                                             "grid": (1, 2, 2, 2)}, ["grad_input", "grad_grid"], {}))
    with pytest.raises(ResampleGradError, match="2049 channels: aclnn runs GridSampler2DGrad as an AI CPU task"):
        ascend.to_ascend(model, soc=A2)


@pytest.mark.parametrize("rank,padding,channels,deterministic,simd", [
    (5, "zeros", 3, False, False), (5, "zeros", 3, True, False), (5, "zeros", 128, True, False),
    (5, "zeros", 128, False, True),
    (4, "border", 3, False, False), (4, "border", 32, True, False), (4, "zeros", 32, False, False),
    (4, "border", 32, False, True), (4, "reflection", 128, False, True),
])
def test_950_simt_kernels_on_the_channels_last_form_compute_another_gradient(rank, padding, channels, deterministic,
                                                                            simd):
    """Why neither grid sampler maps to Ascend 950 (ops-cv registers both there): the converter's channels-last node,
    run through 950's SIMT kernels (which index channels first), is not aten's gradient; only the SIMD kernels
    (float32, enough channels, a non-deterministic context: a run-time setting) read it right."""
    sizes = (1, channels, (3, 4, 5), (2, 3, 2)) if rank == 5 else (2, channels, (5, 6), (3, 4))
    model, feeds, reference = _case(rank, "bilinear", padding, 0, sizes=sizes)
    conversion = ascend.to_ascend(model, soc=A2, wide_modes=True)  # the channels-last form
    conversion.family = "Ascend 950"
    error = _agrees(conversion, feeds, reference, deterministic=deterministic)
    assert (error < 1e-5) if simd else (error > 0.05)


# --------------------------------------------------------------------------- mutations that must fail

def _set(node, name, value):
    for attribute in node.attribute:
        if attribute.name == name:
            attribute.CopyFrom(helper.make_attribute(name, value))


@pytest.mark.parametrize("rank,mode", [(4, "bilinear"), (4, "bicubic"), (5, "bilinear"), (5, "nearest")])
@pytest.mark.parametrize("wrong", [("align_corners", "flip"), ("padding_mode", "swap"),
                                   ("interpolation_mode", "swap")])
def test_a_wrong_attribute_fails(rank, mode, wrong):
    model, feeds, reference = _case(rank, mode, "zeros", 0)
    conversion = ascend.to_ascend(model, soc=A2, wide_modes=True)
    node = _ge_nodes(conversion.model)[0]
    other = {"align_corners": 1, "padding_mode": "reflection",
             "interpolation_mode": "nearest" if mode != "nearest" else "bilinear"}[wrong[0]]
    _set(node, wrong[0], other)
    assert _agrees(conversion, feeds, reference) > 0.05


def test_transposes_removed_fail():
    model, feeds, reference = _case(5, "bilinear", "zeros", 0, sizes=(1, 3, (4, 4, 4), (2, 3, 2)))
    conversion = ascend.to_ascend(model, soc=A2)
    for node in conversion.model.graph.node:
        if node.op_type == "Transpose":
            _set(node, "perm", list(range(5)))
    with pytest.raises(Exception):  # noqa: B017 - any failure: shapes no longer fit, or values differ
        assert _agrees(conversion, feeds, reference) < 1e-5
