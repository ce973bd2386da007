"""opset.inline and `resample-grad convert --target portable`: what the portable form promises (standard ops only
at the model's opset, no function, no custom domain, no zero-element initializer, unique node names, no If or
run-time shape check where the shapes are static), and its forward bodies against onnxruntime's own GridSample and
Resize."""
from __future__ import annotations

import functools
import itertools

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from resample_grad import cli, models, opset, paths
from resample_grad.opset._common import walk


def _ort(model: onnx.ModelProto, feeds: dict) -> list:
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("name", list(models.BUILDERS))
def test_inline_writes_standard_onnx_only(name):
    model = models.BUILDERS[name]()
    portable = opset.inline(model, forward=opset.FORWARD_OPS)
    version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    assert [(o.domain, o.version) for o in portable.opset_import] == [("", version)]
    assert not portable.functions
    names = [n.name for n in portable.graph.node]
    assert len(set(names)) == len(names) and all(names)
    for node in portable.graph.node:
        onnx.defs.get_schema(node.op_type, version, "")  # raises for an op the opset lacks
    assert all(0 not in t.dims for t in portable.graph.initializer)
    read = {i for n in walk(portable.graph.node) for i in n.input}
    assert all(t.name in read for t in portable.graph.initializer)
    if name != "resize_training_step":  # (its scales are an input: the lengths they give are run-time values)
        # every input shape is static: no If, no run-time shape check is left, no Shape read
        assert not {"If", "Shape", "Size"} & {n.op_type for n in portable.graph.node}


@pytest.mark.parametrize("name", ["grid_sampler_2d_grad", "resize_grad", "decoder_step"])
def test_inline_agrees_with_onnxruntime_functions(name):
    """The portable form on onnxruntime against the attached model's functions and the native kernels' reference."""
    model = models.BUILDERS[name]()
    feeds = models.example_inputs(name, model=model)
    reference = paths.run_on(model, feeds, "reference")
    for portable in (opset.inline(model), opset.inline(model, fold=False)):
        for output, value in zip(portable.graph.output, _ort(portable, feeds), strict=True):
            assert paths.disagreement(value, reference[output.name]) <= 1e-5


def test_inline_refuses_an_unknown_forward_op():
    with pytest.raises(opset.ResampleGradError, match="inline: forward=.*'Conv'|Conv cannot be replaced"):
        opset.inline(models.BUILDERS["decoder_step"](), forward=("Conv",))


def _one_forward_node(op_type, inputs: dict, attrs: dict, initializers=(), opset_version: int = 20):
    node_inputs = list(inputs) + [t.name if t is not None else "" for t in initializers]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    node = helper.make_node(op_type, node_inputs, ["y"], **attrs)
    graph = helper.make_graph([node], op_type, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v)
                                                for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[t for t in initializers if t is not None])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)])


# (ONNX GridSample has no cubic mode for 5-D input)
GRID_CASES = [case for case in itertools.product([4, 5], ["linear", "nearest", "cubic"],
                                                 ["zeros", "border", "reflection"], [0, 1]) if case[:2] != (5, "cubic")]


@pytest.mark.parametrize("rank,mode,padding,align_corners", GRID_CASES)
def test_forward_grid_sample_matches_onnxruntime(rank, mode, padding, align_corners):
    spatial = [5, 6, 7][: rank - 2]
    grid_points = [4, 3, 5][: rank - 2]
    model = _one_forward_node("GridSample", {"x": [2, 3, *spatial], "grid": [2, *grid_points, rank - 2]},
                              dict(mode=mode, padding_mode=padding, align_corners=align_corners))
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 3, *spatial)).astype(np.float32),
             "grid": rng.uniform(-1.3, 1.3, (2, *grid_points, rank - 2)).astype(np.float32)}
    portable = opset.inline(model, forward=("GridSample",))
    assert "GridSample" not in {n.op_type for n in portable.graph.node}
    np.testing.assert_allclose(_ort(portable, feeds)[0], _ort(model, feeds)[0], rtol=1e-5, atol=1e-5)


def _floats(name, values):
    return helper.make_tensor(name, TensorProto.FLOAT, [len(values)], values)


def _ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


RESIZE_CASES = {
    "linear_half_pixel_up": (dict(mode="linear"), _floats("scales", [1, 1, 1.5, 2.5]), None),
    "cubic_align_corners": (dict(mode="cubic", coordinate_transformation_mode="align_corners"), None,
                            _ints("sizes", [2, 3, 13, 7])),
    "nearest_asymmetric_floor": (dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                      nearest_mode="floor"), _floats("scales", [1, 1, 0.6, 1.7]), None),
    "linear_antialias_down": (dict(mode="linear", antialias=1), None, _ints("sizes", [2, 3, 4, 3])),
    "cubic_antialias_down_axes": (dict(mode="cubic", antialias=1, exclude_outside=1, axes=[2, 3]), None,
                                  _ints("sizes", [5, 4])),
    "linear_not_larger": (dict(mode="linear", keep_aspect_ratio_policy="not_larger", axes=[2, 3]), None,
                          _ints("sizes", [20, 20])),
    "cubic_pytorch_half_pixel_same_size": (dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel"),
                                           _floats("scales", [1, 1, 1, 1.01]), None),
}


@pytest.mark.parametrize("scatter_free", [False, True])
@pytest.mark.parametrize("case", list(RESIZE_CASES))
def test_forward_resize_matches_onnxruntime(case, scatter_free):
    attrs, scales, sizes = RESIZE_CASES[case]
    model = _one_forward_node("Resize", {"x": [2, 3, 9, 8]}, attrs, [None, scales, sizes], opset_version=19)
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 3, 9, 8)).astype(np.float32)}
    portable = opset.inline(model, forward=("Resize",), scatter_free=scatter_free)
    assert not {"Resize", "ScatterElements"} & {n.op_type for n in portable.graph.node}
    np.testing.assert_allclose(_ort(portable, feeds)[0], _ort(model, feeds)[0], rtol=1e-5, atol=1e-5)


def test_convert_target_portable(tmp_path, capsys):
    source, out = tmp_path / "decoder_step.onnx", tmp_path / "decoder_step.portable.onnx"
    onnx.save(models.BUILDERS["decoder_step"](), source)
    assert cli.main(["convert", str(source), "--target", "portable", "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    written = onnx.load(out)
    assert not written.functions and all(n.domain == "" for n in written.graph.node)
    assert cli.main(["convert", str(source), "--target", "portable", "--soc", "Ascend910B1", "-o", str(out)]) == 2
    assert "--soc applies only to --target ascend, not to --target portable" in capsys.readouterr().err
    assert cli.main(["convert", str(source), "--target", "portable", "-o", str(tmp_path / "x.npz")]) == 2


def test_convert_target_portable_scatter_free(tmp_path, capsys):
    """--scatter-free: the grid samplers without ScatterElements / GatherElements; refused for --target ascend."""
    source, out = tmp_path / "grid.onnx", tmp_path / "grid.portable.onnx"
    onnx.save(models.BUILDERS["grid_sampler_2d_grad"](), source)
    kinds = {}
    for flags in ([], ["--scatter-free"]):
        assert cli.main(["convert", str(source), "--target", "portable", "-o", str(out), *flags]) == 0
        kinds[bool(flags)] = {n.op_type for n in onnx.load(out).graph.node} & {"ScatterElements", "GatherElements"}
    assert kinds[False] and not kinds[True]
    capsys.readouterr()
    assert cli.main(["convert", str(source), "--target", "ascend", "--scatter-free", "-o", str(tmp_path / "a")]) == 2
    assert "--scatter-free applies only to --target portable" in capsys.readouterr().err


def test_inline_drops_contractions_with_the_identity():
    """decoder_step's Resize nodes list N and C too, with a scale of 1: their matrices are the identity, and the
    portable form reads the input there instead of moving the axis by a Transpose, multiplying and moving it back
    (onnx2tf 1.29.24 computes such a chain wrongly: test_runtime_bugs.py)."""
    name = "decoder_step"
    model = models.BUILDERS[name]()
    feeds = models.example_inputs(name, model=model)
    portable = opset.inline(model, forward=("Resize",))
    ops = [n.op_type for n in portable.graph.node]
    assert "Transpose" not in ops and ops.count("MatMul") == 8  # H and W of two Resize and two ResizeGrad nodes
    reference = paths.run_on(model, feeds, "reference")
    for output, value in zip(portable.graph.output, _ort(portable, feeds), strict=True):
        assert paths.disagreement(value, reference[output.name]) <= 1e-5


def test_inline_folds_the_matrices_of_a_real_size():
    """UpsampleBilinear2dGrad of 256 x 256 -> 512 x 512: its two dense matrices fold into initializers (its tap tables
    have 2^20 elements), so the portable form is two MatMuls with no index tensor (onnx2tf reads none right)."""
    node = opset.make_node("UpsampleBilinear2dGrad", ["g"], ["dx"], input_size=[1, 3, 256, 256],
                           output_size=[512, 512], align_corners=0)
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 3, 512, 512])],
                              [helper.make_tensor_value_info("dx", TensorProto.FLOAT, [1, 3, 256, 256])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(opset.DOMAIN, opset.VERSION)])
    portable = opset.inline(model)
    assert [n.op_type for n in portable.graph.node] == ["MatMul", "MatMul"]
    g = np.random.default_rng(0).standard_normal((1, 3, 512, 512)).astype(np.float32)
    want = paths.run_on(model, {"g": g}, "reference")["dx"]
    assert paths.disagreement(_ort(portable, {"g": g})[0], want) <= 1e-5


def test_inline_folds_a_split_of_constants():
    """A square matrix computed from a Split of a constant, B of one MatMul and, transposed, of another (kornia's
    warp_affine step inverts a constant 3 x 3 matrix this way): inline() folds the Split (onnxscript's folder skips
    nodes of several outputs) and what follows, so the matrix and its transpose are two initializers. OpenVINO
    2026.4.1 computes the unfolded form wrongly (test_runtime_bugs.py); onnxruntime computes both right."""
    stacked = np.arange(1, 19, dtype=np.float32).reshape(6, 3)
    nodes = [helper.make_node("Split", ["stacked"], ["c", "rest"], axis=0, num_outputs=2),
             helper.make_node("MatMul", ["x", "c"], ["y"]), helper.make_node("Transpose", ["c"], ["t"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "t"], ["w"])]
    value = functools.partial(helper.make_tensor_value_info, elem_type=TensorProto.FLOAT, shape=[2, 3])
    graph = helper.make_graph(nodes, "m", [value("x")], [value("y"), value("w")],
                              [onnx.numpy_helper.from_array(stacked, "stacked")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    portable = opset.inline(model)
    assert [n.op_type for n in portable.graph.node] == ["MatMul", "MatMul"]
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    y, w = _ort(portable, {"x": x})
    np.testing.assert_allclose(y, x @ stacked[:3], rtol=1e-6)
    np.testing.assert_allclose(w, x @ stacked[:3].T, rtol=1e-6)
