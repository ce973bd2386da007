"""Every case of the table, on every path and dtype, against its torch oracle."""
from __future__ import annotations

import zlib

import pytest

torch = pytest.importorskip("torch")

from cases import CASES, TOLERANCE, is_fixed, make_inputs, oracle_outputs, relative_error  # noqa: E402
from conftest import NUMPY_DTYPES, PATHS, one_node_model, run_model  # noqa: E402

PARAMS = [pytest.param(case, dtype, path, id=f"{case.id}-{dtype}-{path}")
          for case in CASES for dtype in case.dtypes for path in PATHS]


@pytest.mark.parametrize("case,dtype,path", PARAMS)
def test_against_torch(case, dtype, path):
    arrays = make_inputs(case, zlib.crc32(case.id.encode()))
    feeds = {name: a if is_fixed(case, name) else a.astype(NUMPY_DTYPES[dtype]) for name, a in arrays.items()}
    model = one_node_model(case.op_type, case.inputs, case.outputs, case.attrs, dtype,
                           input_dtypes={name: a.dtype for name, a in feeds.items() if is_fixed(case, name)})
    outputs = run_model(model, feeds, path)
    expected = oracle_outputs(case, arrays, dtype)
    assert len(outputs) == len(expected)
    for name, ours, want in zip([o for o in case.outputs if o], outputs, expected, strict=True):
        assert ours.dtype == NUMPY_DTYPES[dtype], name
        assert ours.shape == want.shape, name
        error = relative_error(ours, want)
        assert error <= TOLERANCE[dtype], f"{name}: relative error {error:.3g} > {TOLERANCE[dtype]}"
