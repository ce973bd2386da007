"""The kernel path's outputs on one instruction set: python isa_outputs.py OUT.npz (RESAMPLE_GRAD_ISA set by the
caller; the set is chosen when the library loads, so test_isa.py runs one process per set).

Every case of the table in every dtype it lists, plus layouts large enough to take the kernels' other task splits
(channel blocks of a small batch, a grid sampler's per-batch fused task, many rows), each at 1, 2 and 4 threads
and once more at 4. Keys: "<case id>|<dtype>|<threads>|<run>|<output index>".
"""
from __future__ import annotations

import sys
import zlib

import numpy as np
import onnxruntime

from cases import (
    CASES,
    Case,
    grid_sampler_oracle,
    interpolate_oracle,
    is_fixed,
    make_inputs,
    uniform_grid,
    upsample_attrs,
    upsample_oracle,
)
from conftest import NUMPY_DTYPES, one_node_model
from resample_grad import opset, runtime

THREAD_RUNS = ((1, 0), (2, 0), (4, 0), (4, 1))


def _large_cases():
    cases = []
    for interp in ("bilinear", "nearest", "bicubic"):
        # blocks of 16 channels and grid chunks of one image; one fused task per batch item. Every layout here
        # is large enough to split into several tasks of kernel_common.h's minimum work (32K elements).
        for n, c in ((1, 40), (1, 8), (9, 5)):  # (1, 8): one block, the grid gradient apart over point chunks
            cases.append(Case("GridSampler2DGrad", f"large-{interp}-n{n}c{c}",
                              {"grad_output": (n, c, 48, 40), "input": (n, c, 30, 34), "grid": (n, 48, 40, 2)},
                              dict(interpolation_mode=interp, padding_mode="reflection", align_corners=0),
                              ("grad_input", "grad_grid"), grid_sampler_oracle(interp, "reflection", 0, (True, True)),
                              ("float32", "float64", "float16"), uniform_grid(1.3)))
    for interp in ("bilinear", "nearest"):
        cases.append(Case("GridSampler3DGrad", f"large-{interp}",
                          {"grad": (1, 36, 8, 10, 12), "x": (1, 36, 5, 6, 7), "grid": (1, 8, 10, 12, 3)},
                          dict(interpolation_mode=interp, padding_mode="zeros", align_corners=1), ("dx", "dgrid"),
                          grid_sampler_oracle(interp, "zeros", 1, (True, True), spatial=3), ("float32", "float64"),
                          uniform_grid(1.2)))
    for op_type, aten_name, corners in (("UpsampleBilinear2dGrad", "upsample_bilinear2d_backward", 0),
                                        ("UpsampleBicubic2dGrad", "upsample_bicubic2d_backward", 1),
                                        ("UpsampleNearest2dGrad", "upsample_nearest2d_backward", None),
                                        ("UpsampleBilinear2dAABackward", "_upsample_bilinear2d_aa_backward", 0)):
        input_size, output_size = (2, 16, 37, 50), (91, 69)
        cases.append(Case(op_type, "large", {"grad_output": (2, 16, *output_size)},
                          upsample_attrs(op_type, input_size, output_size, (0.0, 0.0), corners or 0),
                          ("grad_input",), upsample_oracle(aten_name, input_size, corners, (0.0, 0.0)),
                          ("float32", "float64")))
    # integer factors on a wide last axis: the strided run of the column gather (step 1 to 4) and its ends
    for op_type, aten_name, corners, (w_in, w_out) in (
            ("UpsampleNearest2dGrad", "upsample_nearest2d_backward", None, (40, 80)),
            ("UpsampleNearest2dGrad", "upsample_nearest2d_backward", None, (40, 120)),
            ("UpsampleNearest2dGrad", "upsample_nearest2d_backward", None, (40, 160)),
            ("UpsampleBilinear2dGrad", "upsample_bilinear2d_backward", 0, (40, 80)),
            ("UpsampleBilinear2dGrad", "upsample_bilinear2d_backward", 0, (40, 120)),
            ("UpsampleBilinear2dGrad", "upsample_bilinear2d_backward", 1, (40, 40)),
            ("UpsampleBicubic2dGrad", "upsample_bicubic2d_backward", 0, (33, 132)),
            ("UpsampleBilinear2dAABackward", "_upsample_bilinear2d_aa_backward", 0, (37, 74))):
        input_size, output_size = (2, 3, 6, w_in), (12, w_out)
        cases.append(Case(op_type, f"strided-{w_in}-{w_out}-ac{corners}", {"grad_output": (2, 3, *output_size)},
                          upsample_attrs(op_type, input_size, output_size, (0.0, 0.0), corners or 0),
                          ("grad_input",), upsample_oracle(aten_name, input_size, corners, (0.0, 0.0)),
                          ("float32", "float64", "bfloat16")))
    cases.append(Case("ResizeGrad", "large-trilinear",
                      {"dY": (1, 8, 18, 40, 31), "X": (1, 8, 5, 13, 17), "roi": (0,), "scales": (0,), "sizes": (5,)},
                      dict(mode="linear", coordinate_transformation_mode="half_pixel"), ("dX",),
                      interpolate_oracle((18, 40, 31), mode="trilinear"), ("float32",),
                      ints={"sizes": [1, 8, 18, 40, 31]}, empty=("roi", "scales")))
    return cases


ISA_CASES = tuple(CASES) + tuple(_large_cases())


def session(model, threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # 2 cores run 3 of these at once
    options.register_custom_ops_library(runtime.library_path())
    return onnxruntime.InferenceSession(opset.attach(model).SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def feeds_for(case: Case, dtype: str) -> dict:
    arrays = make_inputs(case, zlib.crc32(case.id.encode()))
    return {name: a if is_fixed(case, name) else a.astype(NUMPY_DTYPES[dtype]) for name, a in arrays.items()}


def main(out_path: str) -> None:
    results = {}
    for case in ISA_CASES:
        for dtype in case.dtypes:
            feeds = feeds_for(case, dtype)
            model = one_node_model(case.op_type, case.inputs, case.outputs, case.attrs, dtype,
                                   input_dtypes={name: a.dtype for name, a in feeds.items() if is_fixed(case, name)})
            sessions = {}
            for threads, run in THREAD_RUNS:
                if threads not in sessions:
                    sessions[threads] = session(model, threads)
                for k, output in enumerate(runtime.run(sessions[threads], feeds)):
                    # half types saved as their bits: npz has no bfloat16
                    results[f"{case.id}|{dtype}|{threads}|{run}|{k}"] = output.view(
                        np.uint16) if output.dtype.itemsize == 2 else output
    results["isa"] = np.array(runtime.isa())
    np.savez(out_path, **results)


if __name__ == "__main__":
    main(sys.argv[1])
