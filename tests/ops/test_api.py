"""The package API: attach across opsets, functions, schemas, which path ran, thread determinism."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

from conftest import one_node_model, run_model
from resample_grad import opset, runtime

ALL_OPS = ["GridSampler2DGrad", "UpsampleNearestExact1dGrad", "UpsampleNearestExact2dGrad", "ResizeBilinearV2Grad"]


def model_using_all_ops(opset_version=18, ir_version=None):
    nodes = [
        opset.make_node("GridSampler2DGrad", ["go", "x", "grid"], ["gi", "gg"], interpolation_mode="bicubic",
                        padding_mode="reflection"),
        opset.make_node("UpsampleNearestExact1dGrad", ["g1"], ["y1"], input_size=[-1, 3, 5]),
        opset.make_node("UpsampleNearestExact2dGrad", ["g2"], ["y2"], input_size=[2, 3, 4, 5], scales_h=2.0),
        opset.make_node("ResizeBilinearV2Grad", ["g2", "x"], ["y3"], half_pixel_centers=1),
    ]
    f = onnx.TensorProto.FLOAT
    inputs = {"go": [2, 3, 6, 7], "x": [2, 3, 4, 5], "grid": [2, 6, 7, 2], "g1": [2, 3, 11], "g2": [2, 3, 8, 9]}
    graph = helper.make_graph(nodes, "all", [helper.make_tensor_value_info(n, f, s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info(n, f, None) for n in ["gi", "gg", "y1", "y2", "y3"]])
    kwargs = {"ir_version": ir_version} if ir_version else {}
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)], **kwargs), inputs


@functools.cache
def onnxruntime_loads_opset(version: int) -> bool:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    try:
        onnxruntime.InferenceSession(helper.make_model(graph, ir_version=9, opset_imports=[
            helper.make_opsetid("", version)]).SerializeToString())
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.parametrize("opset_version", range(17, onnx.defs.onnx_opset_version() + 1))
def test_attach_any_default_opset(opset_version):
    model, inputs = model_using_all_ops(opset_version, ir_version=onnx.IR_VERSION)
    attached = opset.attach(model)
    onnx.checker.check_model(attached, full_check=True)
    assert {(f.domain, f.name) for f in attached.functions} == {(opset.DOMAIN, name) for name in ALL_OPS}
    for function in attached.functions:
        assert {o.domain: o.version for o in function.opset_import}[""] == opset_version
    if not onnxruntime_loads_opset(opset_version):
        pytest.skip(f"onnxruntime {onnxruntime.__version__} refuses any model at opset {opset_version}")
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    with_functions = runtime.run(onnxruntime.InferenceSession(attached.SerializeToString()), feeds)
    from onnx.reference import ReferenceEvaluator
    model.opset_import.append(helper.make_opsetid(opset.DOMAIN, opset.VERSION))
    reference = ReferenceEvaluator(model, new_ops=opset.reference_ops()).run(None, feeds)
    for ours, want in zip(with_functions, reference, strict=True):
        np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)


def test_attach_keeps_other_functions_and_replaces_stale_ones():
    model, _ = model_using_all_ops()
    stale = onnx.FunctionProto(domain=opset.DOMAIN, name="GridSampler2DGrad")
    other = onnx.FunctionProto(domain="mine", name="Helper")
    model.functions.extend([stale, other])
    attached = opset.attach(model)
    names = [(f.domain, f.name) for f in attached.functions]
    assert names.count((opset.DOMAIN, "GridSampler2DGrad")) == 1
    assert ("mine", "Helper") in names
    assert len(next(f for f in attached.functions if f.name == "GridSampler2DGrad").node) > 0


def test_functions_are_valid_and_standard_only():
    functions = opset.functions(model_using_all_ops()[0])
    assert sorted(f.name for f in functions) == sorted(ALL_OPS)
    for function in functions:
        assert function.domain == opset.DOMAIN
        onnx.checker.check_function(function)
        domains = {n.domain for n in function.node}
        assert domains <= {""}, domains


def _one_upsample_per_dtype(dtypes):
    """One UpsampleBilinear2dGrad node per dtype, the same gradient values, in one model."""
    nodes, inputs, outputs = [], [], []
    for k, dtype in enumerate(dtypes):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        nodes.append(opset.make_node("UpsampleBilinear2dGrad", [f"g{k}"], [f"x{k}"], input_size=[2, 3, 5, 6],
                                     output_size=[9, 11]))
        inputs.append(helper.make_tensor_value_info(f"g{k}", elem, [2, 3, 9, 11]))
        outputs.append(helper.make_tensor_value_info(f"x{k}", elem, None))
    graph = helper.make_graph(nodes, "bodies", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_attach_gives_float_and_half_inputs_the_float32_body_and_double_the_double_one():
    attached = opset.attach(_one_upsample_per_dtype([np.float32, np.float16, np.float64]))
    onnx.checker.check_model(attached, full_check=True)
    overloads = [n.overload for n in attached.graph.node]
    assert [o.split(",")[0] for o in overloads] == ["float32", "float32", "float64"]
    assert overloads[1].split(",")[1] == "from_float16" and len(set(overloads)) == 3
    assert sorted((f.name, f.overload) for f in attached.functions) == sorted(
        ("UpsampleBilinear2dGrad", o) for o in overloads)
    assert attached.ir_version >= opset.OVERLOAD_IR_VERSION
    # the bodies differ in the arithmetic type: the float16 one casts its (checked) input to float32, the float and
    # double ones compute in their own type
    for overload, want in zip(overloads, [[], [onnx.TensorProto.FLOAT], []], strict=True):
        function = next(f for f in attached.functions if f.overload == overload)
        checked = next(n.output[0] for n in function.node if n.op_type == "Reshape" and n.input[0] == "grad_output")
        casts = [helper.get_attribute_value(n.attribute[0]) for n in function.node
                 if n.op_type == "Cast" and n.input[0] == checked]
        assert casts == want, overload
    # each body against torch's autograd on the same values (float32 within float32 rounding, double exactly)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grad = rng.standard_normal((2, 3, 9, 11))
    source = torch.zeros((2, 3, 5, 6), dtype=torch.float64, requires_grad=True)
    torch.nn.functional.interpolate(source, size=(9, 11), mode="bilinear").backward(torch.from_numpy(grad))
    want = source.grad.numpy()
    feeds = {"g0": grad.astype(np.float32), "g1": grad.astype(np.float16), "g2": grad}
    got = onnxruntime.InferenceSession(attached.SerializeToString()).run(None, feeds)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1].astype(np.float64), want, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(got[2], want, rtol=1e-12, atol=1e-12)


def test_attach_names_each_body_when_onnxruntime_does_not_select_overloads(monkeypatch):
    """Where onnxruntime runs one body per function name, two nodes of one op with different bodies (here
    align_corners 0 and 1) call functions named per body, and each computes its own node."""
    monkeypatch.setattr(opset, "onnxruntime_selects_overloads", lambda: False)
    nodes = [opset.make_node("UpsampleBilinear2dGrad", ["g"], [f"x{c}"], input_size=[2, 3, 5, 6], output_size=[9, 11],
                             align_corners=c) for c in (0, 1)]
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("g", onnx.TensorProto.FLOAT, [2, 3, 9, 11])],
                              [helper.make_tensor_value_info(f"x{c}", onnx.TensorProto.FLOAT, None) for c in (0, 1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    attached = opset.attach(model)
    names = [n.op_type for n in attached.graph.node]
    assert len(set(names)) == 2 and all(name.startswith("UpsampleBilinear2dGrad__") for name in names)
    assert sorted(f.name for f in attached.functions) == sorted(names)
    feeds = {"g": np.random.default_rng(0).standard_normal((2, 3, 9, 11)).astype(np.float32)}
    got = onnxruntime.InferenceSession(attached.SerializeToString()).run(None, feeds)
    for c, value in zip((0, 1), got, strict=True):
        want = opset.OPS["UpsampleBilinear2dGrad"].reference(feeds["g"], input_size=[2, 3, 5, 6], output_size=[9, 11],
                                                             align_corners=c)
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5)
    # the attached model validates and attaches again (to_ascend and the CLI read attached models)
    again = opset.attach(attached)
    assert [n.op_type for n in again.graph.node] == names and len(again.functions) == 2


def test_attach_keeps_the_double_body_when_onnxruntime_does_not_select_overloads(monkeypatch):
    """onnxruntime 1.19 reads IR 10 but runs one body per function name: every node then keeps the double one."""
    monkeypatch.setattr(opset, "onnxruntime_selects_overloads", lambda: False)
    attached = opset.attach(_one_upsample_per_dtype([np.float32]))
    assert [n.overload for n in attached.graph.node] == [""]
    assert [(f.name, f.overload) for f in attached.functions] == [("UpsampleBilinear2dGrad", "")]
    assert attached.ir_version == 8  # as the model had it
    feeds = {"g0": np.ones((2, 3, 9, 11), np.float32)}
    (got,) = onnxruntime.InferenceSession(attached.SerializeToString()).run(None, feeds)
    assert got.shape == (2, 3, 5, 6) and np.isclose(got.sum(), 2 * 3 * 9 * 11)


def test_schemas_are_registered_and_documented():
    for name in opset.OPS:
        schema = onnx.defs.get_schema(name, opset.VERSION, opset.DOMAIN)
        assert schema.doc
        for formal in list(schema.inputs) + list(schema.outputs):
            assert formal.description, (name, formal.name)
        for attribute in schema.attributes.values():
            assert attribute.description, (name, attribute.name)
        assert schema.inputs[0].type_str == "T" and {formal.type_str for formal in schema.outputs} == {"T"}


def test_versioning_the_seed_ops_are_version_1_the_family_version_2():
    """A model importing the domain at version 1 keeps its four ops; an op of version 2 needs version 2."""
    assert opset.VERSION == 2
    for name, op in opset.OPS.items():
        assert op.since_version == (1 if name in ALL_OPS else 2), name
        assert onnx.defs.get_schema(name, op.since_version, opset.DOMAIN).since_version == op.since_version
    model, inputs = model_using_all_ops()
    model.opset_import.append(helper.make_opsetid(opset.DOMAIN, 1))
    attached = opset.attach(model)
    assert {o.domain: o.version for o in attached.opset_import}[opset.DOMAIN] == 1
    onnx.checker.check_model(attached, full_check=True)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    assert len(runtime.session(attached).run(None, feeds)) == 5
    newer = one_node_model("UpsampleNearest2dGrad", {"grad_output": (1, 1, 4, 4)}, ["grad_input"],
                           dict(input_size=[1, 1, 2, 2], output_size=[4, 4]))
    del newer.opset_import[:]
    newer.opset_import.extend([helper.make_opsetid("", 18), helper.make_opsetid(opset.DOMAIN, 1)])
    with pytest.raises(opset.ResampleGradError,
                       match="UpsampleNearest2dGrad: an unnamed node needs resample_grad opset 2, the model imports 1"):
        opset.attach(newer)


def test_shape_inference_gives_output_shapes():
    model, _ = model_using_all_ops()
    inferred = onnx.shape_inference.infer_shapes(opset.attach(model), strict_mode=True)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.output}
    assert shapes == {"gi": [2, 3, 4, 5], "gg": [2, 6, 7, 2], "y1": [2, 3, 5], "y2": [2, 3, 4, 5], "y3": [2, 3, 4, 5]}


def test_registered_kernel_takes_precedence_over_the_function():
    """A function body that returns zeros: the kernel path must still give the real gradient."""
    model = one_node_model("ResizeBilinearV2Grad", {"grads": (1, 1, 4, 4), "original_image": (1, 1, 2, 2)}, ["y"],
                           dict(align_corners=1))
    attached = opset.attach(model)
    function = attached.functions[0]
    del function.node[:]
    function.node.extend([
        helper.make_node("Shape", ["original_image"], ["shape"]),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
        helper.make_node("CastLike", ["zeros", "grads"], ["y"]),  # the schema output name
    ])
    feeds = {"grads": np.ones((1, 1, 4, 4), np.float32), "original_image": np.zeros((1, 1, 2, 2), np.float32)}
    plain = onnxruntime.InferenceSession(attached.SerializeToString()).run(None, feeds)[0]
    kernel = runtime.session(attached).run(None, feeds)[0]
    assert not plain.any()  # the function ran
    np.testing.assert_allclose(kernel, np.full((1, 1, 2, 2), 4.0))  # the kernel ran: each input pixel gets 4


# each input large enough to be split into several tasks of kernel_common.h's minimum work (32K elements)
@pytest.mark.parametrize("op_type,inputs,attrs", [
    ("GridSampler2DGrad", {"grad_output": (3, 16, 24, 20), "input": (3, 16, 17, 19), "grid": (3, 24, 20, 2)},
     dict(interpolation_mode="bicubic", padding_mode="reflection")),
    ("GridSampler2DGrad", {"grad_output": (3, 16, 24, 20), "input": (3, 16, 17, 19), "grid": (3, 24, 20, 2)}, {}),
    ("UpsampleNearestExact2dGrad", {"grad_output": (3, 16, 50, 41)}, dict(input_size=[3, 16, 21, 23])),
    ("UpsampleNearestExact1dGrad", {"grad_output": (3, 16, 3001)}, dict(input_size=[3, 16, 970])),
    ("ResizeBilinearV2Grad", {"grads": (3, 16, 50, 41), "original_image": (3, 16, 21, 23)}, dict(half_pixel_centers=1)),
])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_kernel_is_bit_identical_for_1_2_4_threads(op_type, inputs, attrs, dtype):
    from conftest import NUMPY_DTYPES
    rng = np.random.default_rng(7)
    feeds = {n: (rng.uniform(-1.2, 1.2, s) if n == "grid" else rng.standard_normal(s)).astype(NUMPY_DTYPES[dtype])
             for n, s in inputs.items()}
    outputs = (["grad_input", "grad_grid"] if op_type == "GridSampler2DGrad"
               else ["y"] if op_type.startswith("Resize") else ["grad_input"])
    model = one_node_model(op_type, inputs, outputs, attrs, dtype)
    results = [run_model(model, feeds, "kernel", threads=t) for t in (1, 2, 4)]
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert a.tobytes() == b.tobytes()


def test_empty_batch_and_channels_give_empty_outputs(path):
    model = one_node_model("GridSampler2DGrad", {"grad_output": (0, 3, 2, 2), "input": (0, 3, 4, 4),
                                                 "grid": (0, 2, 2, 2)},
                           ["grad_input", "grad_grid"], {})
    feeds = {"grad_output": np.zeros((0, 3, 2, 2), np.float32), "input": np.zeros((0, 3, 4, 4), np.float32),
             "grid": np.zeros((0, 2, 2, 2), np.float32)}
    gi, gg = run_model(model, feeds, path)
    assert gi.shape == (0, 3, 4, 4) and gg.shape == (0, 2, 2, 2)
    model = one_node_model("UpsampleNearestExact2dGrad", {"grad_output": (2, 0, 4, 4)}, ["grad_input"],
                           dict(input_size=[2, 0, 2, 2]))
    (gi,) = run_model(model, {"grad_output": np.zeros((2, 0, 4, 4), np.float32)}, path)
    assert gi.shape == (2, 0, 2, 2)


def test_library_exports_only_its_two_entry_points():
    import subprocess
    symbols = subprocess.run(["nm", "-D", "--defined-only", runtime.library_path()], capture_output=True,
                             text=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
    assert exported == {"RegisterCustomOps", "ResampleGradIsa"}


@pytest.mark.parametrize("op_type,spatial", [("GridSampler2DGrad", 2), ("GridSampler3DGrad", 3)])
def test_grid_functions_are_right_at_two_threads(op_type, spatial):
    """Many grid points on few pixels (repeated scatter targets), 2 threads, 5 runs: onnxruntime's ScatterND(add)
    races there (1.19 and 1.32 gave wrong sums), so the functions must not scatter with it."""
    rng = np.random.default_rng(0)
    names = ("grad_output", "input", "grid") if spatial == 2 else ("grad", "x", "grid")
    points = (64, 64) if spatial == 2 else (16, 16, 16)
    image = (8, 8) if spatial == 2 else (4, 4, 4)
    shapes = {names[0]: (4, 16, *points), names[1]: (4, 16, *image), "grid": (4, *points, spatial)}
    model = one_node_model(op_type, shapes, ["g_in", "g_grid"], {})
    feeds = {k: (rng.uniform(-1, 1, v) if k == "grid" else rng.standard_normal(v)).astype(np.float32)
             for k, v in shapes.items()}
    want = run_model(model, feeds, "reference")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    session = onnxruntime.InferenceSession(opset.attach(model).SerializeToString(), options)
    for _ in range(5):
        for got, ref in zip(session.run(None, feeds), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op_type,spatial", [("GridSampler2DGrad", 2), ("GridSampler3DGrad", 3)])
def test_grid_functions_keep_float32_precision_on_long_runs(op_type, spatial):
    """The gradient of a sum (grad_output all ones, every contribution positive) with thousands of taps a batch item:
    the functions sum sorted taps by prefix sums, whose running total must not eat the digits of each pixel's short
    run. float32 grad_input within 2e-6 of torch's float64 backward (the grid gradient does not use them)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    names = ("grad_output", "input", "grid") if spatial == 2 else ("grad", "x", "grid")
    points = (96, 96) if spatial == 2 else (24, 24, 24)
    image = (40, 40) if spatial == 2 else (10, 10, 10)
    shapes = {names[0]: (2, 3, *points), names[1]: (2, 3, *image), "grid": (2, *points, spatial)}
    feeds = {names[0]: np.ones(shapes[names[0]], np.float32),
             names[1]: rng.uniform(0.5, 1.5, shapes[names[1]]).astype(np.float32),
             "grid": rng.uniform(-1, 1, shapes["grid"]).astype(np.float32)}
    backward = torch.ops.aten.grid_sampler_2d_backward if spatial == 2 else torch.ops.aten.grid_sampler_3d_backward
    want = backward(*(torch.from_numpy(feeds[k].astype(np.float64)) for k in names), 0, 0, False, [True, True])
    got, = run_model(one_node_model(op_type, shapes, ["g_in"], {}), feeds, "function")
    np.testing.assert_allclose(got, want[0].numpy(), rtol=2e-6, atol=2e-6 * np.abs(want[0].numpy()).max())


@pytest.mark.parametrize("path", ["function", "kernel"])
@pytest.mark.parametrize("op_type,spatial", [("GridSampler2DGrad", 2), ("GridSampler3DGrad", 3)])
def test_a_node_may_leave_trailing_optional_outputs_out(op_type, spatial, path):
    """A node naming only grad_input is the same node as one naming ("grad_input", ""); onnxruntime's function
    inliner failed on it ("output index 1 is out of range") until attach() filled the name in."""
    names = ("grad_output", "input", "grid") if spatial == 2 else ("grad", "x", "grid")
    shapes = {names[0]: (1, 2, *[3] * spatial), names[1]: (1, 2, *[4] * spatial), "grid": (1, *[3] * spatial, spatial)}
    feeds = {k: np.random.default_rng(4).uniform(-1, 1, v).astype(np.float32) for k, v in shapes.items()}
    got, = run_model(one_node_model(op_type, shapes, ["g_in"], {}), feeds, path)
    want, _ = run_model(one_node_model(op_type, shapes, ["g_in", "g_grid"], {}), feeds, "reference")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
