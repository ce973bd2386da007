"""The benchmark: each row's torch column computes what its kernel computes (so the ratio compares the same
work), and the table and --isa behave as documented. Timings themselves are not tested."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from resample_grad import benchmark, opset, runtime

torch = pytest.importorskip("torch")
SMALL = benchmark.rows(quick=True, shrink=8)  # every row, at sizes a test can afford


def test_the_rows_cover_every_op_and_the_asked_sizes():
    names = [row.name for row in benchmark.rows()]
    assert {row.op_type for row in benchmark.rows()} == set(opset.OPS)
    for wanted in ("UpsampleNearest2dGrad 8x256x64x64->128x128", "UpsampleNearest3dGrad 2x32x32x32x32->64x64x64",
                   "UpsampleNearestExact3dGrad 2x32x32x32x32->64x64x64",
                   "UpsampleTrilinear3dBackward 2x32x32x32x32->64x64x64", "UpsampleBilinear2dGrad 8x64x64x64->128x128",
                   "UpsampleBilinear2dGrad 1-D 16x64x1024->2048", "UpsampleBicubic2dGrad 8x64x128x128->256x256",
                   "UpsampleBicubic2dGrad 8x64x128x128->64x64", "UpsampleBilinear2dAABackward 8x64x128x128->64x64",
                   "UpsampleBicubic2dAAGrad 8x64x128x128->64x64",
                   "ResizeBicubicV2Grad half_pixel 8x64x128x128->256x256",
                   "ResizeNearestNeighborV2Grad half_pixel 8x64x128x128->64x64",
                   "ResizeGrad nearest 8x64x64x64->128x128",
                   "ResizeGrad linear 8x64x64x64->128x128", "ResizeGrad cubic 8x64x64x64->128x128",
                   "ResizeGrad antialias linear 8x64x64x64->128x128",
                   "GridSampler3DGrad bilinear/zeros 8x16x32x32x32 (grid 8x32x32x32x3)"):
        assert wanted in names
    assert len(names) == len(set(names))


@pytest.mark.parametrize("row", SMALL, ids=[row.name for row in SMALL])
def test_torch_column_computes_what_the_kernel_computes(row):
    feeds = benchmark.feeds_of(row, np.random.default_rng(0))
    ours = runtime.run(runtime.session(benchmark.model_of(row), threads=1), feeds)
    theirs = [t.numpy() for t in row.torch_call({k: torch.from_numpy(v) for k, v in feeds.items()})]
    assert len(ours) == len(theirs)
    if row.torch_note:  # the TensorFlow legacy mode: torch times the half-pixel backward, as its note says
        assert "same work" in row.torch_note and ours[0].shape == theirs[0].shape
        return
    for got, want in zip(ours, theirs, strict=True):
        assert got.shape == want.shape
        scale = max(np.abs(want).max(), 1e-30)  # the nearest grid samplers' grid gradient is 0
        assert np.abs(got - want).max() / scale <= 1e-5


def test_memcpy_copies_on_every_thread():
    copy = benchmark.Memcpy(1 << 20, 2)
    copy.source[:] = np.arange(copy.source.size)
    copy()
    copy.close()
    np.testing.assert_array_equal(copy.target, copy.source)


def _bench(*arguments, env=None):
    return subprocess.run([sys.executable, "-m", "resample_grad", "bench", "--quick", "--repeats", "1", *arguments],
                          capture_output=True, text=True, timeout=600, env=env)


def test_table_has_every_column_per_thread_count():
    result = _bench("--rows", "UpsampleBilinear2dGrad 1-D", "--threads", "1,2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("machine: ") and f"isa: {runtime.isa()}" in lines
    header = next(line for line in lines if line.startswith("| row |"))
    assert header == ("| row | threads | torch ms | kernel ms | kernel/torch | function ms | function/torch "
                      "| kernel GB/s (of memcpy) |")
    rows = [line.split(" | ") for line in lines if line.startswith("| UpsampleBilinear2dGrad 1-D")]
    assert [r[1] for r in rows] == ["1", "2"]
    for cells in rows:
        torch_ms, kernel_ms, ratio, function_ms, function_ratio = map(float, cells[2:7])
        assert ratio == pytest.approx(kernel_ms / torch_ms, rel=0.05, abs=0.01)  # of the rounded ms
        assert function_ratio == pytest.approx(function_ms / torch_ms, rel=0.05, abs=0.01)
        assert cells[7].rstrip(" |").endswith("%)")


def test_isa_runs_each_instruction_set_in_its_own_process():
    result = _bench("--rows", "ResizeGrad nearest", "--threads", "1", "--no-function", "--isa", "avx2,baseline")
    assert result.returncode == 0, result.stderr
    rows = [line.split(" | ") for line in result.stdout.splitlines() if line.startswith("| ResizeGrad nearest")]
    assert [r[2] for r in rows] == ["avx2", "baseline"]
    isa_line = next(line for line in result.stdout.splitlines() if line.startswith("isa: "))
    assert isa_line == "isa: avx2 (the library reports avx2); baseline (the library reports baseline)"


def test_isa_that_the_library_cannot_load_is_one_error_line_before_any_measurement(tmp_path):
    env = dict(os.environ, RESAMPLE_GRAD_LIBRARY=str(tmp_path / "missing.so"))
    result = _bench("--rows", "ResizeGrad nearest", "--isa", "avx512", env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("resample-grad: error: bench: --isa avx512: loading the library with "
                                    "RESAMPLE_GRAD_ISA=avx512 failed: ")
    assert len(result.stderr.splitlines()) == 1
