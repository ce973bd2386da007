"""Benchmark: native kernel vs onnxscript function (both in onnxruntime) vs PyTorch CPU.

For each row the three are timed interleaved in one process at the same thread count
(onnxruntime intra_op_num_threads, torch.set_num_threads); the table gives median
milliseconds, the kernel/torch ratio and, for the separable ops, the bandwidth the
kernel reaches (bytes of grad_output read + grad_input written) against a memcpy
measured in the same run. The last row is a whole training step: models/unet_step.py's U-Net
exported with converters.export_training_step (needs torch: left out with --no-torch) against
torch's eager step (zero_grad, forward, loss, backward) on the same module.

torch's OpenMP pool waits passively (OMP_WAIT_POLICY=PASSIVE unless set; read when torch loads, so this module
sets it before the bench imports torch), and so does onnxruntime's pool in the training-step row: interleaved
in one process, a pool spinning after its run takes a core from the other side's next run.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import onnx
import onnxruntime
from onnx import helper

from resample_grad import opset, runtime

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@dataclasses.dataclass
class Row:
    name: str
    op_type: str
    inputs: Dict[str, tuple]
    outputs: List[str]
    attrs: dict
    torch_call: Optional[Callable]  # (torch tensors by input name) -> None
    torch_note: str = ""
    bandwidth: bool = False  # report GB/s (separable ops)
    # a whole model instead of one node: () -> (model, feeds, torch call); needs torch to build
    build: Optional[Callable[[], Tuple[onnx.ModelProto, dict, Callable]]] = None


def rows(quick: bool = False) -> List[Row]:
    n = 2 if quick else 8
    result = []
    for interp in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            result.append(Row(
                f"GridSampler2DGrad {interp}/{pad} {n}x64x64x64", "GridSampler2DGrad",
                {"grad_output": (n, 64, 64, 64), "input": (n, 64, 64, 64), "grid": (n, 64, 64, 2)},
                ["grad_input", "grad_grid"], dict(interpolation_mode=interp, padding_mode=pad, align_corners=0),
                _torch_grid(("bilinear", "nearest", "bicubic").index(interp), ("zeros", "border", "reflection").index(pad))))
    result.append(Row(f"UpsampleNearestExact1dGrad {2 * n}x64x2048->1024", "UpsampleNearestExact1dGrad",
                      {"grad_output": (2 * n, 64, 2048)}, ["grad_input"], dict(input_size=[2 * n, 64, 1024]),
                      _torch_nearest1d([2 * n, 64, 1024]), bandwidth=True))
    for h_out in (128, 100):
        result.append(Row(f"UpsampleNearestExact2dGrad {n}x64x{h_out}x{h_out}->64x64", "UpsampleNearestExact2dGrad",
                          {"grad_output": (n, 64, h_out, h_out)}, ["grad_input"], dict(input_size=[n, 64, 64, 64]),
                          _torch_nearest2d([n, 64, 64, 64]), bandwidth=True))
    for mode, (corners, half) in {"align_corners": (1, 0), "half_pixel": (0, 1), "tf_legacy": (0, 0)}.items():
        result.append(Row(f"ResizeBilinearV2Grad {mode} {n}x64x128x128->64x64", "ResizeBilinearV2Grad",
                          {"grads": (n, 64, 128, 128), "original_image": (n, 64, 64, 64)}, ["y"],
                          dict(align_corners=corners, half_pixel_centers=half), _torch_bilinear(bool(corners)),
                          "torch has no legacy mode: its half-pixel backward, same work" if mode == "tf_legacy" else "",
                          bandwidth=True))
    result.append(Row(f"U-Net training step {n}x1x64x64, 250k parameters (exported)", "", {}, [], {}, None,
                      "torch: eager zero_grad, forward, loss, backward", build=functools.partial(_unet_step, n)))
    return result


def _unet_step(n: int):
    """models/unet_step.py's U-Net (BatchNorm, max pooling, nearest and bilinear upsampling) at width 48: its
    exported training step (loss, every parameter's gradient) and torch's eager step on the same module."""
    import torch

    from resample_grad import converters
    from resample_grad.models import unet_step

    module = unet_step.unet(channels=48)
    generator = torch.Generator().manual_seed(0)
    x, target = (torch.randn(n, 1, 64, 64, generator=generator) for _ in range(2))
    model = converters.export_training_step(module, unet_step.mse, x, target)
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    given = {"input_0": x, "target_0": target}
    feeds = {i.name: (given[i.name] if i.name in given else state[i.name]).detach().numpy() for i in model.graph.input}

    def eager_step(_):
        module.zero_grad()
        unet_step.mse(module(x), target).backward()
    return model, feeds, eager_step


def _torch_grid(interp, pad):
    def call(t):
        import torch
        torch.ops.aten.grid_sampler_2d_backward(t["grad_output"], t["input"], t["grid"], interp, pad, False, [True, True])
    return call


def _torch_nearest1d(size):
    def call(t):
        import torch
        torch.ops.aten._upsample_nearest_exact1d_backward(t["grad_output"], [t["grad_output"].shape[2]], size, None)
    return call


def _torch_nearest2d(size):
    def call(t):
        import torch
        torch.ops.aten._upsample_nearest_exact2d_backward(t["grad_output"], list(t["grad_output"].shape[2:]), size, None, None)
    return call


def _torch_bilinear(align_corners):
    def call(t):
        import torch
        torch.ops.aten.upsample_bilinear2d_backward(t["grads"], list(t["grads"].shape[2:]),
                                                    list(t["original_image"].shape), align_corners, None, None)
    return call


def _model(row: Row) -> onnx.ModelProto:
    f = onnx.TensorProto.FLOAT
    graph = helper.make_graph(
        [opset.make_node(row.op_type, list(row.inputs), row.outputs, **row.attrs)], "bench",
        [helper.make_tensor_value_info(k, f, list(v)) for k, v in row.inputs.items()],
        [helper.make_tensor_value_info(o, f, None) for o in row.outputs])
    return opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def _session(model, threads, kernel: bool, passive: bool = False):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if passive:  # a pool spinning after its run would take a core from torch's next run (benchmarks/training_step.py)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if kernel:
        options.register_custom_ops_library(runtime.library_path())
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def memcpy_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """GB/s of a large copy (bytes read + bytes written), single thread (numpy)."""
    src = np.ones(megabytes * (1 << 20) // 4, np.float32)
    dst = np.empty_like(src)
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(repeats))
    return 2 * src.nbytes / (best * 1e-3) / 1e9


def run(threads_list=(1, 2), repeats: int = 7, function_repeats: int = 2, quick: bool = False, with_function: bool = True,
        progress=None, only: str = "", with_torch: bool = True) -> List[dict]:
    torch = None
    if with_torch:
        import torch
    rng = np.random.default_rng(0)
    results = []
    for row in rows(quick):
        if only and only not in row.name:
            continue
        if row.build is not None:
            if torch is None:  # exporting the step needs torch
                continue
            if progress:
                progress(f"{row.name}: exporting")
            model, feeds, torch_call = row.build()
        else:
            feeds = {k: (rng.uniform(-1.1, 1.1, v) if k == "grid" else rng.standard_normal(v)).astype(np.float32)
                     for k, v in row.inputs.items()}
            model, torch_call = _model(row), row.torch_call
        if row.bandwidth:  # bytes of grad_output read and grad_input written
            grad = row.inputs.get("grad_output", row.inputs.get("grads"))
            written = (row.attrs["input_size"] if "input_size" in row.attrs
                       else row.inputs.get("original_image", row.inputs.get("input")))
            moved = (int(np.prod(grad)) + int(np.prod(written))) * 4
        for threads in threads_list:
            if progress:
                progress(f"{row.name} @ {threads} thread(s)")
            kernel = _session(model, threads, kernel=True, passive=row.build is not None)
            function = _session(model, threads, kernel=False, passive=row.build is not None) if with_function else None
            tensors = {k: torch.from_numpy(v) for k, v in feeds.items()} if torch is not None else None
            if torch is not None:
                torch.set_num_threads(threads)
            # warm up each, then interleave
            kernel.run(None, feeds)
            if function is not None:
                function.run(None, feeds)
            if torch is not None and torch_call:
                torch_call(tensors)
            times = {"kernel": [], "function": [], "torch": []}
            for rep in range(repeats):
                times["kernel"].append(_timed(lambda: kernel.run(None, feeds)))
                if function is not None and rep < function_repeats:
                    times["function"].append(_timed(lambda: function.run(None, feeds)))
                if torch is not None and torch_call:
                    times["torch"].append(_timed(lambda: torch_call(tensors)))
            median = {k: statistics.median(v) if v else None for k, v in times.items()}
            results.append(dict(name=row.name, threads=threads, kernel_ms=median["kernel"],
                                function_ms=median["function"], torch_ms=median["torch"],
                                ratio=(median["kernel"] / median["torch"]) if median["torch"] else None,
                                gbps=(moved / (median["kernel"] * 1e-3) / 1e9) if row.bandwidth else None,
                                note=row.torch_note))
    return results


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} logical cores; onnxruntime {onnxruntime.__version__}"
            + (f", torch {__import__('torch').__version__}" if _has_torch() else ""))


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def format_table(results: List[dict], memcpy: float) -> str:
    def ms(v):
        return "—" if v is None else f"{v:.2f}"

    lines = [f"machine: {machine()}", f"memcpy: {memcpy:.1f} GB/s (read + write, one thread)", "",
             "| row | threads | kernel ms | function ms | torch ms | kernel/torch | kernel GB/s (of memcpy) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        gb = "" if r["gbps"] is None else f"{r['gbps']:.1f} ({r['gbps'] / memcpy:.0%})"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        note = f" [{r['note']}]" if r["note"] else ""
        lines.append(f"| {r['name']}{note} | {r['threads']} | {ms(r['kernel_ms'])} | {ms(r['function_ms'])} | "
                     f"{ms(r['torch_ms'])} | {ratio} | {gb} |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser, int_in) -> None:
    """The options of `resample-grad bench`; int_in(low, high) parses a bounded integer."""
    parser.add_argument("--threads", type=_thread_list(int_in), default=[1, 2], metavar="N[,N...]",
                        help="comma-separated thread counts, each 1 or more (default: 1,2)")
    parser.add_argument("--repeats", type=int_in(1, 1000), default=7, metavar="N",
                        help="timed runs per path and row, the median reported (default: 7)")
    parser.add_argument("--quick", action="store_true", help="batch 2 instead of 8 (a fast look, not the reported table)")
    parser.add_argument("--no-function", action="store_true", help="skip the onnxscript-function column (it is slow)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch column (for a machine without torch)")
    parser.add_argument("--rows", default="", metavar="TEXT",
                        help="only the rows whose name contains TEXT, e.g. 'bicubic' (default: every row)")


def _thread_list(int_in):
    one = int_in(1, 1024)

    def parse(text: str) -> List[int]:
        try:
            return [one(part) for part in text.split(",")]
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{error}{f' in {text!r}' if ',' in text else ''}") from None
    return parse


def execute(args, progress=None) -> int:
    """Measures and prints the table for parsed add_arguments() options."""
    memcpy = memcpy_bandwidth()
    results = run(args.threads, args.repeats, quick=args.quick, with_function=not args.no_function,
                  with_torch=not args.no_torch, progress=progress, only=args.rows)
    print(format_table(results, memcpy))
    return 0


def main(argv=None) -> int:
    """benchmarks/run.py: the same as `resample-grad bench`."""
    from resample_grad import cli
    return cli.main(["bench", *(sys.argv[1:] if argv is None else argv)])
