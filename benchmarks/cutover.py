"""Where a second thread starts to pay: the kernels at 1 and 2 threads on inputs from tiny to large.

    python benchmarks/cutover.py [--repeats 200]

The kernels hand work to onnxruntime's thread pool in tasks of at least RG_MIN_TASK_WORK elements
(runtime/src/kernel_common.h); below that they run on the calling thread. Each row prints the work
(elements read plus written, as the kernels count it), the best time of --repeats runs at 1 and at
2 threads (the pool not spinning, as benchmarks/run.py measures), and 2-thread / 1-thread. To see
what the cut-over buys, run it twice: with the installed library and with one built with
-DCMAKE_CXX_FLAGS=-DRG_MIN_TASK_WORK=0 (always split), given as RESAMPLE_GRAD_LIBRARY.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from resample_grad import benchmark, runtime
from resample_grad.benchmark import Row


def _rows():
    for side in (4, 8, 16, 32, 64):  # bilinear 2x of a 16-channel image: the separable engine
        yield Row(f"UpsampleBilinear2dGrad 16x{side}x{side}", "UpsampleBilinear2dGrad",
                  {"grad_output": (1, 16, 2 * side, 2 * side)}, ["grad_input"],
                  dict(input_size=[1, 16, side, side], output_size=[2 * side, 2 * side]), None), 16 * 5 * side * side
    for side in (4, 8, 16, 32, 64):  # bilinear grid sampling, grid as large as the image
        yield Row(f"GridSampler2DGrad 16x{side}x{side}", "GridSampler2DGrad",
                  {"grad_output": (1, 16, side, side), "input": (1, 16, side, side), "grid": (1, side, side, 2)},
                  ["grad_input", "grad_grid"], {}, None), 2 * 16 * side * side * 6


def _best_us(session, feeds, repeats):
    session.run(None, feeds)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        session.run(None, feeds)
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="runs per cell, the best is kept (default: 200)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"library: {runtime.library_path()} (isa {runtime.isa()})")
    print("| row | work (elements) | 1 thread us | 2 threads us | 2t / 1t |")
    print("|---|---|---|---|---|")
    for row, work in _rows():
        model, feeds = benchmark.model_of(row), benchmark.feeds_of(row, rng)
        one, two = (_best_us(benchmark._session(model, t, kernel=True), feeds, args.repeats) for t in (1, 2))
        print(f"| {row.name} | {work} | {one:.1f} | {two:.1f} | {two / one:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
