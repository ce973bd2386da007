"""Runtime instruction-set dispatch: RESAMPLE_GRAD_ISA, and every set this machine has giving the same bits at
any thread count, the same bits as every other set, and the torch oracle's values within the table's tolerances."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import TOLERANCE, make_inputs, oracle_outputs, relative_error  # noqa: E402
from isa_outputs import ISA_CASES, THREAD_RUNS  # noqa: E402

HERE = pathlib.Path(__file__).parents[1]  # tests/: isa_outputs.py, cases.py, native/
ORDER = ("baseline", "avx2", "avx512")
pytestmark = pytest.mark.xdist_group("isa")  # one worker: the outputs of every set are computed once


def _python(code: str, isa: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("RESAMPLE_GRAD_ISA", None)
    if isa is not None:
        env["RESAMPLE_GRAD_ISA"] = isa
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=HERE)


def _best_isa() -> str:
    result = _python("from resample_grad import runtime; print(runtime.isa())", None)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


SUPPORTED = ORDER[:ORDER.index(_best_isa()) + 1] if sys.platform == "linux" else ()


@pytest.mark.parametrize("value", ["sse9", "AVX2 ", "avx-512", ""])
def test_unknown_isa_is_a_one_line_error(value):
    if value == "":  # empty means unset: the best set
        assert _python("from resample_grad import runtime; print(runtime.isa())", value).stdout.strip() == _best_isa()
        return
    result = _python("import onnxruntime\nfrom resample_grad import runtime\n"
                     "options = onnxruntime.SessionOptions()\n"
                     "try:\n    options.register_custom_ops_library(runtime.library_path())\n"
                     "except Exception as error:\n    print(error)\n    raise SystemExit(3)\n", value)
    assert result.returncode == 3, (result.stdout, result.stderr)
    message = [line for line in result.stdout.splitlines() if "RESAMPLE_GRAD_ISA" in line]
    assert len(message) == 1, result.stdout
    assert repr(value) in message[0] or f"'{value}'" in message[0]
    assert "baseline" in message[0] and "avx2" in message[0] and "avx512" in message[0]


def test_unsupported_isa_is_a_one_line_error():
    missing = [isa for isa in ORDER if isa not in SUPPORTED]
    if not missing:
        pytest.skip("this machine has every set")
    result = _python("import onnxruntime\nfrom resample_grad import runtime\n"
                     "onnxruntime.SessionOptions().register_custom_ops_library(runtime.library_path())", missing[-1])
    assert result.returncode != 0
    assert any("RESAMPLE_GRAD_ISA" in line and "lacks" in line for line in result.stderr.splitlines())


@pytest.mark.parametrize("isa", ORDER)
def test_forced_set_is_reported(isa):
    if isa not in SUPPORTED:
        pytest.skip(f"this machine has no {isa}")
    assert _python("from resample_grad import runtime; print(runtime.isa())", isa).stdout.strip() == isa


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Every supported set's outputs, computed by one process per set (at most two at once)."""
    directory = tmp_path_factory.mktemp("isa")
    results, pending = {}, list(SUPPORTED)
    while pending:
        batch, pending = pending[:2], pending[2:]
        processes = {}
        for isa in batch:
            env = dict(os.environ, RESAMPLE_GRAD_ISA=isa)
            command = [sys.executable, str(HERE / "isa_outputs.py"), str(directory / f"{isa}.npz")]
            processes[isa] = subprocess.Popen(command,
                                              env=env, cwd=HERE, stderr=subprocess.PIPE, text=True)
        for isa, process in processes.items():
            _, err = process.communicate()
            assert process.returncode == 0, err
            with np.load(directory / f"{isa}.npz") as data:
                assert str(data["isa"]) == isa
                results[isa] = {key: data[key] for key in data.files if key != "isa"}
    return results


def _runs(results, case, dtype):
    """output index -> [(threads, run, array)]"""
    grouped = {}
    for threads, run in THREAD_RUNS:
        k = 0
        while (key := f"{case.id}|{dtype}|{threads}|{run}|{k}") in results:
            grouped.setdefault(k, []).append((threads, run, results[key]))
            k += 1
    return grouped


@pytest.mark.parametrize("isa", ORDER)
def test_same_bits_at_every_thread_count(outputs, isa):
    if isa not in SUPPORTED:
        pytest.skip(f"this machine has no {isa}")
    checked = 0
    for case in ISA_CASES:
        for dtype in case.dtypes:
            grouped = _runs(outputs[isa], case, dtype)
            assert grouped, case.id
            for k, runs in grouped.items():
                first = runs[0][2]
                for threads, run, array in runs[1:]:
                    assert np.array_equal(array, first, equal_nan=True), (
                        f"{case.id} {dtype} output {k}: {threads} threads (run {run}) differs from 1 thread")
                    checked += 1
    assert checked >= 3 * len(ISA_CASES)


def test_every_set_gives_the_same_bits(outputs):
    if len(SUPPORTED) < 2:
        pytest.skip("one instruction set on this machine")
    base = outputs[SUPPORTED[0]]
    for isa in SUPPORTED[1:]:
        assert outputs[isa].keys() == base.keys()
        different = [key for key in base if not np.array_equal(outputs[isa][key], base[key], equal_nan=True)]
        assert not different, f"{isa} differs from {SUPPORTED[0]} on {len(different)} outputs, e.g. {different[:3]}"


@pytest.mark.parametrize("isa", ORDER)
def test_against_torch(outputs, isa):
    if isa not in SUPPORTED:
        pytest.skip(f"this machine has no {isa}")
    import ml_dtypes
    half = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    for case in ISA_CASES:
        for dtype in case.dtypes:
            expected = oracle_outputs(case, make_inputs(case, zlib.crc32(case.id.encode())), dtype)
            for k, want in enumerate(expected):
                got = outputs[isa][f"{case.id}|{dtype}|1|0|{k}"]
                if dtype in half:
                    got = got.view(half[dtype])
                error = relative_error(got, want)
                assert error <= TOLERANCE[dtype], f"{case.id} {dtype} output {k}: relative error {error:.3g}"


@pytest.mark.skipif("avx512" not in SUPPORTED, reason="NearestPixels16 is AVX-512 code")
def test_vector_nearest_pixels_match_the_scalar_rule_on_float_bit_patterns(tmp_path):
    """tests/native/nearest_pixels.cc, every 4099th float32 bit pattern (NaN, inf, subnormals and huge values
    among them) as a point's x and as its y, every padding, both align_corners, sizes up to past 2^24: the
    16-lane pixels equal the scalar NearestIndex's. (Run with step 1 for the full sweep, minutes a size.)"""
    root = HERE.parent
    program = tmp_path / "nearest_pixels"
    build = subprocess.run(["g++", "-O2", "-std=c++17", "-ffp-contract=off", "-march=x86-64-v2", "-Iruntime/src",
                            "-DRG_HELPERS_ONLY", "tests/native/nearest_pixels.cc", "runtime/src/register.cc", "-o",
                            str(program)], capture_output=True, text=True, cwd=root)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(program), "4099"], capture_output=True, text=True)
    assert run.returncode == 0 and "DIFF" not in run.stdout, run.stdout + run.stderr
    assert run.stdout.count(": same") == 12, run.stdout  # six sizes, both align_corners
