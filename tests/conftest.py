"""Shared test helpers: building a one-node model and running it on each path.

Paths:
    reference  onnx.reference.ReferenceEvaluator with resample_grad.opset.reference_ops()
    function   onnxruntime without the native library: runs the model-local onnxscript functions
    kernel     onnxruntime with the native custom-op library registered
"""
from __future__ import annotations

import functools
import pathlib
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from resample_grad import opset, runtime  # noqa: E402

PATHS = ("reference", "function", "kernel")
NUMPY_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
ONNX_DTYPES = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16,
               "float32": onnx.TensorProto.FLOAT, "float64": onnx.TensorProto.DOUBLE}


def one_node_model(op_type, inputs: dict, outputs, attrs: dict, dtype: str = "float32", opset_version: int = 18,
                   output_shapes=None, input_dtypes=None) -> onnx.ModelProto:
    """A model with one resample_grad node; inputs: name -> shape; outputs: names ("" = not requested).
    input_dtypes: name -> numpy dtype for the inputs that are not of `dtype` (int sizes, float32 scales)."""
    elem = ONNX_DTYPES[dtype]
    input_dtypes = input_dtypes or {}
    node = opset.make_node(op_type, list(inputs), list(outputs), **attrs)
    graph = helper.make_graph(
        [node], op_type,
        [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(input_dtypes[name]))
                                       if name in input_dtypes else elem, list(shape))
         for name, shape in inputs.items()],
        [helper.make_tensor_value_info(name, elem, None) for name in outputs if name])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version),
                                                   helper.make_opsetid(opset.DOMAIN, opset.VERSION)])


def session_for(model: onnx.ModelProto, path: str, threads: int = 1):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if path == "kernel":
        options.register_custom_ops_library(runtime.library_path())
    return onnxruntime.InferenceSession(opset.attach(model).SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def run_model(model: onnx.ModelProto, feeds: dict, path: str, threads: int = 1) -> list:
    """Outputs of the model's named graph outputs, on one path."""
    if path == "reference":
        from onnx.reference import ReferenceEvaluator
        return list(ReferenceEvaluator(model, new_ops=opset.reference_ops()).run(None, feeds))
    return runtime.run(session_for(model, path, threads), feeds)


@pytest.fixture(params=PATHS)
def path(request):
    return request.param


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Keeps `--dist loadgroup` grouping: pytest-xdist sends the tests of one xdist_group (which share an exported
    model through a cache) to one worker by suffixing their node ids with "@group", but it sets item._nodeid, which
    pytest 9.2 no longer reads (the node id is item._id): the groups were split and each worker exported again."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:
        return
    for item in items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        if groups and "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


GE_STUB = pathlib.Path(__file__).parent / "ge_stub"
sys.path.insert(0, str(GE_STUB))
import check_against_cann  # noqa: E402


@functools.cache
def ge_onnx_pb() -> pathlib.Path:
    """A folder with onnx/proto/ge_onnx.pb.{h,cc}: protoc's output for CANN's ge_onnx.proto (tests/ge_stub)."""
    return check_against_cann.protoc(pathlib.Path(tempfile.mkdtemp(prefix="ge_onnx_pb_")))


def ge_stub_includes() -> tuple:
    """-I flags that compile the generated Ascend files against tests/ge_stub."""
    return (f"-I{GE_STUB}", f"-I{ge_onnx_pb()}")
