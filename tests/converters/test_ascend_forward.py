"""Standard GridSample / Resize nodes ATC cannot read, as GE forward ops (converters/ascend_forward.py).

Each converted node is checked against independent pictures of what it must compute: onnxruntime running the
original node, torch running the GE op's attributes (the GE ops document torch compatibility), and the NumPy
emulation of CANN's kernels written from their source (cann_emulation_forward.py). The plugin each node needs is
run on the parser's NodeProto (test_ascend_plugin's harness)."""
from __future__ import annotations

import json
import re

import cann_emulation_forward as cann
import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from test_ascend_plugin import check_every_node, harness  # noqa: F401  (harness: the fixture)

from resample_grad import models, runtime
from resample_grad.converters import ascend, ascend_cpp
from resample_grad.opset import ResampleGradError
from test_ascend import A2, N950, TRAINING, _compiles

INFERENCE = "Ascend310P1"
RNG = np.random.default_rng(33)


def _model(op_type, inputs: dict, output_shape, opset_version, initializers=(), **attrs):
    node = helper.make_node(op_type, list(inputs) + [i.name for i in initializers], ["y"], **attrs)
    if op_type == "Resize":  # X, roi, scales / sizes
        node.input[:] = [list(inputs)[0], ""] + [i.name for i in initializers]
        if len(initializers) == 1 and initializers[0].data_type == TensorProto.INT64:
            node.input[:] = [list(inputs)[0], "", "", initializers[0].name]
    graph = helper.make_graph([node], op_type.lower(),
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)], ir_version=9)


def _ort(model, feeds):
    return onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)[0]


def _ge_node(conversion):
    (node,) = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    return node, {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


# --------------------------------------------------------------------------- GridSample

GRID_CASES = [  # opset, spatial, mode, padding_mode, align_corners, GE op (None: CANN's own plugin reads it)
    (20, 3, "linear", "zeros", 1, "GridSampler3D"),
    (20, 3, "linear", "border", 0, "GridSampler3D"),
    (20, 3, "linear", "reflection", 0, "GridSampler3D"),
    (20, 3, "nearest", "zeros", 0, "GridSampler3D"),
    (18, 3, "bilinear", "zeros", 0, "GridSampler3D"),  # onnxruntime runs a 5-D GridSample-16 too
    (20, 2, "linear", "zeros", 0, "GridSampler2D"),
    (20, 2, "cubic", "border", 1, "GridSampler2D"),
    (18, 2, "bilinear", "zeros", 0, None),
]


def _grid_model(opset_version, spatial, mode, padding_mode, align_corners):
    x = [2, 3, 5, 6, 7][:2 + spatial]
    out = [4, 3, 5][:spatial]
    model = _model("GridSample", {"x": x, "grid": [2, *out, spatial]}, [2, 3, *out], opset_version, mode=mode,
                   padding_mode=padding_mode, align_corners=align_corners)
    feeds = {"x": RNG.standard_normal(x).astype(np.float32),
             "grid": (RNG.uniform(-1.2, 1.2, [2, *out, spatial])).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize("case", GRID_CASES, ids=[f"opset{c[0]}-{c[1]}d-{c[2]}-{c[3]}-ac{c[4]}" for c in GRID_CASES])
def test_grid_sample_becomes_the_ge_op_that_computes_it(case, tmp_path):
    opset_version, spatial, mode, padding_mode, align_corners, ge_op = case
    model, feeds = _grid_model(opset_version, spatial, mode, padding_mode, align_corners)
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    if ge_op is None:  # CANN's plugin maps ai.onnx::18::GridSample to GridSampler2D itself
        assert conversion.nodes == [] and not (tmp_path / "plugins").exists()
        return
    node, attrs = _ge_node(conversion)
    assert node.op_type == ge_op and list(node.input) == ["x", "grid"] and list(node.output) == ["y"]
    assert {o.domain: o.version for o in conversion.model.opset_import}["ai.onnx"] <= 18
    # the GE op's attributes, run by torch (GridSampler2D / 3D: "Compatible with pytorch GridSampler2D/3D")
    theirs = torch.nn.functional.grid_sample(torch.from_numpy(feeds["x"]), torch.from_numpy(feeds["grid"]),
                                             mode=_text(attrs["interpolation_mode"]),
                                             padding_mode=_text(attrs["padding_mode"]),
                                             align_corners=bool(attrs["align_corners"])).numpy()
    ours = _ort(model, feeds)
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-5)
    if ge_op == "GridSampler3D":
        assert _text(attrs["data_format"]) == "NCDHW"
        if attrs["interpolation_mode"] == b"bilinear" and padding_mode != "reflection":
            emulated = cann.grid_sampler_3d(feeds["x"], feeds["grid"], "bilinear", padding_mode,
                                            attrs["align_corners"])
            np.testing.assert_allclose(emulated, ours, rtol=1e-5, atol=1e-5)
    # from_ascend: the original node and opset again, bit for bit
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    assert {o.domain: o.version for o in back.opset_import}[""] == opset_version
    assert runtime.run(runtime.session(back), feeds)[0].tobytes() == _ort(model, feeds).tobytes()
    _compiles(tmp_path / "plugins" / ascend_cpp.PLUGIN_FILE, tmp_path / "graph" / "build_graph.cc")


def test_the_emulation_tells_align_corners_apart():
    """The oracle can fail: the other align_corners value computes another volume."""
    model, feeds = _grid_model(20, 3, "linear", "zeros", 1)
    wrong = cann.grid_sampler_3d(feeds["x"], feeds["grid"], "bilinear", "zeros", 0)
    assert np.abs(wrong - _ort(model, feeds)).max() > 0.1


@pytest.mark.parametrize("mode, soc, message", [
    ("cubic", A2, "interpolation_mode 'bicubic' is not computed by GridSampler3D (it takes bilinear, nearest)"),
    ("linear", INFERENCE, "GE op GridSampler3D is not available on Atlas inference series"),
])
def test_grid_sample_no_ge_op_computes_is_refused(mode, soc, message):
    model, _ = _grid_model(20, 3, mode, "zeros", 0)
    expected = f"node 'GridSample' (GridSample) becomes GE op GridSampler3D, which cannot run it: {message}"
    with pytest.raises(ResampleGradError, match=re.escape(expected)):
        ascend.to_ascend(model, soc=soc)


def test_fallback_all_writes_the_forward_nodes_in_standard_ops():
    """--fallback all promises standard ONNX: no GE op; a 5-D GridSample at opset 20 becomes its standard-op body
    at ATC's opset 18, computing what onnxruntime's GridSample computes."""
    model, feeds = _grid_model(20, 3, "linear", "zeros", 0)
    conversion = ascend.to_ascend(model, soc=A2, fallback="all")
    assert [(r.ge_op, r.action.split(";")[0]) for r in conversion.nodes] == [(None, "fallback: --fallback all")]
    assert {o.domain: o.version for o in conversion.model.opset_import} == {"": 18}
    assert "GridSample" not in {n.op_type for n in conversion.model.graph.node}
    np.testing.assert_allclose(_ort(conversion.model, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- Resize (5-D)

RESIZE_CASES = [  # coordinate_transformation_mode, X, scales (None: sizes), Y
    ("align_corners", [1, 2, 3, 4, 5], [1, 1, 2, 2, 2], [1, 2, 6, 8, 10]),
    ("pytorch_half_pixel", [1, 2, 3, 4, 5], [1, 1, 2.5, 1.5, 0.6], [1, 2, 7, 6, 3]),
    ("half_pixel", [2, 1, 4, 3, 6], None, [2, 1, 7, 5, 4]),
    ("pytorch_half_pixel", [1, 1, 5, 1, 4], None, [1, 1, 3, 1, 9]),
    ("align_corners", [1, 1, 4, 5, 3], None, [1, 1, 7, 1, 3]),
]


def _resize_model(coordinates, x, scales, y, mode="linear", opset_version=20):
    given = numpy_helper.from_array(np.array(scales, np.float32), "scales") if scales is not None else \
        numpy_helper.from_array(np.array(y, np.int64), "sizes")
    return _model("Resize", {"x": x}, y, opset_version, [given], mode=mode,
                  coordinate_transformation_mode=coordinates)


@pytest.mark.parametrize("case", RESIZE_CASES, ids=[f"{c[0]}-{'scales' if c[2] else 'sizes'}-{c[1]}"
                                                    for c in RESIZE_CASES])
def test_five_d_linear_resize_becomes_resize_upsample_trilinear(case, tmp_path):
    coordinates, x, scales, y = case
    model = _resize_model(coordinates, x, scales, y)
    feeds = {"x": RNG.standard_normal(x).astype(np.float32)}
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    node, attrs = _ge_node(conversion)
    assert node.op_type == "ResizeUpsampleTrilinear" and list(node.input) == ["x"]
    assert attrs["output_size"] == y[2:] and attrs["align_corners"] == int(coordinates == "align_corners")
    ours = _ort(model, feeds)
    gathered = [attrs["scales_d"], attrs["scales_h"], attrs["scales_w"]]
    emulated = cann.resize_upsample_trilinear(feeds["x"], attrs["output_size"], attrs["align_corners"], *gathered)
    np.testing.assert_allclose(emulated, ours, rtol=1e-5, atol=1e-5)
    if scales is not None and coordinates != "align_corners" and any(s not in (1, 2) for s in scales[2:]):
        # a deliberately wrong attribute fails: forward scales where the op takes inverse ones
        inverted = cann.resize_upsample_trilinear(feeds["x"], attrs["output_size"], 0, *scales[2:])
        assert np.abs(inverted - ours).max() > 0.05
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    assert runtime.run(runtime.session(back), feeds)[0].tobytes() == ours.tobytes()
    _compiles(tmp_path / "plugins" / ascend_cpp.PLUGIN_FILE, tmp_path / "graph" / "build_graph.cc")


@pytest.mark.parametrize("mode, coordinates, y, message", [
    ("nearest", "asymmetric", [1, 2, 6, 8, 10], "mode 'nearest' (only 'linear' has a 5-D GE op here"),
    ("linear", "asymmetric", [1, 2, 6, 8, 10], "coordinate_transformation_mode 'asymmetric'"),
    ("linear", "half_pixel", [1, 2, 1, 8, 10], "half_pixel with an output axis of length 1"),
])
def test_five_d_resize_no_ge_op_computes_is_refused(mode, coordinates, y, message):
    model = _resize_model(coordinates, [1, 2, 3, 4, 5], None, y, mode=mode)
    expected = "node 'Resize' (Resize): a 5-D Resize: CANN's Resize plugin makes it GE Resize, which takes 4-D input"
    with pytest.raises(ResampleGradError, match=re.escape(expected) + ".*" + re.escape(message)):
        ascend.to_ascend(model, soc=A2)


def test_four_d_resize_is_left_to_cann_s_plugin():
    model = _resize_model("half_pixel", [1, 2, 3, 4], [1, 1, 2, 2], [1, 2, 6, 8], opset_version=18)
    assert ascend.to_ascend(model, soc=A2).nodes == []


# --------------------------------------------------------------------------- Resize (4-D) CANN's plugin mishandles

AA_CASES = [  # mode, cubic_coeff_a, X, scales (None: sizes), Y
    ("cubic", -0.5, [2, 3, 16, 20], None, [2, 3, 7, 9]),
    ("cubic", -0.5, [1, 2, 10, 13], [1, 1, 0.45, 0.7], [1, 2, 4, 9]),
    ("linear", -0.75, [2, 1, 9, 12], None, [2, 1, 20, 5]),
    ("linear", -0.75, [1, 2, 10, 13], [1, 1, 2.5, 0.3], [1, 2, 25, 3]),
]


def _aa_model(mode, coefficient, x, scales, y, **attrs):
    given = numpy_helper.from_array(np.array(scales, np.float32), "scales") if scales is not None else \
        numpy_helper.from_array(np.array(y, np.int64), "sizes")
    attrs = dict(dict(antialias=1, exclude_outside=1, coordinate_transformation_mode="pytorch_half_pixel"), **attrs)
    return _model("Resize", {"x": x}, y, 18, [given], mode=mode, cubic_coeff_a=coefficient, **attrs)


@pytest.mark.parametrize("soc", [A2, N950])
@pytest.mark.parametrize("case", AA_CASES, ids=[f"{c[0]}-{'scales' if c[3] else 'sizes'}-{c[2]}" for c in AA_CASES])
def test_antialiased_resize_becomes_torch_s_antialiased_op(case, soc, tmp_path):
    """CANN's Resize plugin only warns about antialias: the node becomes the GE op of torch's antialiased resize,
    whose scales are inverse except UpsampleBicubic2dAA's on 950 (forward)."""
    mode, coefficient, x, scales, y = case
    model = _aa_model(mode, coefficient, x, scales, y)
    feeds = {"x": RNG.standard_normal(x).astype(np.float32)}
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    node, attrs = _ge_node(conversion)
    assert node.op_type == ("UpsampleBicubic2dAA" if mode == "cubic" else "UpsampleBilinear2dAA")
    assert attrs["output_size"] == y[2:] and attrs["align_corners"] == 0
    forward_on_device = node.op_type == "UpsampleBicubic2dAA" and soc == N950
    # torch's own op on the GE attributes: aten takes forward scales (out / in), None for the size ratio
    torch_scales = [None if s == 0 else float(s if forward_on_device else 1 / s)
                    for s in (attrs["scales_h"], attrs["scales_w"])]
    op = torch.ops.aten._upsample_bicubic2d_aa if mode == "cubic" else torch.ops.aten._upsample_bilinear2d_aa
    theirs = op(torch.from_numpy(feeds["x"]), attrs["output_size"], False, *torch_scales).numpy()
    ours = _ort(model, feeds)
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-5)
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    assert runtime.run(runtime.session(back), feeds)[0].tobytes() == ours.tobytes()
    _compiles(tmp_path / "plugins" / ascend_cpp.PLUGIN_FILE, tmp_path / "graph" / "build_graph.cc")


def test_the_scale_convention_matters():
    """The oracle can fail: forward scales read as inverse ones (the other SoC's convention) compute another image."""
    x = RNG.standard_normal([1, 2, 10, 13]).astype(np.float32)
    model = _aa_model("cubic", -0.5, [1, 2, 10, 13], [1, 1, 0.45, 0.7], [1, 2, 4, 9])
    wrong = torch.ops.aten._upsample_bicubic2d_aa(torch.from_numpy(x), [4, 9], False, 1 / 0.45, 1 / 0.7).numpy()
    assert np.abs(wrong - _ort(model, {"x": x})).max() > 0.05


@pytest.mark.parametrize("mode, coefficient, attrs, message", [
    ("cubic", -0.75, {}, "mode 'cubic' with antialias 1, exclude_outside 1, cubic_coeff_a -0.75"),
    ("linear", -0.75, {"exclude_outside": 0}, "mode 'linear' with antialias 1, exclude_outside 0"),
    ("cubic", -0.5, {"antialias": 0}, "cubic_coeff_a -0.5, exclude_outside 1 (it would compute another resize)"),
    ("cubic", -0.5, {"coordinate_transformation_mode": "align_corners"}, "coordinate_transformation_mode "
                                                                         "'align_corners'"),
    ("linear", -0.75, {"keep_aspect_ratio_policy": "not_larger"}, "keep_aspect_ratio_policy 'not_larger'"),
])
def test_resize_the_plugin_would_compute_otherwise_is_refused(mode, coefficient, attrs, message):
    model = _aa_model(mode, coefficient, [1, 2, 10, 13], None, [1, 2, 4, 9], **attrs)
    with pytest.raises(ResampleGradError, match="node 'Resize' \\(Resize\\): CANN's Resize plugin ignores .*"
                                                + re.escape(message)):
        ascend.to_ascend(model, soc=A2)


MATMUL_CASES = [  # mode, cubic_coeff_a, extra attributes, scales (None: sizes), Y
    ("cubic", -0.5, {"antialias": 0}, [1, 1, 1.7, 0.6], [1, 2, 17, 7]),
    ("cubic", -0.75, {}, None, [1, 2, 4, 9]),  # antialiased with the ONNX default A
    ("linear", -0.75, {"exclude_outside": 0}, [1, 1, 0.35, 0.5], [1, 2, 3, 6]),
    ("cubic", -0.5, {"axes": [3, 2]}, [0.6, 1.7], [1, 2, 17, 7]),  # scales in axes order: W, H
]


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[f"{c[0]}-{sorted(c[2])}-{'scales' if c[3] else 'sizes'}"
                                                    for c in MATMUL_CASES])
def test_fallback_node_writes_a_refused_resize_as_matmuls(case, tmp_path):
    """No GE op computes it: --fallback node writes it as two MatMuls with constant weights, standard ONNX ATC reads,
    which computes what onnxruntime's Resize does."""
    mode, coefficient, attrs, scales, y = case
    model = _aa_model(mode, coefficient, [1, 2, 10, 13], scales, y, **attrs)
    feeds = {"x": RNG.standard_normal([1, 2, 10, 13]).astype(np.float32)}
    with pytest.raises(ResampleGradError, match="--fallback node writes a 4-D Resize of static shapes as MatMuls"):
        ascend.to_ascend(model, soc=A2)
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path, fallback="node")
    assert [n.op_type for n in conversion.model.graph.node] == ["MatMul", "MatMul"]
    assert conversion.nodes[0].action.startswith("fallback: CANN's Resize plugin ignores")
    lowered = onnx.load(tmp_path / "model.ascend.onnx")
    np.testing.assert_allclose(_ort(lowered, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


def test_without_static_shapes_the_fallback_is_the_standard_body():
    """The MatMul form needs static shapes; without them --fallback node writes the tap engine's standard-op body."""
    model = _aa_model("cubic", -0.5, [1, 2, "h", 13], None, [1, 2, 4, 9], antialias=0)
    conversion = ascend.to_ascend(model, soc=A2, fallback="node")
    assert "written in standard ONNX ops" in conversion.nodes[0].action
    assert "Resize" not in {n.op_type for n in conversion.model.graph.node}
    feeds = {"x": RNG.standard_normal([1, 2, 10, 13]).astype(np.float32)}
    np.testing.assert_allclose(_ort(conversion.model, feeds), _ort(model, feeds), rtol=1e-5, atol=1e-5)


def test_resize_the_plugin_computes_is_left_to_it():
    model = _aa_model("cubic", -0.75, [1, 2, 10, 13], None, [1, 2, 20, 26], antialias=0, exclude_outside=0)
    assert ascend.to_ascend(model, soc=A2).nodes == []


# --------------------------------------------------------------------------- nearest Resize (4-D): the plugin's kernel

NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
NEAREST_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
NEAREST_SHAPES = [  # X, scales (None: sizes), Y
    ([1, 2, 4, 5], None, [1, 2, 8, 10]), ([1, 2, 8, 10], None, [1, 2, 4, 5]),
    ([1, 1, 5, 7], [1, 1, 2.5, 1.5], [1, 1, 12, 10]), ([1, 1, 6, 9], None, [1, 1, 7, 4]),
    ([1, 2, 3, 4], [1, 1, 2, 2], [1, 2, 6, 8]), ([1, 1, 26, 4], None, [1, 1, 31, 4]),
]


def _nearest_model(coordinates, rounding, x, scales, y):
    model = _resize_model(coordinates, x, scales, y, mode="nearest", opset_version=18)
    model.graph.node[0].attribute.append(helper.make_attribute("nearest_mode", rounding))
    return model


def _kernel_variants(soc):
    """The forward kernel's variants the source leaves open on that product: the TBE kernel's tie rule for
    align_corners and its scale by division or by a Newton-refined reciprocal; 950's kernels have none."""
    return [("up", False)] if soc == N950 else [(t, r) for t in ("up", "even") for r in (False, True)]


def test_nearest_resize_is_left_to_the_plugin_only_where_its_kernel_computes_it():
    """Every (coordinate_transformation_mode, nearest_mode, shape) on A2 and 950: left to CANN's plugin only where
    ResizeNearestNeighborV2's kernel (emulated from its source, every open variant) equals onnxruntime's Resize bit
    for bit; refused, naming the first differing output, only where some variant differs."""
    outcomes = {"left": 0, "refused": 0}
    for soc in (A2, N950):
        for coordinates in NEAREST_COORDINATES:
            for rounding in NEAREST_MODES:
                for x, scales, y in NEAREST_SHAPES:
                    model = _nearest_model(coordinates, rounding, x, scales, y)
                    feeds = {"x": RNG.standard_normal(x).astype(np.float32)}
                    expected = _ort(model, feeds)
                    align, half = coordinates == "align_corners", coordinates in ("half_pixel", "pytorch_half_pixel")
                    ours = [cann.resize_nearest_neighbor_v2(feeds["x"], y[2:], align, half, *v)
                            for v in _kernel_variants(soc)]
                    case = (soc, coordinates, rounding, x, scales, y)
                    try:
                        assert ascend.to_ascend(model, soc=soc).nodes == []
                    except ResampleGradError as error:
                        assert "makes it ResizeNearestNeighborV2" in str(error), case
                        assert any(not np.array_equal(o, expected) for o in ours), case
                        outcomes["refused"] += 1
                        continue
                    assert all(np.array_equal(o, expected) for o in ours), case
                    outcomes["left"] += 1
    assert outcomes["left"] >= 40 and outcomes["refused"] >= 100, outcomes


def test_nearest_resize_refused_names_the_output_and_falls_back_to_matmuls(tmp_path):
    """torch's default downscale (half_pixel, round_prefer_floor, 8 -> 4) reads input 2 o + 1 on the device, 2 o in
    the node; --fallback node writes it as MatMuls, equal to onnxruntime."""
    model = _nearest_model("half_pixel", "round_prefer_floor", [1, 2, 8, 10], None, [1, 2, 4, 5])
    with pytest.raises(ResampleGradError, match=r"on Atlas A2 output 0 of axis 2 \(8 -> 4\) reads input 1 there, 0 "
                                                r"in the node \(half_pixel, round_prefer_floor\)"):
        ascend.to_ascend(model, soc=A2)
    conversion = ascend.to_ascend(model, soc=A2, fallback="node", out_dir=tmp_path)
    assert [n.op_type for n in conversion.model.graph.node] == ["MatMul", "MatMul"]
    feeds = {"x": RNG.standard_normal((1, 2, 8, 10)).astype(np.float32)}
    assert np.array_equal(_ort(conversion.model, feeds), _ort(model, feeds))


def test_nearest_resize_without_static_shapes_is_refused():
    model = _nearest_model("asymmetric", "floor", [1, 2, 4, 5], None, [1, 2, 8, 10])
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "h"
    model.graph.output[0].type.tensor_type.shape.dim[2].dim_param = "h2"
    with pytest.raises(ResampleGradError, match="whose index map cannot be compared with the node's: X .* need static"):
        ascend.to_ascend(model, soc=A2)


# --------------------------------------------------------------------------- the demo's registration step

def test_registration_step_converts_and_its_plugin_reads_every_node(harness, tmp_path):  # noqa: F811
    model = models.registration_step()
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    ge = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    assert [n.op_type for n in ge] == ["ResizeUpsampleTrilinear", "GridSampler3D", "GridSampler3DGrad",
                                       "UpsampleTrilinear3dBackward"]
    assert {o.domain: o.version for o in conversion.model.opset_import} == {"ai.onnx": 18, ascend.GE_DOMAIN: 1}
    records = [json.loads(n.doc_string)["resample_grad"] for n in ge[:2]]
    assert [r["opset"] for r in records] == [20, 20]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [n["ge_op"] for n in report["nodes"][:2]] == ["ResizeUpsampleTrilinear", "GridSampler3D"]
    plugin = (tmp_path / "plugins" / ascend_cpp.PLUGIN_FILE).read_text()
    check_every_node(harness, conversion.model, plugin)
    # the forward pass on the device equals onnxruntime's: the emulated kernels on the converted nodes' attributes
    feeds = models.example_inputs("registration_step", seed=3, model=model)
    attrs = [{a.name: helper.get_attribute_value(a) for a in n.attribute} for n in ge[:2]]
    flow_up = cann.resize_upsample_trilinear(feeds["flow"], attrs[0]["output_size"], attrs[0]["align_corners"],
                                             attrs[0]["scales_d"], attrs[0]["scales_h"], attrs[0]["scales_w"])
    grid = numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == "identity")) \
        + flow_up.transpose(0, 2, 3, 4, 1)
    warped = cann.grid_sampler_3d(feeds["moving"], grid, "bilinear", _text(attrs[1]["padding_mode"]),
                                  attrs[1]["align_corners"])
    loss = np.mean((warped - feeds["fixed"]) ** 2)
    expected = runtime.run(runtime.session(model), feeds)[0]
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_training_series_has_no_resize_upsample_trilinear():
    with pytest.raises(ResampleGradError, match="node 'Resize' \\(Resize\\) becomes GE op ResizeUpsampleTrilinear, "
                                                "which cannot run it: GE op ResizeUpsampleTrilinear is not available "
                                                "on Atlas training series"):
        ascend.to_ascend(models.registration_step(), soc=TRAINING)
