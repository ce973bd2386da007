"""Concurrency and memory: one session from 8 threads, 4 sessions in parallel, RSS across 1,000 runs."""
from __future__ import annotations

import concurrent.futures
import os

import numpy as np
import onnxruntime

from conftest import one_node_model
from resample_grad import opset, runtime
from resample_grad.paths import disagreement

SHAPES = {"grad_output": (2, 4, 6, 7), "input": (2, 4, 9, 8), "grid": (2, 6, 7, 2)}
ATTRS = dict(interpolation_mode="bicubic", padding_mode="reflection", align_corners=0)


def _model():
    return opset.attach(one_node_model("GridSampler2DGrad", SHAPES, ["grad_input", "grad_grid"], ATTRS))


def _feeds(seed):
    rng = np.random.default_rng(seed)
    return {k: (rng.uniform(-1.3, 1.3, v) if k == "grid" else rng.standard_normal(v)).astype(np.float32)
            for k, v in SHAPES.items()}


def _expected(feeds):
    return opset.OPS["GridSampler2DGrad"].reference(feeds["grad_output"], feeds["input"], feeds["grid"], **ATTRS)


def _check(got, want):
    for a, b in zip(got, want, strict=False):
        assert disagreement(a, b) <= 1e-5  # max |diff| / max(|reference|, 1)


def test_one_session_from_8_threads():
    session = runtime.session(_model(), threads=2)
    cases = [_feeds(seed) for seed in range(8)]
    expected = [_expected(f) for f in cases]

    def worker(k):
        for i in range(60):
            j = (k + i) % len(cases)
            _check(session.run(None, cases[j]), expected[j])
        return k

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(worker, range(8))) == list(range(8))


def test_four_sessions_in_parallel_kernels_and_functions():
    model = _model()
    sessions = [runtime.session(model, threads=1), runtime.session(model, threads=2),
                onnxruntime.InferenceSession(model.SerializeToString()), runtime.session(model, threads=1)]
    cases = [_feeds(100 + seed) for seed in range(6)]
    expected = [_expected(f) for f in cases]

    def worker(k):
        for i in range(40 if k != 2 else 10):  # the function path is slower
            j = (k * 3 + i) % len(cases)
            _check(sessions[k].run(None, cases[j]), expected[j])
        return k

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(worker, range(4))) == [0, 1, 2, 3]


def _rss_bytes():
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_is_stable_over_1000_runs():
    session = runtime.session(_model(), threads=2)
    feeds = [_feeds(seed) for seed in range(4)]
    for i in range(200):  # warm up: arenas and thread-local buffers reach their size
        session.run(None, feeds[i % 4])
    before = _rss_bytes()
    for i in range(1000):
        session.run(None, feeds[i % 4])
    growth = _rss_bytes() - before
    assert growth < 4 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 1000 runs"
