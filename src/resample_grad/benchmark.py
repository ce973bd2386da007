"""Benchmark: native kernel vs the portable function (both in onnxruntime) vs PyTorch CPU.

For each row the paths are timed interleaved in one process at the same thread count
(onnxruntime intra_op_num_threads, torch.set_num_threads): torch's backward of the same
forward (torch.ops.aten.*_backward), the kernel, the function and, for the separable ops,
a memcpy of the bytes the kernel moves (grad_output read + grad_input written), split over
the same threads. The table gives median milliseconds, kernel/torch, function/torch and the
kernel's bandwidth as a share of that memcpy. Sizes in row names are the forward's (input ->
output); the backward reads a gradient of the output's size and writes one of the input's.
--isa runs each instruction set of the kernels in a fresh process (RESAMPLE_GRAD_ISA is read
when the library loads). The last row is a whole training step (step_rows): a U-Net exported with
converters.export_training_step against torch's eager step on the same module.

Both sides' thread pools wait passively: onnxruntime without spinning, torch's OpenMP with
OMP_WAIT_POLICY=PASSIVE unless set (read when torch loads, so it is set before torch is imported);
interleaved in one process, a pool spinning after its run takes a core from the other side's next run.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper

from resample_grad import opset, runtime

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ISAS = ("baseline", "avx2", "avx512")
ISA_VARIABLE = "RESAMPLE_GRAD_ISA"


@dataclasses.dataclass
class Row:
    name: str
    op_type: str
    inputs: dict[str, tuple]  # float32 inputs by name: shapes
    outputs: list[str]
    attrs: dict
    torch_call: Callable | None  # (torch tensors by input name) -> the backward's outputs, as the node's
    torch_note: str = ""
    bandwidth: bool = False  # a separable op: report its bandwidth against memcpy
    constants: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # initializers (sizes, scales)
    node_inputs: list[str] | None = None  # the node's inputs when not inputs then constants ("" = absent)
    # a whole model instead of one node: () -> (model, feeds, torch call); needs torch to build
    build: Callable[[], tuple[onnx.ModelProto, dict, Callable]] | None = None


def _x(*sizes) -> str:
    return "x".join(str(s) for s in sizes)


def rows(quick: bool = False, shrink: int = 1) -> list[Row]:
    """The benchmark rows. quick: a quarter of the batch; shrink: spatial sizes and channels divided by it
    (the tests run every row small against torch)."""
    def b(n):  # batch
        return max(n // 4, 1) if quick else n

    def s(size):  # spatial size or channels
        return max(size // shrink, 1)

    result = []
    n, c = b(8), s(64)
    for interp in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            result.append(Row(
                f"GridSampler2DGrad {interp}/{pad} {_x(n, c, s(64), s(64))}", "GridSampler2DGrad",
                {"grad_output": (n, c, s(64), s(64)), "input": (n, c, s(64), s(64)), "grid": (n, s(64), s(64), 2)},
                ["grad_input", "grad_grid"], dict(interpolation_mode=interp, padding_mode=pad, align_corners=0),
                _torch_grid("grid_sampler_2d_backward", interp, pad)))
    c3, d3 = s(16), s(32)
    result.append(Row(
        f"GridSampler3DGrad bilinear/zeros {_x(n, c3, d3, d3, d3)} (grid {_x(n, d3, d3, d3, 3)})", "GridSampler3DGrad",
        {"grad": (n, c3, d3, d3, d3), "x": (n, c3, d3, d3, d3), "grid": (n, d3, d3, d3, 3)}, ["dx", "dgrid"],
        dict(interpolation_mode="bilinear", padding_mode="zeros", align_corners=0),
        _torch_grid("grid_sampler_3d_backward", "bilinear", "zeros")))

    # nearest: torch's default mode, nearest-exact, TensorFlow's half-pixel nearest (the same function)
    nb, cb, l1 = b(16), s(64), s(1024)
    result.append(_upsample("UpsampleNearestExact1dGrad", (nb, cb, l1), (2 * l1,),
                            "_upsample_nearest_exact1d_backward"))
    for size in (128, 100):
        result.append(_upsample("UpsampleNearestExact2dGrad", (n, c, s(64), s(64)), (s(size), s(size)),
                                "_upsample_nearest_exact2d_backward"))
    result.append(_upsample("UpsampleNearest2dGrad", (n, s(256), s(64), s(64)), (s(128), s(128)),
                            "upsample_nearest2d_backward"))
    volume = (b(2), s(32), s(32), s(32), s(32))
    for op_type, aten in (("UpsampleNearest3dGrad", "upsample_nearest3d_backward"),
                          ("UpsampleNearestExact3dGrad", "_upsample_nearest_exact3d_backward")):
        result.append(_upsample(op_type, volume, (s(64),) * 3, aten, output="y"))
    big = (n, c, s(128), s(128))
    for out in (s(256), s(64)):
        result.append(_resize_v2("ResizeNearestNeighborV2Grad", "half_pixel", big, (out, out),
                                 "_upsample_nearest_exact2d_backward", dict(half_pixel_centers=1)))

    # linear
    result.append(_upsample("UpsampleBilinear2dGrad", (n, c, s(64), s(64)), (s(128), s(128)),
                            "upsample_bilinear2d_backward", align_corners=0))
    result.append(_upsample("UpsampleBilinear2dGrad", (nb, cb, l1), (2 * l1,), "upsample_linear1d_backward",
                            align_corners=0, label="1-D"))
    result.append(_upsample("UpsampleTrilinear3dBackward", volume, (s(64),) * 3, "upsample_trilinear3d_backward",
                            align_corners=0))
    for mode, (corners, half) in {"align_corners": (1, 0), "half_pixel": (0, 1), "tf_legacy": (0, 0)}.items():
        row = _resize_v2("ResizeBilinearV2Grad", mode, (n, c, s(64), s(64)), (s(128), s(128)),
                         "upsample_bilinear2d_backward", dict(align_corners=corners, half_pixel_centers=half),
                         align_corners=bool(corners))
        if mode == "tf_legacy":
            row.torch_note = "torch has no legacy mode: its half-pixel backward, same work"
        result.append(row)
    # the 1-D rows' signal: the function path's dense out x in matrix stays small (16384 samples took 22 GB)
    for out in (2 * l1, l1 // 2):
        result.append(_resize_v2("ResizeLinearGrad", "half_pixel", (nb, cb, l1), (out,), "upsample_linear1d_backward",
                                 dict(align_corners=0), align_corners=False))

    # cubic and antialias
    for out in (s(256), s(64)):
        result.append(_upsample("UpsampleBicubic2dGrad", big, (out, out), "upsample_bicubic2d_backward",
                                align_corners=0))
    for out in (s(256), s(64)):
        result.append(_resize_v2("ResizeBicubicV2Grad", "half_pixel", big, (out, out), "upsample_bicubic2d_backward",
                                 dict(align_corners=0), align_corners=False))
    result.append(_upsample("UpsampleBilinear2dAABackward", big, (s(64), s(64)), "_upsample_bilinear2d_aa_backward",
                            align_corners=0))
    result.append(_upsample("UpsampleBicubic2dAAGrad", big, (s(64), s(64)), "_upsample_bicubic2d_aa_backward",
                            align_corners=0))

    # ONNX Resize's gradient, a decoder's x2 upsampling, against torch's backward of the same F.interpolate
    decoder = (n, c, s(64), s(64))
    for label, attrs, aten in (
            ("nearest", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             ("upsample_nearest2d_backward", None)),
            ("linear", dict(mode="linear"), ("upsample_bilinear2d_backward", False)),
            ("cubic", dict(mode="cubic", cubic_coeff_a=-0.75), ("upsample_bicubic2d_backward", False)),
            ("antialias linear", dict(mode="linear", antialias=1, exclude_outside=1),
             ("_upsample_bilinear2d_aa_backward", False))):
        result.append(_resize_grad(label, attrs, decoder, (s(128), s(128)), *aten))
    return result


def step_rows(quick: bool = False) -> list[Row]:
    """Whole training steps: models/unet_step.py's U-Net exported with converters.export_training_step against
    torch's eager step (zero_grad, forward, loss, backward) on the same module. Exporting needs torch."""
    n = 2 if quick else 8
    return [Row(f"U-Net training step {n}x1x64x64, 250k parameters (exported)", "", {}, [], {}, None,
                "torch: eager zero_grad, forward, loss, backward", build=functools.partial(_unet_step, n))]


def all_rows(quick: bool = False) -> list[Row]:
    return rows(quick) + step_rows(quick)


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


# --------------------------------------------------------------------------- row builders

def _upsample(op_type, shape, out, aten, output="grad_input", label="", **attrs) -> Row:
    """An Upsample*Grad row: the forward resizes `shape` to `out`; aten(grad, out, in, [align_corners,] scales...)."""
    grad = (*shape[:2], *out)
    align = attrs.get("align_corners")
    name = f"{op_type}{' ' + label if label else ''} {_x(*shape)}->{_x(*out)}"
    return Row(name, op_type, {"grad_output": grad}, [output],
               dict(input_size=list(shape), output_size=list(out), **attrs),
               _torch_upsample(aten, "grad_output", list(shape), None if align is None else bool(align)),
               bandwidth=True)


def _resize_v2(op_type, mode, shape, out, aten, attrs, align_corners=None) -> Row:
    """A TensorFlow-style Resize*V2Grad row: grads and original_image (or an int32 size) inputs."""
    grad = (*shape[:2], *out)
    name = f"{op_type} {mode} {_x(*shape)}->{_x(*out)}"
    if op_type == "ResizeNearestNeighborV2Grad":
        return Row(name, op_type, {"grads": grad}, ["y"], attrs,
                   _torch_upsample(aten, "grads", list(shape), align_corners),
                   bandwidth=True, constants={"size": np.array(shape[2:], np.int32)})
    return Row(name, op_type, {"grads": grad, "original_image": shape}, ["y"], attrs,
               _torch_upsample(aten, "grads", list(shape), align_corners), bandwidth=True)


def _resize_grad(label, attrs, shape, out, aten, align_corners) -> Row:
    """ResizeGrad of Resize(X, scales) with a constant scales input."""
    scales = np.array([1, 1] + [o / i for o, i in zip(out, shape[2:], strict=True)], np.float32)
    return Row(f"ResizeGrad {label} {_x(*shape)}->{_x(*out)}", "ResizeGrad",
               {"dY": (*shape[:2], *out), "X": shape}, ["dX"], attrs,
               _torch_upsample(aten, "dY", list(shape), align_corners), bandwidth=True,
               constants={"scales": scales}, node_inputs=["dY", "X", "", "scales"])


def _torch_grid(aten, interp, pad):
    interpolation = ("bilinear", "nearest", "bicubic").index(interp)
    padding = ("zeros", "border", "reflection").index(pad)

    def call(t):
        import torch
        grad, image, grid = t.values()
        return getattr(torch.ops.aten, aten)(grad, image, grid, interpolation, padding, False, [True, True])
    return call


def _torch_upsample(aten, grad_name, input_size, align_corners):
    """aten's backward with sizes only (the scales None): the size ratio, as the rows' ops use."""
    def call(t):
        import torch
        grad = t[grad_name]
        out = list(grad.shape[2:])
        corners = [] if align_corners is None else [align_corners]
        return (getattr(torch.ops.aten, aten)(grad, out, input_size, *corners, *[None] * len(out)),)
    return call


# --------------------------------------------------------------------------- measuring

def model_of(row: Row) -> onnx.ModelProto:
    f = onnx.TensorProto.FLOAT
    inputs = row.node_inputs or list(row.inputs) + list(row.constants)
    graph = helper.make_graph(
        [opset.make_node(row.op_type, inputs, row.outputs, **row.attrs)], "bench",
        [helper.make_tensor_value_info(k, f, list(v)) for k, v in row.inputs.items()],
        [helper.make_tensor_value_info(o, f, None) for o in row.outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in row.constants.items()])
    return opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def feeds_of(row: Row, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {k: (rng.uniform(-1.1, 1.1, v) if k == "grid" else rng.standard_normal(v)).astype(np.float32)
            for k, v in row.inputs.items()}


def _session(model, threads, kernel: bool):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # idle onnxruntime threads spin-wait by default and take the cores from the path timed next (torch's
    # 2-thread times doubled on a 2-core machine); without it every path gets the machine to itself
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if kernel:
        options.register_custom_ops_library(runtime.library_path())
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


class Memcpy:
    """A copy of nbytes split over `threads` numpy copies (numpy releases the GIL while it copies): what a
    kernel moving the same bytes at that thread count can at best reach."""

    def __init__(self, nbytes: int, threads: int):
        count = max(nbytes // 4, 1)
        self.source = np.ones(count, np.float32)
        self.target = np.zeros_like(self.source)  # written once here: no page faults in the timed copies
        bounds = np.linspace(0, count, threads + 1).astype(int)
        self.chunks = [(self.target[a:b], self.source[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self.pool = concurrent.futures.ThreadPoolExecutor(threads) if threads > 1 else None

    def __call__(self) -> None:
        if self.pool is None:
            np.copyto(self.target, self.source)
        else:
            list(self.pool.map(lambda chunk: np.copyto(*chunk), self.chunks))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def run(threads_list=(1, 2), repeats: int = 7, function_repeats: int | None = None, quick: bool = False,
        with_function: bool = True, progress=None, only: str = "", with_torch: bool = True) -> list[dict]:
    torch = None
    if with_torch:
        import torch
    rng = np.random.default_rng(0)
    results = []
    for row in all_rows(quick):
        if only and only not in row.name:
            continue
        torch_call = row.torch_call
        if row.build is None:
            feeds, model = feeds_of(row, rng), model_of(row)
        elif torch is None:  # exporting the step needs torch
            continue
        else:
            if progress:
                progress(f"{row.name}: exporting")
            model, feeds, torch_call = row.build()
        for threads in threads_list:
            if progress:
                progress(f"{row.name} @ {threads} thread(s)")
            kernel = _session(model, threads, kernel=True)
            function = _session(model, threads, kernel=False) if with_function else None
            tensors = {k: torch.from_numpy(v) for k, v in feeds.items()} if torch is not None else None
            if torch is not None:
                torch.set_num_threads(threads)
            # warm up each, then interleave
            outputs = kernel.run(None, feeds)
            moved = (feeds[next(iter(row.inputs))].nbytes + outputs[0].nbytes) if row.bandwidth else 0
            copy = Memcpy(moved // 2, threads) if moved else None  # reads and writes moved / 2: the same traffic
            del outputs
            paths = {"kernel": functools.partial(kernel.run, None, feeds)}
            if function is not None:
                paths["function"] = functools.partial(function.run, None, feeds)
            if torch is not None and torch_call:
                paths["torch"] = functools.partial(torch_call, tensors)
            if copy is not None:
                paths["memcpy"] = copy
            for fn in paths.values():
                fn()
            times = {k: [] for k in paths}
            # every path as often as the others unless told (the functions were once too slow for that)
            function_runs = repeats if function_repeats is None else function_repeats
            for rep in range(repeats):
                for path, fn in paths.items():
                    if path != "function" or rep < function_runs:
                        times[path].append(_timed(fn))
            if copy is not None:
                copy.close()
            median = {k: statistics.median(v) for k, v in times.items()}
            torch_ms = median.get("torch")
            results.append(dict(
                name=row.name, threads=threads, torch_ms=torch_ms, kernel_ms=median["kernel"],
                function_ms=median.get("function"), note=row.torch_note,
                gbps=moved / (median["kernel"] * 1e-3) / 1e9 if moved else None,
                memcpy_gbps=moved / (median["memcpy"] * 1e-3) / 1e9 if moved else None))
    return results


# --------------------------------------------------------------------------- the instruction set

def library_isa() -> str:
    """The instruction set the kernels run with, as the library reports it (RESAMPLE_GRAD_ISA or cpuid)."""
    return runtime.isa()


# the child process of --isa: load the library (registering it in a session loads it) and print what it reports
_PROBE = """
from resample_grad import benchmark
row = next(r for r in benchmark.rows(quick=True, shrink=64) if r.op_type == "UpsampleNearest2dGrad")
benchmark._session(benchmark.model_of(row), 1, kernel=True)
print(benchmark.library_isa())
"""


def probe_isa(isa: str) -> str:
    """What the library reports when loaded with RESAMPLE_GRAD_ISA=isa in a fresh process; raises RuntimeError
    with the process's last error line if it refuses."""
    result = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=600,
                            env={**os.environ, ISA_VARIABLE: isa})
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit code {result.returncode}")
    return result.stdout.strip().splitlines()[-1]


def _child_options(args) -> dict:
    return dict(threads_list=list(args.threads), repeats=args.repeats, quick=args.quick, only=args.rows,
                with_function=not args.no_function, with_torch=not args.no_torch)


# a --isa child process: run() with the options (JSON in argv[1]), the results and the library's ISA as JSON on stdout
_CHILD = """
import json, sys
from resample_grad import benchmark
from resample_grad.cli import progress
results = benchmark.run(progress=progress, **json.loads(sys.argv[1]))
print(json.dumps({"isa": benchmark.library_isa(), "results": results}))
"""


def run_isas(args, progress=None) -> tuple:
    """(results with an "isa" key, {isa: what the library reported}): each ISA in a fresh process."""
    results, reported = [], {}
    for isa in args.isa:
        if progress:
            progress(f"instruction set {isa}: a fresh process")
        child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(_child_options(args))], stdout=subprocess.PIPE,
                               stderr=None if sys.stderr.isatty() else subprocess.PIPE, text=True,
                               env={**os.environ, ISA_VARIABLE: isa})  # progress lines reach a terminal
        if child.returncode != 0:
            lines = [line for line in (child.stderr or "").splitlines() if line.strip()]
            raise RuntimeError(f"--isa {isa}: the benchmark process failed: {lines[-1] if lines else child.returncode}")
        data = json.loads(child.stdout.strip().splitlines()[-1])
        reported[isa] = data["isa"]
        results += [dict(r, isa=isa) for r in data["results"]]
    order = {name: i for i, name in enumerate(dict.fromkeys(r["name"] for r in results))}
    results.sort(key=lambda r: (order[r["name"]], r["threads"], args.isa.index(r["isa"])))
    return results, reported


# --------------------------------------------------------------------------- the table

def machine() -> str:
    return (f"{runtime.machine()}; onnxruntime {onnxruntime.__version__}"
            + (f", torch {__import__('torch').__version__}" if _has_torch() else ""))


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def _load() -> float | None:
    """The 1-minute load average (None where the system has none): other work on the machine distorts timings."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def format_table(results: list[dict], isa_lines: list[str], load=(None, None)) -> str:
    def ms(v):
        return "—" if v is None else f"{v:.2f}"

    def ratio(a, b):
        return "—" if a is None or not b else f"{a / b:.2f}"

    with_isa = any("isa" in r for r in results)
    machine_line = f"machine: {machine()}"
    if None not in load:
        machine_line += f"; load average {load[0]:.1f} at the start, {load[1]:.1f} at the end (1 minute)"
    lines = [machine_line, *isa_lines,
             "median ms of interleaved runs, onnxruntime without spin-waiting threads "
             "(session.intra_op.allow_spinning=0)",
             "memcpy: the bytes the kernel moves (grad_output read + grad_input written), copied with numpy at the "
             "row's thread count in the same interleaved run", "",
             "| row | threads |" + (" isa |" if with_isa else "")
             + " torch ms | kernel ms | kernel/torch | function ms | function/torch | kernel GB/s (of memcpy) |",
             "|---|---:|" + ("---|" if with_isa else "") + "---:|---:|---:|---:|---:|---:|"]
    for r in results:
        gb = "" if r["gbps"] is None else f"{r['gbps']:.1f} ({r['gbps'] / r['memcpy_gbps']:.0%})"
        note = f" [{r['note']}]" if r["note"] else ""
        lines.append(f"| {r['name']}{note} | {r['threads']} |" + (f" {r['isa']} |" if with_isa else "")
                     + f" {ms(r['torch_ms'])} | {ms(r['kernel_ms'])} | {ratio(r['kernel_ms'], r['torch_ms'])} |"
                     f" {ms(r['function_ms'])} | {ratio(r['function_ms'], r['torch_ms'])} | {gb} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the command line

def add_arguments(parser: argparse.ArgumentParser, int_in) -> None:
    """The options of `resample-grad bench`; int_in(low, high) parses a bounded integer."""
    parser.add_argument("--threads", type=_thread_list(int_in), default=[1, 2], metavar="N[,N...]",
                        help="comma-separated thread counts, each 1 or more (default: 1,2)")
    parser.add_argument("--repeats", type=int_in(1, 1000), default=7, metavar="N",
                        help="timed runs per path and row, the median reported (default: 7)")
    parser.add_argument("--quick", action="store_true",
                        help="a quarter of the batch (a fast look, not the reported table)")
    parser.add_argument("--no-function", action="store_true", help="skip the function column (it is slow)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch column (for a machine without torch)")
    parser.add_argument("--rows", default="", metavar="TEXT",
                        help="only the rows whose name contains TEXT, e.g. 'bicubic' (default: every row)")
    parser.add_argument("--isa", type=_isa_list, default=None, metavar="ISA[,ISA...]",
                        help=f"time the kernels with each instruction set ({', '.join(ISAS)}), each in a fresh "
                             f"process with {ISA_VARIABLE} set, since the library reads it when it loads (default: "
                             "this process, the library's own choice)")


def _thread_list(int_in):
    one = int_in(1, 1024)

    def parse(text: str) -> list[int]:
        try:
            return [one(part) for part in text.split(",")]
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{error}{f' in {text!r}' if ',' in text else ''}") from None
    return parse


def _isa_list(text: str) -> list[str]:
    names = [part.strip().lower() for part in text.split(",")]
    for name in names:
        if name not in ISAS:
            raise argparse.ArgumentTypeError(f"expected instruction sets from {', '.join(ISAS)}, got {name!r}"
                                             + (f" in {text!r}" if "," in text else ""))
    return list(dict.fromkeys(names))


def execute(args, progress=None) -> int:
    """Measures and prints the table for parsed add_arguments() options."""
    start = _load()
    if args.isa:
        reported = {}
        for isa in args.isa:  # every instruction set checked before anything is measured
            try:
                reported[isa] = probe_isa(isa)
            except RuntimeError as error:
                from resample_grad.cli import CliError
                raise CliError(f"bench: --isa {isa}: loading the library with {ISA_VARIABLE}={isa} "
                               f"failed: {error}") from None
        results, reported = run_isas(args, progress)
        isa_line = "isa: " + "; ".join(f"{isa} (the library reports {reported[isa]})" for isa in args.isa)
        if all(v == "default" for v in reported.values()):
            isa_line += f"; the library does not report an instruction set, so {ISA_VARIABLE} may have had no effect"
        isa_lines = [isa_line]
        print(format_table(results, isa_lines, (start, _load())))
        return 0
    results = run(progress=progress, **_child_options(args))
    print(format_table(results, [f"isa: {library_isa()}"], (start, _load())))
    return 0


def main(argv=None) -> int:
    """benchmarks/run.py: the same as `resample-grad bench`."""
    from resample_grad import cli
    return cli.main(["bench", *(sys.argv[1:] if argv is None else argv)])
