"""Large tensors: the kernels index with 64 bits.

A 1-D nearest-exact gradient over 2^28 + 37 doubles (2.1 GB): byte offsets pass 2^31, so any
32-bit offset would read or write the wrong place. The onnxscript functions are not meant for
this size (they build an L_out x L_in matrix); the kernel is checked against exact counts.
Peak RSS is about 17 GB, so the test is opt-in: `python -m pytest -m large tests` (.ci/run runs it
when /proc/meminfo shows the memory).
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import one_node_model
from resample_grad import opset, runtime

LENGTH = 2**28 + 37
BINS = 11


def _expected_counts():
    """How many outputs read each input: aten's nearest-exact index, computed in chunks."""
    scale = np.float32(BINS) / np.float32(LENGTH)
    counts = np.zeros(BINS, np.int64)
    for start in range(0, LENGTH, 1 << 24):
        o = np.arange(start, min(LENGTH, start + (1 << 24)), dtype=np.float64)
        index = np.minimum(np.floor(((o + 0.5) * np.float64(scale)).astype(np.float32)).astype(np.int64), BINS - 1)
        counts += np.bincount(index, minlength=BINS)
    return counts


@pytest.mark.large
def test_byte_offsets_beyond_int32():
    grad = np.ones((1, 1, LENGTH), np.float64)
    grad[0, 0, -1] = 1e6  # the last element, 2.1 GB in: it must land in the last bin
    model = opset.attach(one_node_model("UpsampleNearestExact1dGrad", {"grad_output": grad.shape}, ["grad_input"],
                                        dict(input_size=[1, 1, BINS]), dtype="float64"))
    (out,) = runtime.session(model, threads=2).run(None, {"grad_output": grad})
    expected = _expected_counts().astype(np.float64)
    expected[-1] += 1e6 - 1
    np.testing.assert_array_equal(out[0, 0], expected)
