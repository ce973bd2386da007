"""The package API: attach across opsets, functions, schemas, which path ran, thread determinism."""
from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

from conftest import one_node_model, run_model, session_for
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


@functools.lru_cache(maxsize=None)
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
    for ours, want in zip(with_functions, reference):
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
    functions = opset.functions()
    assert [f.name for f in functions] == list(opset.OPS)
    for function in functions:
        assert function.domain == opset.DOMAIN
        onnx.checker.check_function(function)
        domains = {n.domain for n in function.node}
        assert domains <= {"", "ai.onnx.ml"}, domains


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
    with pytest.raises(opset.ResampleGradError, match="UpsampleNearest2dGrad: an unnamed node needs resample_grad opset 2, "
                                                      "the model imports 1"):
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
    outputs = ["grad_input", "grad_grid"] if op_type == "GridSampler2DGrad" else ["y"] if op_type.startswith("Resize") else ["grad_input"]
    model = one_node_model(op_type, inputs, outputs, attrs, dtype)
    results = [run_model(model, feeds, "kernel", threads=t) for t in (1, 2, 4)]
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


def test_empty_batch_and_channels_give_empty_outputs(path):
    model = one_node_model("GridSampler2DGrad", {"grad_output": (0, 3, 2, 2), "input": (0, 3, 4, 4), "grid": (0, 2, 2, 2)},
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
    symbols = subprocess.run(["nm", "-D", "--defined-only", runtime.library_path()], capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
    assert exported == {"RegisterCustomOps", "ResampleGradIsa"}
