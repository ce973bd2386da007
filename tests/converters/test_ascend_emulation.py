"""Converted Ascend nodes against what CANN's kernels compute (cann_emulation.py, written from their source).

Every mapped node must compute the op's gradient on the device: the converted model, its GE nodes emulated,
equals onnxruntime (the test table of test_ascend.py) and torch's aten backward ops (a sweep of sizes, scales,
modes, align_corners and dtypes). A case the kernel cannot compute must fall back with its reason. The last
tests mutate converted nodes (a scale inverted, [] for 3-D scales, no Casts) and show the comparison fails.
"""
from __future__ import annotations

import copy

import cann_emulation as cann
import ml_dtypes
import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper

from conftest import one_node_model
from resample_grad import opset
from resample_grad.converters import ascend
from resample_grad.converters.ascend_prototypes import family_of
from resample_grad.paths import random_inputs, run_on
from test_ascend import NODES, RESIZE_GRAD_NODES, _resize_grad_model

A2, N950, TRAINING = "Ascend910B1", "Ascend950PR", "Ascend910"
TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
NUMPY_DTYPE = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# largest difference allowed, relative to max |dx|: float32 rounding of the coordinates; for the half types the
# Cast result is float32's rounded once (half an ulp), torch's rounds its own float32 sums: two ulps between them
TOLERANCE = {"float32": 2e-5, "float16": 2 * 2.0 ** -11, "bfloat16": 2 * 2.0 ** -8}


def _error(ours: np.ndarray, reference: np.ndarray) -> float:
    ours, reference = np.asarray(ours, np.float64), np.asarray(reference, np.float64)
    return float(np.abs(ours - reference).max() / max(1.0, np.abs(reference).max()))


def _ge_nodes(model):
    return [n for n in model.graph.node if n.domain == cann.GE_DOMAIN]


def _emulations(conversion, feeds):
    """The converted model's outputs under every variant of the kernels that the model does not fix (bicubic's
    deterministic kernel, the TBE nearest kernel's tie rounding)."""
    family = conversion.family
    return [cann.run_converted(conversion.model, feeds, family, deterministic=d, ties_even=t)
            for d in (False, True) for t in (True, False)]


# --------------------------------------------------------------------------- the converter's test table

TABLE = [c for c in NODES] + [(f"resize-{c[0]}",) + c[1:] for c in RESIZE_GRAD_NODES]


def _table_model(case):
    if case[0].startswith("resize-"):
        _, attrs, x, dy, scales, soc, *_ = case
        return _resize_grad_model(x, dy, scales=scales, sizes=None if scales else dy, **attrs), soc
    _, op_type, inputs, outputs, attrs, soc, *_ = case
    return opset.attach(one_node_model(op_type, inputs, outputs, attrs)), soc


@pytest.mark.parametrize("case", TABLE, ids=[c[0] for c in TABLE])
def test_table_nodes_compute_the_op_on_the_device(case):
    model, soc = _table_model(case)
    conversion = ascend.to_ascend(model, soc=soc)
    feeds = random_inputs(model, seed=5)
    try:
        results = _emulations(conversion, feeds)
    except cann.NotEmulated as why:
        pytest.skip(f"kernel not emulated: {why}")
    expected = run_on(model, feeds, "kernels")
    for result in results:
        for name, value in expected.items():
            assert _error(result[name], value) < TOLERANCE["float32"], (name, conversion.summary())


# --------------------------------------------------------------------------- a sweep against torch

def _torch_backward(mode, dy, x_shape, scales, corners):
    """aten's backward of the upsample ops, the semantics the resample_grad ops follow."""
    out, aten = list(dy.shape[2:]), torch.ops.aten
    if mode == "nearest":
        return aten.upsample_nearest2d_backward(dy, out, x_shape, *scales)
    if mode == "nearest-exact":
        return aten._upsample_nearest_exact2d_backward(dy, out, x_shape, *scales)
    if mode == "nearest3d":
        return aten.upsample_nearest3d_backward(dy, out, x_shape, *scales)
    if mode == "nearest-exact3d":
        return aten._upsample_nearest_exact3d_backward(dy, out, x_shape, *scales)
    if mode == "trilinear3d":
        return aten.upsample_trilinear3d_backward(dy, out, x_shape, bool(corners), *scales)
    if mode.endswith("-aa"):
        return getattr(aten, f"_upsample_{mode[:-3]}2d_aa_backward")(dy, out, x_shape, bool(corners), *scales)
    return getattr(aten, f"upsample_{mode}2d_backward")(dy, out, x_shape, bool(corners), *scales)


OP_OF = {"nearest": "UpsampleNearest2dGrad", "nearest-exact": "UpsampleNearestExact2dGrad",
         "bilinear": "UpsampleBilinear2dGrad", "bicubic": "UpsampleBicubic2dGrad",
         "nearest3d": "UpsampleNearest3dGrad", "nearest-exact3d": "UpsampleNearestExact3dGrad",
         "trilinear3d": "UpsampleTrilinear3dBackward", "bilinear-aa": "UpsampleBilinear2dAABackward",
         "bicubic-aa": "UpsampleBicubic2dAAGrad"}
INTERPOLATING = ("bilinear", "bicubic", "trilinear3d", "bilinear-aa", "bicubic-aa")  # the modes with align_corners


def _node_attrs(mode, x_shape, out, scales, corners):
    attrs = dict(input_size=list(x_shape))
    if mode == "trilinear3d":
        attrs.update(output_size=list(out), align_corners=corners)
        attrs.update({n: float(s) for n, s in zip(("scale_d", "scale_h", "scale_w"), scales, strict=True)
                      if s is not None})
        return attrs
    if mode.endswith("3d"):
        if any(s is not None for s in scales):
            attrs["scales"] = [float(s or 0.0) for s in scales]
        return attrs
    attrs["output_size"] = list(out)
    attrs.update({n: float(s) for n, s in zip(("scales_h", "scales_w"), scales, strict=True) if s is not None})
    if mode in INTERPOLATING:
        attrs["align_corners"] = corners
    return attrs


def _sweep_case(mode, size, scale, corners, dtype, soc=A2, seed=0):
    """(model, feeds, torch's dx as float64, the scales given): the forward resized `size` by `scale` per axis
    (None: sizes only, the output twice the input plus one)."""
    spatial = len(size)
    scales = [scale] * spatial if not isinstance(scale, tuple) else list(scale)
    out = [int(np.floor(i * s)) if s is not None else 2 * i + 1 for i, s in zip(size, scales, strict=True)]
    x_shape = [1, 2] + list(size)
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal([1, 2] + out).astype(np.float32).astype(NUMPY_DTYPE[dtype])
    node_scales = scales if (scale is not None and not (corners and mode in INTERPOLATING)) else [None] * len(scales)
    attrs = _node_attrs(mode, x_shape, out, node_scales, corners)
    name = "grad_output"
    model = opset.attach(one_node_model(OP_OF[mode], {name: dy.shape}, ["dx"], attrs, dtype))
    reference = _torch_backward(mode, torch.from_numpy(dy.astype(np.float32)).to(TORCH_DTYPE[dtype]), x_shape,
                                node_scales, corners)
    return model, {name: dy}, reference.to(torch.float64).numpy()


SIZES_2D = [(2, 6), (5, 5), (26, 7), (3, 7), (7, 3), (16, 37), (40, 13)]
SCALES = [None, 1.4, 2.0, 2.1, 1.2, 2.5, 0.5, 0.75, 3.0, (1.4, 2.0), (1.0, 2.5)]


SWEEP = [(mode, size, scale, corners) for mode in ("nearest", "nearest-exact", "bilinear", "bicubic")
         for corners in ((0, 1) if mode in ("bilinear", "bicubic") else (0,)) for size in SIZES_2D
         for scale in SCALES if (scale is None or (np.floor(np.array(size) * np.array(scale)) >= 1).all())]
SWEEP_3D = [(mode, size, scale, 0) for mode in ("nearest3d", "nearest-exact3d")
            for size in [(2, 3, 4), (5, 5, 2), (26, 3, 7)] for scale in [None, 2.0, 1.2, 2.5, (1.4, 2.0, 2.1)]] + [
    ("trilinear3d", size, scale, corners) for corners in (0, 1)
    for size in [(2, 3, 4), (5, 5, 2), (26, 3, 7), (40, 1, 3)]
    for scale in [None, 2.0, 1.2, 2.5, 0.5, (1.4, 2.0, 2.1), (1.0, 2.0, 0.75)]
    if scale is None or (np.floor(np.array(size) * np.array(scale)) >= 1).all()]


def _check_sweep(case, dtype, soc=A2):
    model, feeds, reference = _sweep_case(*case, dtype, soc=soc)
    conversion = ascend.to_ascend(model, soc=soc, fallback="node")
    report = conversion.nodes[0]
    if not _ge_nodes(conversion.model):
        assert report.action.startswith("fallback: ") and len(report.action) > 20, report.action
        return "fallback"
    try:
        results = _emulations(conversion, feeds)
    except cann.NotEmulated:
        return "not emulated"
    for result in results:
        assert _error(result["dx"], reference) < TOLERANCE[dtype], conversion.summary()
    return "converted"


@pytest.mark.parametrize("dtype", ["float32"])
def test_sweep_every_converted_node_equals_torch(dtype):
    outcomes = [_check_sweep(case, dtype) for case in SWEEP + SWEEP_3D]
    # the converter keeps most nodes: this sweep is not vacuous
    assert outcomes.count("converted") > 0.8 * len(outcomes), outcomes.count("converted")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sweep_half_types_run_in_float32_between_casts(dtype):
    cases = [c for c in SWEEP if c[1] in ((16, 37), (26, 7)) and c[2] in (None, 2.5, 0.75)]
    outcomes = [_check_sweep(case, dtype) for case in cases]
    assert outcomes.count("converted") > 0.8 * len(outcomes)


SWEEP_AA = [(mode, size, scale, corners) for mode in ("bilinear-aa", "bicubic-aa") for corners in (0, 1)
            for size in [(2, 6), (5, 5), (26, 7), (16, 37), (40, 13), (7, 3)]
            for scale in [None, 0.3, 0.5, 0.75, 1.4, 2.5, (1.0, 0.5), (0.2, 3.0)]
            if scale is None or (np.floor(np.array(size) * np.array(scale)) >= 1).all()]


@pytest.mark.parametrize("soc", [A2, "Ascend910_9391", N950])
def test_sweep_antialias_equals_torch(soc):
    """UpsampleBilinear2dAABackward / UpsampleBicubic2dAAGrad on every family they run on, both of Ascend 950's
    kernels: every converted node equals aten's _upsample_*2d_aa_backward; the rest fall back with the reason."""
    outcomes = [_check_sweep(case, "float32", soc=soc) for case in SWEEP_AA]
    assert outcomes.count("converted") > 0.9 * len(outcomes), outcomes
    assert "not emulated" not in outcomes


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sweep_antialias_half_types(dtype):
    """Between its Casts the node computes in float32: aten's float32 backward of the same gradient, rounded to
    the dtype (aten's CPU antialias backward has no float16 kernel)."""
    for case in [c for c in SWEEP_AA if c[1] == (16, 37) and c[2] in (None, 0.5, 2.5)]:
        model, feeds, _ = _sweep_case(*case, "float32")
        node = model.graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        dy = feeds["grad_output"].astype(NUMPY_DTYPE[dtype])
        half = opset.attach(one_node_model(node.op_type, {"grad_output": dy.shape}, ["dx"], attrs, dtype))
        reference = _torch_backward(case[0], torch.from_numpy(dy.astype(np.float32)), attrs["input_size"],
                                    [attrs.get("scales_h"), attrs.get("scales_w")], case[3])
        expected = reference.to(TORCH_DTYPE[dtype]).to(torch.float64).numpy()
        for soc in (A2, N950):
            conversion = ascend.to_ascend(half, soc=soc)
            assert [n.op_type for n in conversion.model.graph.node][0] == "Cast", conversion.summary()
            for result in _emulations(conversion, {"grad_output": dy}):
                assert _error(result["dx"], expected) < TOLERANCE[dtype], (case, soc)


def test_bicubic_antialias_align_corners_one_output_falls_back_on_950():
    """Ascend 950's two UpsampleBicubic2dAAGrad kernels disagree where align_corners leaves one output row (scale
    0): the scatter kernel centres it at 0.5 (arch35 _simt_base.h:37), the gather kernel and aten at 0. A2 / A3
    centre it at 0 and convert."""
    case = ("bicubic-aa", (5, 7), (0.3, 2.0), 1)
    assert _check_sweep(case, "float32", soc=N950) == "fallback"
    model, _, _ = _sweep_case(*case, "float32", soc=N950)
    report = ascend.to_ascend(model, soc=N950, fallback="node").nodes[0]
    assert "computes another gradient on H (5 -> 1)" in report.action, report.action
    assert _check_sweep(case, "float32", soc=A2) == "converted"
    model, feeds, reference = _sweep_case(*case, "float32")
    converted = ascend.to_ascend(model, soc=A2).model  # the same GE node, run by Ascend 950's kernels
    scatter = cann.run_converted(converted, feeds, "Ascend 950", deterministic=False)["dx"]
    gather = cann.run_converted(converted, feeds, "Ascend 950", deterministic=True)["dx"]
    assert _error(scatter, reference) > 0.05 and _error(gather, reference) < TOLERANCE["float32"]


# the issue's examples: each converts, with the attribute value that makes the kernel compute the op
ISSUE_CASES = [
    ("A: 2 -> 2 at x1.4 (nearest)", ("nearest", (2, 6), (1.4, 2.0), 0), dict(scales_h=0.0)),
    ("A: 2 -> 2 at x1.4 (bilinear)", ("bilinear", (2, 6), (1.4, 2.0), 0), dict(scales_h=0.0)),
    ("A: 5 -> 10 at x2.1 (nearest)", ("nearest", (5, 5), 2.1, 0), dict(scales_h=0.0, scales_w=0.0)),
    ("B: 26 -> 31 at x1.2 (nearest)", ("nearest", (26, 7), 1.2, 0), dict(scales_h=0.0)),
    ("C: 3-D, sizes given", ("nearest3d", (2, 3, 4), None, 0), dict(output_size=[], scales=[2.5, 7 / 3, 2.25])),
]


@pytest.mark.parametrize("case", ISSUE_CASES, ids=[c[0] for c in ISSUE_CASES])
def test_issue_examples_convert_with_the_right_attributes(case):
    _, sweep, expected = case
    model, feeds, reference = _sweep_case(*sweep, "float32")
    conversion = ascend.to_ascend(model, soc=A2)
    (node,) = _ge_nodes(conversion.model)
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for name, want in expected.items():
        assert values[name] == pytest.approx(want, rel=1e-6), conversion.summary()
    for result in _emulations(conversion, feeds):
        assert _error(result["dx"], reference) < TOLERANCE["float32"]


def test_bicubic_align_corners_length_one_goes_to_resize_grad_d():
    """D: a resolved step of 0 would select the deterministic kernel, which divides by it: ResizeGradD, as aclnn."""
    model, _, _ = _sweep_case("bicubic", (5, 7), None, 1, "float32")
    attrs = dict(input_size=[1, 2, 5, 7], output_size=[1, 15], align_corners=1)
    model = opset.attach(one_node_model("UpsampleBicubic2dGrad", {"grad_output": (1, 2, 1, 15)}, ["dx"], attrs))
    conversion = ascend.to_ascend(model, soc=A2)
    assert [n.op_type for n in _ge_nodes(conversion.model)] == ["ResizeGradD"], conversion.summary()
    assert any("UpsampleBicubic2dGrad" in why for why in conversion.nodes[0].rejected)


@pytest.mark.parametrize("soc", [TRAINING, "Ascend310P3"])
def test_resize_grad_d_sweep_equals_torch(soc):
    """UpsampleBicubic2dGrad on the families without its AscendC kernel becomes ResizeGradD (cubic, HWNC), whose TBE
    kernel (CANN 8.1.RC1) is emulated: every converted node equals aten's upsample_bicubic2d_backward. Equal sizes
    under a given scale: aten copies, the kernel resamples by the scale, so the converter passes scales 0 (the size
    ratio, 1), and the given scale put back fails."""
    cases = [c for c in SWEEP if c[0] == "bicubic"]
    outcomes = [_check_sweep(case, "float32", soc=soc) for case in cases]
    assert outcomes.count("converted") == len(outcomes), outcomes
    dy = np.random.default_rng(3).standard_normal((1, 2, 5, 5)).astype(np.float32)
    attrs = dict(input_size=[1, 2, 5, 5], output_size=[5, 5], scales_h=1.1, scales_w=1.1)
    model = opset.attach(one_node_model("UpsampleBicubic2dGrad", {"grad_output": dy.shape}, ["dx"], attrs))
    conversion = ascend.to_ascend(model, soc=soc)
    (node,) = _ge_nodes(conversion.model)
    assert node.op_type == "ResizeGradD" and helper.get_attribute_value(
        next(a for a in node.attribute if a.name == "scales")) == [0.0, 0.0], conversion.summary()
    reference = torch.ops.aten.upsample_bicubic2d_backward(torch.from_numpy(dy), [5, 5], [1, 2, 5, 5], False,
                                                           1.1, 1.1).numpy()
    feeds = {"grad_output": dy}
    assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["dx"], reference) < 2e-5
    _set(node, "scales", [1.1, 1.1])
    assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["dx"], reference) > 0.05


def test_resize_grad_d_with_a_wrong_attribute_fails():
    for name, value in (("scales", [0.4, 0.4]), ("coordinate_transformation_mode", "align_corners")):
        model, feeds, reference = _sweep_case("bicubic", (16, 37), 2.5, 0, "float32")
        conversion = ascend.to_ascend(model, soc=TRAINING)
        (node,) = _ge_nodes(conversion.model)
        assert node.op_type == "ResizeGradD"
        assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["dx"], reference) < 2e-5
        _set(node, name, value)
        assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["dx"], reference) > 0.05


def test_no_separable_ge_op_converts_unchecked():
    """Every separable GE op has a kernel model on every family it is listed for, and a node whose kernel is not
    modelled (here ResizeGradD on NCHW data, which the converter never writes) fails its check instead of converting."""
    from resample_grad.converters.ascend_prototypes import PROTOTYPES
    for ge_type, proto in PROTOTYPES.items():
        if ge_type.startswith("GridSampler"):
            continue  # their own emulation and tests
        spatial = 3 if "3d" in ge_type else 1 if ge_type == "ResizeLinearGrad" else 2
        attrs = {a.name: 0.0 for a in proto.attrs}
        attrs.update(mode="cubic", data_format="HWNC", coordinate_transformation_mode="half_pixel",
                     scales=[0.0] * spatial, align_corners=0)
        for family in proto.dtypes:
            assert ascend._kernel_matrices(ge_type, family, attrs, 0, spatial, 4, 7) is not None, (ge_type, family)
    model, _, _ = _sweep_case("bicubic", (5, 7), 2.5, 0, "float32")
    converted = ascend.to_ascend(model, soc=TRAINING)
    attrs = dict(converted.nodes[0].attributes, data_format="NCHW")
    op_matrix = np.eye(12, 5)
    plan = ascend.GePlan("ResizeGradD", ["g"], ["y"], attrs, kernel_axes=[(0, 5, 12, op_matrix), (1, 7, 17, op_matrix)])
    _, problems, _ = ascend._check_plan(plan, "float32", "Atlas training series", False, False)
    assert any("not modelled" in why for why in problems), problems


def test_tbe_resize_bilinear_v2_grad_with_a_scale_off_the_size_ratio_falls_back():
    """F: outside Ascend 950 the TBE kernel reads no scales; a scale that is not the size ratio cannot convert."""
    inputs = {"grads": (1, 2, 7, 7), "original_image": (1, 2, 3, 3)}
    model = opset.attach(one_node_model("ResizeBilinearV2Grad", inputs, ["y"],
                                        dict(half_pixel_centers=1, scales=[2.5, 2.5])))
    conversion = ascend.to_ascend(model, soc=A2, fallback="node")
    assert not _ge_nodes(conversion.model)
    assert "computes another gradient" in conversion.nodes[0].action
    on_950 = ascend.to_ascend(model, soc=N950)  # the AscendC kernel there takes scales
    assert [n.op_type for n in _ge_nodes(on_950.model)] == ["ResizeBilinearV2Grad"]


# --------------------------------------------------------------------------- deliberately wrong attributes

def _set(node, name, value):
    for a in node.attribute:
        if a.name == name:
            a.CopyFrom(helper.make_attribute(name, value, attr_type=a.type))


def _wrong_error(sweep, mutate, dtype="float32"):
    model, feeds, reference = _sweep_case(*sweep, dtype)
    conversion = ascend.to_ascend(model, soc=A2)
    assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["dx"], reference) \
        < TOLERANCE[dtype]
    wrong = copy.deepcopy(conversion.model)
    mutate(wrong)
    try:
        return _error(cann.run_converted(wrong, feeds, conversion.family)["dx"], reference)
    except cann.Undefined:  # the kernel reads outside the image: no gradient at all
        return np.inf


@pytest.mark.parametrize("sweep,name,value", [
    (("nearest", (2, 6), (1.4, 2.0), 0), "scales_h", 1.4),  # A: the given scale the op ignores
    (("nearest", (26, 7), 1.2, 0), "scales_h", 1.2),  # B: 26 at x1.2, a boundary the kernel rounds otherwise
    (("bilinear", (2, 6), (1.4, 2.0), 0), "scales_h", 1 / 1.4),  # A, bilinear
    (("nearest", (16, 37), 2.5, 0), "scales_w", 0.4),  # a scale inverted
    (("bilinear", (16, 37), 2.5, 0), "scales_w", 2.5),  # an inverse scale given forward
    (("trilinear3d", (26, 3, 7), 1.2, 0), "scale_w", 1.2),  # trilinear: an inverse scale given forward
    (("trilinear3d", (5, 5, 2), (1.4, 2.0, 2.1), 0), "scale_d", 0.5),  # the inverse of 2, not of 1.4 (7 / 5)
    (("bilinear-aa", (16, 37), 0.5, 0), "scales_w", 0.5),  # antialias: a forward scale where the op takes 1/scale
    (("bicubic-aa", (26, 7), 2.5, 0), "scales_h", 2.5),  # the same, upscaling
    (("bicubic-aa", (16, 37), 0.5, 1), "align_corners", 0),  # the other align_corners
])
def test_a_wrong_scale_fails_the_comparison(sweep, name, value):
    def mutate(model):
        _set(_ge_nodes(model)[0], name, value)
    assert _wrong_error(sweep, mutate) > 0.1


def test_empty_3d_scales_read_past_the_attribute():
    model, feeds, _ = _sweep_case("nearest3d", (2, 3, 4), None, 0, "float32")
    conversion = ascend.to_ascend(model, soc=A2)
    node = _ge_nodes(conversion.model)[0]
    _set(node, "scales", [])
    _set(node, "output_size", [5, 7, 9])
    with pytest.raises(cann.Undefined, match="reads scales"):
        cann.run_converted(conversion.model, feeds, conversion.family)


def _without_casts(model: onnx.ModelProto) -> None:
    """The GE node on the model's own dtype: the Casts around it removed, their tensors renamed."""
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    rename = {c.output[0]: c.input[0] for c in casts if c.name.endswith(tuple("0123456789")) and "cast_in" in c.name}
    back = {c.input[0]: c.output[0] for c in casts if "cast_out" in c.name}
    for node in model.graph.node:
        node.input[:] = [rename.get(i, i) for i in node.input]
        node.output[:] = [back.get(o, o) for o in node.output]
    kept = [n for n in model.graph.node if n.op_type != "Cast"]
    del model.graph.node[:]
    model.graph.node.extend(kept)


def _mean_error(ours: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(np.asarray(ours, np.float64) - exact).mean() / np.abs(exact).mean())


def test_bfloat16_without_casts_is_less_precise():
    """E: bfloat16 bilinear 16 -> 36 (x2.3). Between Casts the GE node's result is the float64 gradient rounded
    once to bfloat16, as torch's; on bfloat16 the kernel rounds its weights and the intermediate too: twice the
    mean error."""
    sweep = ("bilinear", (16, 16), (2.3, 2.3), 0)
    model, feeds, torch_bf16 = _sweep_case(*sweep, "bfloat16")
    dy64 = torch.from_numpy(feeds["grad_output"].astype(np.float32)).to(torch.float64)
    exact = _torch_backward("bilinear", dy64, [1, 2, 16, 16], [2.3, 2.3], 0).numpy()
    conversion = ascend.to_ascend(model, soc=A2)
    assert [n.op_type for n in conversion.model.graph.node] == ["Cast", "UpsampleBilinear2dGrad", "Cast"]
    with_casts = cann.run_converted(conversion.model, feeds, conversion.family)["dx"]
    native = ascend.to_ascend(model, soc=A2, native_half=True)
    assert [n.op_type for n in native.model.graph.node] == ["UpsampleBilinear2dGrad"]
    without = cann.run_converted(native.model, feeds, native.family)["dx"]
    stripped = copy.deepcopy(conversion.model)
    _without_casts(stripped)
    assert [n.op_type for n in stripped.graph.node] == ["UpsampleBilinear2dGrad"]
    assert _error(with_casts, torch_bf16) == 0  # measured: the same values as torch's bfloat16 backward
    assert _mean_error(without, exact) > 1.5 * _mean_error(with_casts, exact)
    np.testing.assert_array_equal(cann.run_converted(stripped, feeds, conversion.family)["dx"], without)


def test_every_family_the_converter_targets():
    """The emulated ops on each product family they run on: the same sweep point converts and agrees."""
    for soc in ("Ascend910B1", "Ascend910_9391", "Ascend950PR", "Ascend910", "Ascend310P3"):
        family = family_of(soc)
        for mode in ("nearest-exact", "nearest3d", "nearest", "bilinear", "bicubic", "trilinear3d"):
            model, feeds, reference = _sweep_case(mode, (5, 7) if "3d" not in mode else (2, 3, 4), 2.5, 0,
                                                  "float32", soc=soc)
            conversion = ascend.to_ascend(model, soc=soc, fallback="node")
            if not _ge_nodes(conversion.model):
                continue  # not on this family
            for result in _emulations(conversion, feeds):
                assert _error(result["dx"], reference) < TOLERANCE["float32"], (family, mode)


# --------------------------------------------------------------------------- ResizeGrad through its mapped ops

RESIZE_MODES = [
    dict(mode="linear", coordinate_transformation_mode="half_pixel"),
    dict(mode="linear", coordinate_transformation_mode="align_corners"),
    dict(mode="linear", coordinate_transformation_mode="asymmetric"),
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
    dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="floor"),
    dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
    dict(mode="cubic", coordinate_transformation_mode="half_pixel"),
]


@pytest.mark.parametrize("soc", [A2, "Ascend910_9391", TRAINING, "Ascend310P3", N950])
def test_resize_grad_sweep_equals_onnxruntime(soc):
    """ResizeGrad becomes UpsampleNearest2dGrad, ResizeBilinearV2Grad (the TBE kernel, which reads no scales:
    issue F), ... only where the kernel computes it: every converted node equals onnxruntime's ResizeGrad."""
    outcomes = []
    for attrs in RESIZE_MODES:
        for size in [(4, 5), (7, 3), (26, 7)]:
            for scale in [None, 2.0, 2.5, 1.2, 0.5]:
                out = [int(np.floor(i * scale)) if scale else 2 * i + 1 for i in size]
                model = _resize_grad_model([1, 2, *size], [1, 2, *out], scales=[1, 1, scale, scale] if scale else None,
                                           sizes=None if scale else [1, 2, *out], **attrs)
                conversion = ascend.to_ascend(model, soc=soc, fallback="node")
                report = conversion.nodes[0]
                if not _ge_nodes(conversion.model):
                    assert report.action.startswith("fallback: "), report.action
                    outcomes.append("fallback")
                    continue
                feeds = random_inputs(model, seed=3)
                try:
                    results = _emulations(conversion, feeds)
                except cann.NotEmulated:
                    outcomes.append("not emulated")
                    continue
                expected = run_on(model, feeds, "kernels")["dX"]
                for result in results:
                    assert _error(result["dX"], expected) < TOLERANCE["float32"], conversion.summary()
                outcomes.append("converted")
    assert outcomes.count("converted") >= 10, outcomes


# --------------------------------------------------------------------------- the Resize*V2 grads on Ascend 950

def _ort_adjoint(dy: np.ndarray, x_shape, scales, **resize_attrs) -> np.ndarray:
    """The gradient of onnxruntime's own Resize (ai.onnx, opset 18) of X into dy's shape: its matrix from the Resize
    of every one-hot X (all spatial axes together: onnxruntime copies a tensor whose axes all keep their size,
    whatever the scales), then dx = dy A (the adjoint identity). scales: per spatial axis, or None for sizes."""
    import onnxruntime as ort
    spatial = list(x_shape[2:])
    pixels = int(np.prod(spatial))
    x = np.eye(pixels, dtype=np.float32).reshape(pixels, 1, *spatial)
    inputs = ["x", "", "scales"] if scales[0] is not None else ["x", "", "", "sizes"]
    init = (numpy_helper.from_array(np.array([1, 1, *scales], np.float32), "scales") if scales[0] is not None
            else numpy_helper.from_array(np.array([pixels, 1, *dy.shape[2:]], np.int64), "sizes"))
    graph = helper.make_graph([helper.make_node("Resize", inputs, ["y"], **resize_attrs)], "r",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert list(y.shape[2:]) == list(dy.shape[2:]), (y.shape, dy.shape)
    matrix = y.reshape(pixels, -1).astype(np.float64)  # [x pixel, dy pixel]
    flat = dy.astype(np.float64).reshape(*dy.shape[:2], -1)
    return (flat @ matrix.T).reshape(*dy.shape[:2], *spatial)


V2_MODES = [(dict(align_corners=1, half_pixel_centers=0), "align_corners"),
            (dict(align_corners=0, half_pixel_centers=1), "half_pixel"),
            (dict(align_corners=0, half_pixel_centers=0), "asymmetric")]


def _v2_cases():
    for attrs, ctm in V2_MODES:
        for size in [(4, 5), (7, 3), (26, 7), (16, 37)]:
            for scale in [None, 2.0, 2.5, 1.2, 0.5, 0.75, 3.0, (1.0, 2.5)]:
                scales = [None] * 2 if scale is None else list(scale) if isinstance(scale, tuple) else [scale] * 2
                out = [int(np.floor(i * f)) if f else 2 * i + 1 for i, f in zip(size, scales, strict=True)]
                if min(out) >= 1 and not (ctm == "align_corners" and scale is not None):
                    yield attrs, ctm, size, scales, out


def _check_v2(op_type, attrs, ctm, size, scales, out, resize_attrs, soc=N950):
    """One node of op_type on soc through to_ascend and the emulation, against aten's backward where the op follows
    aten (half_pixel, align_corners: it copies an axis aten copies, which onnxruntime's Resize resamples) and the
    adjoint of onnxruntime's Resize in TensorFlow's legacy asymmetric mode (no aten form)."""
    rng = np.random.default_rng(len(out) + sum(out))
    dy = rng.standard_normal([1, 2, *out]).astype(np.float32)
    node_attrs = dict(attrs, scales=[float(f or 0.0) for f in scales])
    inputs = {"grads": dy.shape, "original_image": (1, 2, *size)}
    model = opset.attach(one_node_model(op_type, inputs, ["y"], node_attrs))
    feeds = {"grads": dy, "original_image": np.zeros((1, 2, *size), np.float32)}
    given = [f if f else None for f in scales]
    if ctm == "asymmetric":
        if not all(given) and any(given):
            return "skipped"  # onnxruntime's Resize takes scales for every axis or sizes for every axis
        expected = _ort_adjoint(dy, [1, 2, *size], given if all(given) else [None, None],
                                coordinate_transformation_mode=ctm, **resize_attrs)
    else:
        mode = "bicubic" if "Bicubic" in op_type else "bilinear"
        expected = _torch_backward(mode, torch.from_numpy(dy), [1, 2, *size], given, ctm == "align_corners").numpy()
    conversion = ascend.to_ascend(model, soc=soc, fallback="node")
    if not _ge_nodes(conversion.model):
        assert conversion.nodes[0].action.startswith("fallback: "), conversion.nodes[0].action
        return "fallback"
    for result in _emulations(conversion, feeds):
        assert _error(result["y"], expected) < TOLERANCE["float32"], (size, scales, ctm, conversion.summary())
    return "converted"


def test_resize_bilinear_v2_grad_on_950_equals_aten_and_onnxruntime():
    """Ascend 950's ResizeBilinearV2Grad kernels (scatter, deterministic gather, gather with scales), every mode and
    scale (_check_v2's oracles). Half-pixel with an axis that keeps its size under a given scale: the op copies that
    axis (as aten), the kernel resamples it by the scale, so the converter passes scale 0 there (the size ratio, 1)."""
    outcomes = [_check_v2("ResizeBilinearV2Grad", *case, dict(mode="linear")) for case in _v2_cases()]
    assert outcomes.count("converted") == len(outcomes), outcomes
    half_pixel = dict(align_corners=0, half_pixel_centers=1)
    model = opset.attach(one_node_model("ResizeBilinearV2Grad", {"grads": (1, 2, 4, 6), "original_image": (1, 2, 4, 5)},
                                        ["y"], dict(half_pixel, scales=[1.2, 1.2])))
    (node,) = _ge_nodes(ascend.to_ascend(model, soc=N950).model)
    assert helper.get_attribute_value(next(a for a in node.attribute if a.name == "scales")) == pytest.approx([0, 1.2])


def test_resize_bicubic_v2_grad_on_950_equals_aten():
    """Ascend 950's ResizeBicubicV2Grad kernels (scatter, deterministic gather with its border rows) against aten's
    upsample_bicubic2d_backward, half_pixel and align_corners."""
    cubic = dict(mode="cubic", cubic_coeff_a=-0.75, exclude_outside=0)
    outcomes = [_check_v2("ResizeBicubicV2Grad", {"align_corners": attrs["align_corners"]}, ctm, size, scales, out,
                          cubic) for attrs, ctm, size, scales, out in _v2_cases() if ctm != "asymmetric"]
    assert outcomes.count("converted") > 0.9 * len(outcomes), outcomes


def test_resize_linear_grad_on_950_equals_onnxruntime():
    """ResizeLinearGrad's kernels (copies, point copies at integer steps, scatter, deterministic gather) against the
    adjoint of onnxruntime's 1-D linear Resize (align_corners, or half_pixel: the kernel's source is clamped at 0 as
    onnxruntime's); a wrong scale fails."""
    outcomes = []
    for corners in (0, 1):
        for size in (1, 2, 5, 7, 26, 40):
            for scale in (None, 2.0, 2.5, 1.2, 0.5, 1 / 3, 0.75, 3.0, 0.1):
                out = int(np.floor(size * scale)) if scale else 2 * size + 1
                if out < 1 or (corners and scale):
                    continue
                dy = np.random.default_rng(size + out).standard_normal((2, 3, out)).astype(np.float32)
                shapes = {"grads": dy.shape, "original_image": (2, 3, size)}
                model = opset.attach(one_node_model("ResizeLinearGrad", shapes, ["y"],
                                                    dict(align_corners=corners, scale=float(scale or 0.0))))
                feeds = {"grads": dy, "original_image": np.zeros((2, 3, size), np.float32)}
                ctm = "align_corners" if corners else "half_pixel"
                expected = _ort_adjoint(dy, [2, 3, size], [scale], mode="linear", coordinate_transformation_mode=ctm)
                conversion = ascend.to_ascend(model, soc=N950, fallback="node")
                if not _ge_nodes(conversion.model):
                    outcomes.append("fallback")
                    continue
                for result in _emulations(conversion, feeds):
                    assert _error(result["y"], expected) < TOLERANCE["float32"], (size, scale, corners)
                outcomes.append("converted")
                if scale == 2.5 and size > 2:  # an image of length 1 sums whatever the scale
                    _set(_ge_nodes(conversion.model)[0], "scale", 0.4)
                    wrong = cann.run_converted(conversion.model, feeds, conversion.family)["y"]
                    assert _error(wrong, expected) > 0.05
    assert outcomes.count("converted") > 0.9 * len(outcomes), outcomes


@pytest.mark.parametrize("op_type,attrs,name,value", [
    ("ResizeBilinearV2Grad", dict(align_corners=0, half_pixel_centers=1), "scales", [0.5, 0.4]),  # inverted
    ("ResizeBilinearV2Grad", dict(align_corners=0, half_pixel_centers=1), "half_pixel_centers", 0),
    ("ResizeBicubicV2Grad", dict(align_corners=0), "scales", [0.5, 0.4]),
    ("ResizeBicubicV2Grad", dict(align_corners=0), "align_corners", 1),
])
def test_v2_grad_on_950_with_a_wrong_attribute_fails(op_type, attrs, name, value):
    dy = np.random.default_rng(7).standard_normal((1, 2, 8, 12)).astype(np.float32)
    inputs = {"grads": dy.shape, "original_image": (1, 2, 4, 5)}
    model = opset.attach(one_node_model(op_type, inputs, ["y"], dict(attrs, scales=[2.0, 2.5])))
    feeds = {"grads": dy, "original_image": np.zeros((1, 2, 4, 5), np.float32)}
    mode = dict(mode="cubic", cubic_coeff_a=-0.75) if "Bicubic" in op_type else dict(mode="linear")
    expected = _ort_adjoint(dy, [1, 2, 4, 5], [2.0, 2.5], coordinate_transformation_mode="half_pixel", **mode)
    conversion = ascend.to_ascend(model, soc=N950)
    assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["y"], expected) < 2e-5
    _set(_ge_nodes(conversion.model)[0], name, value)
    assert _error(cann.run_converted(conversion.model, feeds, conversion.family)["y"], expected) > 0.05


# --------------------------------------------------------------------------- GridSampler2DGrad against aten

GRID_MODES = [(i, p, c) for i in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for c in (0, 1)]


def _grid_case(interpolation, padding, corners, soc=A2, seed=0):
    """A GridSampler2DGrad node whose grid reaches past the image (|g| up to 1.6), and aten's backward of it."""
    rng = np.random.default_rng(seed)
    x, grid = rng.standard_normal((2, 3, 6, 7)).astype(np.float32), rng.uniform(-1.6, 1.6, (2, 4, 5, 2))
    grid, dy = grid.astype(np.float32), rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    attrs = dict(interpolation_mode=interpolation, padding_mode=padding, align_corners=corners)
    shapes = {"grad_output": dy.shape, "input": x.shape, "grid": grid.shape}
    model = opset.attach(one_node_model("GridSampler2DGrad", shapes, ["grad_input", "grad_grid"], attrs))
    codes = ({"bilinear": 0, "nearest": 1}[interpolation], {"zeros": 0, "border": 1, "reflection": 2}[padding])
    dx, dgrid = torch.ops.aten.grid_sampler_2d_backward(torch.from_numpy(dy), torch.from_numpy(x),
                                                        torch.from_numpy(grid), *codes, bool(corners), [True, True])
    return model, {"grad_output": dy, "input": x, "grid": grid}, {"grad_input": dx.numpy(), "grad_grid": dgrid.numpy()}


@pytest.mark.parametrize("mode", GRID_MODES, ids=["-".join(map(str, m)) for m in GRID_MODES])
def test_grid_sampler_2d_grad_equals_aten(mode):
    """The A2 / A3 AI Core kernel (wide modes included: reflection) computes aten's grid_sampler_2d_backward."""
    model, feeds, reference = _grid_case(*mode)
    for soc in (A2, "Ascend910_9391"):
        conversion = ascend.to_ascend(model, soc=soc, wide_modes=True)
        assert [n.op_type for n in _ge_nodes(conversion.model)] == ["GridSampler2DGrad"], conversion.summary()
        result = cann.run_converted(conversion.model, feeds, conversion.family)
        for name, value in reference.items():
            assert _error(result[name], value) < 1e-5, (name, mode, soc)


@pytest.mark.parametrize("wrong", [("align_corners", 1), ("padding_mode", "border")])
def test_grid_sampler_2d_grad_with_a_wrong_attribute_fails(wrong):
    model, feeds, reference = _grid_case("bilinear", "zeros", 0)
    conversion = ascend.to_ascend(model, soc=A2)
    _set(_ge_nodes(conversion.model)[0], *wrong)
    result = cann.run_converted(conversion.model, feeds, conversion.family)
    assert _error(result["grad_input"], reference["grad_input"]) > 0.05

