"""The portable form (opset.inline: every separable op's gradient a MatMul per axis with its dense matrix) of every
separable case of the table, float32 and float64, on onnxruntime against its torch oracle."""
from __future__ import annotations

import zlib

import pytest

torch = pytest.importorskip("torch")

from cases import CASES, TOLERANCE, is_fixed, make_inputs, oracle_outputs, relative_error  # noqa: E402
from conftest import NUMPY_DTYPES, one_node_model  # noqa: E402
from resample_grad import opset  # noqa: E402

SEPARABLE = [case for case in CASES if not case.op_type.startswith("GridSampler")]
PARAMS = [pytest.param(case, dtype, id=f"{case.id}-{dtype}")
          for case in SEPARABLE for dtype in case.dtypes if dtype in ("float32", "float64")]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_portable_form_against_torch(case, dtype):
    import onnxruntime

    arrays = make_inputs(case, zlib.crc32(case.id.encode()))
    feeds = {name: a if is_fixed(case, name) else a.astype(NUMPY_DTYPES[dtype]) for name, a in arrays.items()}
    model = one_node_model(case.op_type, case.inputs, case.outputs, case.attrs, dtype,
                           input_dtypes={name: a.dtype for name, a in feeds.items() if is_fixed(case, name)})
    portable = opset.inline(model)
    session = onnxruntime.InferenceSession(portable.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    outputs = session.run(None, {name: value for name, value in feeds.items() if name in inputs})
    expected = oracle_outputs(case, arrays, dtype)
    for name, ours, want in zip([o for o in case.outputs if o], outputs, expected, strict=True):
        assert ours.shape == want.shape, name
        error = relative_error(ours, want)
        assert error <= TOLERANCE[dtype], f"{name}: relative error {error:.3g} > {TOLERANCE[dtype]}"
