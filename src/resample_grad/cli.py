"""resample-grad: the command line.

    resample-grad demo                 build the example models, run them on the kernels and the
                                       functions, check both against the NumPy reference
    resample-grad run MODEL            run a model (random inputs unless --inputs FILE.npz)
    resample-grad check MODEL          kernels vs functions vs reference on the same inputs
    resample-grad inspect MODEL        the resample_grad nodes, attributes and inferred shapes
    resample-grad bench                the kernels' benchmark table

Bad input (a missing or corrupt model, a bad attribute, wrong inputs) prints one line and
exits with code 2; a disagreement between the paths exits with code 1.
"""
from __future__ import annotations

import argparse
import copy
import pathlib
import sys
import time
from typing import Dict, List, Optional

import numpy as np

EXIT_DISAGREE = 1
EXIT_BAD_INPUT = 2
# largest |path - reference| / max(|reference|, 1) accepted, per output dtype
TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9, np.dtype(np.float16): 2e-3}


class CliError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


def progress(text: str) -> None:
    print(f"  ... {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- models and inputs

def load_model(path: str):
    import onnx
    from google.protobuf.message import DecodeError

    file = pathlib.Path(path)
    if not file.is_file():
        raise CliError(f"cannot read model {path!r}: no such file")
    try:
        model = onnx.load(str(file))
    except (DecodeError, ValueError, RuntimeError) as error:
        raise CliError(f"{path!r} is not a readable ONNX model ({type(error).__name__}: {error})") from None
    if not model.graph.node:
        raise CliError(f"{path!r} is not a readable ONNX model (it has no graph nodes)")
    return model


def _graph_inputs(model):
    initialized = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialized]


def _grid_names(model) -> set:
    names = set()
    for node in model.graph.node:
        if node.op_type == "GridSampler2DGrad" and len(node.input) > 2:
            names.add(node.input[2])
        if node.op_type == "GridSample" and len(node.input) > 1:
            names.add(node.input[1])
    return names


def random_inputs(model, seed: int = 0, dynamic: int = 2) -> Dict[str, np.ndarray]:
    """Random inputs of the declared shapes (symbolic dims become `dynamic`); grids in [-1.1, 1.1]."""
    import ml_dtypes
    from onnx import helper

    rng = np.random.default_rng(seed)
    grids = _grid_names(model)
    feeds = {}
    for value in _graph_inputs(model):
        tensor = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dynamic for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        data = rng.uniform(-1.1, 1.1, shape) if value.name in grids else rng.standard_normal(shape)
        feeds[value.name] = data.astype(ml_dtypes.bfloat16 if dtype == ml_dtypes.bfloat16 else dtype)
    return feeds


def load_inputs(path: Optional[str], model) -> Dict[str, np.ndarray]:
    if path is None:
        return random_inputs(model)
    try:
        with np.load(path) as data:
            feeds = {k: data[k] for k in data.files}
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read inputs {path!r}: {error}") from None
    missing = [i.name for i in _graph_inputs(model) if i.name not in feeds]
    if missing:
        raise CliError(f"inputs file {path!r} lacks {', '.join(missing)}")
    return feeds


def run_on(model, feeds, path: str, threads: int = 0, timing: Optional[dict] = None) -> Dict[str, np.ndarray]:
    """Outputs by name on one path: 'kernels', 'functions' or 'reference'.

    timing, when given, gets "ms": the time of the run alone (not the session's creation)."""
    timing = {} if timing is None else timing
    import onnx
    import onnxruntime
    from resample_grad import opset, runtime

    names = [o.name for o in model.graph.output]
    if path == "reference":
        from onnx.reference import ReferenceEvaluator
        plain = copy.deepcopy(model)  # without our function bodies the evaluator uses the NumPy ops
        kept = [f for f in plain.functions if f.domain != opset.DOMAIN]
        del plain.functions[:]
        plain.functions.extend(kept)
        # onnx's reference GridSample knows only the opset-20 spellings of the same modes
        for node in plain.graph.node:
            if node.op_type == "GridSample" and node.domain in ("", "ai.onnx"):
                for attr in node.attribute:
                    if attr.name == "mode":
                        attr.s = {b"bilinear": b"linear", b"bicubic": b"cubic"}.get(attr.s, attr.s)
        if not any(o.domain == opset.DOMAIN for o in plain.opset_import):
            plain.opset_import.append(onnx.helper.make_opsetid(opset.DOMAIN, opset.VERSION))
        evaluator = ReferenceEvaluator(plain, new_ops=opset.reference_ops())
        outputs, timing["ms"] = _timed(lambda: evaluator.run(None, feeds))
        return dict(zip(names, outputs))
    attached = opset.attach(model)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    if path == "kernels":
        options.register_custom_ops_library(runtime.library_path())
    session = onnxruntime.InferenceSession(attached.SerializeToString(), options, providers=["CPUExecutionProvider"])
    runtime.run(session, feeds, names)  # warm-up: the first run allocates
    outputs, timing["ms"] = _timed(lambda: runtime.run(session, feeds, names))
    return dict(zip(names, outputs))


def disagreement(ours: np.ndarray, reference: np.ndarray) -> float:
    ours = np.asarray(ours, np.float64)
    reference = np.asarray(reference, np.float64)
    if ours.shape != reference.shape:
        return float("inf")
    scale = max(float(np.abs(reference).max(initial=0.0)), 1.0)
    return float(np.abs(ours - reference).max(initial=0.0)) / scale


def domain_ops(model) -> List[str]:
    from resample_grad import opset
    return sorted({n.op_type for n in model.graph.node if n.domain == opset.DOMAIN})


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - start) * 1e3


def compare_paths(model, feeds, threads: int = 0, paths=("kernels", "functions")) -> dict:
    """Runs the reference and each path; returns times, per-output errors and whether all agree."""
    timing = {}
    reference = run_on(model, feeds, "reference", timing=timing)
    report = {"reference_ms": timing["ms"], "paths": {}, "agree": True}
    for path in paths:
        outputs = run_on(model, feeds, path, threads, timing)
        ms = timing["ms"]
        errors = {name: disagreement(outputs[name], reference[name]) for name in reference}
        tolerance = {name: TOLERANCE.get(np.asarray(reference[name]).dtype, 1e-2) for name in reference}
        ok = all(errors[n] <= tolerance[n] for n in errors)
        report["paths"][path] = {"ms": ms, "errors": errors, "ok": ok}
        report["agree"] = report["agree"] and ok
    return report


# --------------------------------------------------------------------------- subcommands

def cmd_demo(args) -> int:
    from resample_grad import models

    workdir = pathlib.Path(args.workdir)
    progress(f"building the example models into {workdir}/")
    paths = models.build_all(workdir)
    converter = _ascend_converter()
    rows = []
    agree = True
    for index, path in enumerate(paths, 1):
        model = load_model(str(path))
        progress(f"[{index}/{len(paths)}] {path.stem}: reference, kernels, functions")
        report = compare_paths(model, random_inputs(model, seed=index), args.threads)
        agree = agree and report["agree"]
        conversion = "converter not available"
        if converter is not None:
            progress(f"[{index}/{len(paths)}] {path.stem}: Ascend conversion")
            conversion = converter(model, workdir / "ascend" / path.stem)
        rows.append((path.stem, ", ".join(domain_ops(model)), report, conversion))

    print(f"\nmodels in {workdir}/ (err: max |path - NumPy reference| / max(|reference|, 1); ms: one run, "
          f"after a warm-up run)\n")
    header = ["model", "ops", "kernels err", "functions err", "kernels ms", "functions ms", "reference ms", "Ascend"]
    table = [header]
    for name, ops, report, conversion in rows:
        k, f = report["paths"]["kernels"], report["paths"]["functions"]
        table.append([name, ops, f"{max(k['errors'].values()):.1e}" + ("" if k["ok"] else " FAIL"),
                      f"{max(f['errors'].values()):.1e}" + ("" if f["ok"] else " FAIL"),
                      f"{k['ms']:.1f}", f"{f['ms']:.1f}", f"{report['reference_ms']:.1f}", conversion])
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))
        if i == 0:
            print("  ".join("-" * width for width in widths))
    print("\nall paths agree with the reference" if agree else "\nDISAGREEMENT: see FAIL above")
    return 0 if agree else EXIT_DISAGREE


def _ascend_converter():
    """The Ascend conversion step of the demo, when the converter is installed."""
    try:
        from resample_grad.converters import ascend
    except ImportError:
        return None
    return ascend.demo_conversion


def cmd_run(args) -> int:
    model = load_model(args.model)
    feeds = load_inputs(args.inputs, model)
    progress(f"running {args.model} on the {args.path}")
    timing = {}
    outputs = run_on(model, feeds, args.path, args.threads, timing)
    ms = timing["ms"]
    out = args.output or str(pathlib.Path(args.model).with_suffix("")) + ".outputs.npz"
    np.savez(out, **{k: np.asarray(v, np.float32) if v.dtype.name == "bfloat16" else v for k, v in outputs.items()})
    for name, value in outputs.items():
        print(f"{name}: shape {list(value.shape)} dtype {value.dtype} "
              f"min {float(np.min(value, initial=0)):.4g} max {float(np.max(value, initial=0)):.4g}")
    print(f"{len(outputs)} output(s) written to {out} ({ms:.1f} ms on the {args.path})")
    return 0


def cmd_check(args) -> int:
    model = load_model(args.model)
    feeds = load_inputs(args.inputs, model)
    progress(f"checking {args.model}: reference, kernels, functions")
    report = compare_paths(model, feeds, args.threads)
    print(f"{'output':<24} {'kernels vs reference':>22} {'functions vs reference':>24}")
    for name in report["paths"]["kernels"]["errors"]:
        print(f"{name:<24} {report['paths']['kernels']['errors'][name]:>22.2e} "
              f"{report['paths']['functions']['errors'][name]:>24.2e}")
    print("agree" if report["agree"] else "DISAGREE")
    return 0 if report["agree"] else EXIT_DISAGREE


def cmd_inspect(args) -> int:
    import onnx
    from resample_grad import opset

    model = load_model(args.model)
    inferred = opset.validate_model(opset.attach(model))
    shapes = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = "[" + ", ".join(d.dim_param or str(d.dim_value) for d in dims) + "]"
    nodes = [n for n in model.graph.node if n.domain == opset.DOMAIN]
    print(f"{args.model}: {len(model.graph.node)} nodes, {len(nodes)} in the {opset.DOMAIN} domain")
    for node in nodes:
        attrs = ", ".join(f"{a.name}={_attr(a)}" for a in node.attribute)
        print(f"- {node.op_type} {node.name!r} ({attrs or 'defaults'})")
        for kind, names in (("in", node.input), ("out", node.output)):
            for name in names:
                if name:
                    print(f"    {kind:>3} {name}: {shapes.get(name, '?')}")
    return 0


def _attr(attribute):
    import onnx
    value = onnx.helper.get_attribute_value(attribute)
    return repr(value.decode()) if isinstance(value, bytes) else list(value) if isinstance(value, (list, tuple)) or hasattr(value, "__iter__") else value


def _bench(argv):
    from resample_grad import benchmark
    return benchmark.main(argv)


# --------------------------------------------------------------------------- entry point

def parser() -> argparse.ArgumentParser:
    main_parser = argparse.ArgumentParser(prog="resample-grad", description=__doc__.splitlines()[0])
    sub = main_parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="build the example models and check every path on them",
                          description="Builds the example models into a working folder, runs each on the native kernels "
                                      "and on the onnxscript functions, checks both against the NumPy reference, converts "
                                      "each for Ascend ATC, and prints a table. Exit code 1 if anything disagrees.")
    demo.add_argument("--workdir", default="resample-grad-demo", help="where the models go (default ./resample-grad-demo)")
    demo.add_argument("--threads", type=int, default=0, help="intra-op threads (default: onnxruntime's choice)")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run a model that uses the ops", description="Runs MODEL with onnxruntime and writes "
                         "its outputs to an .npz file; random inputs of the declared shapes unless --inputs is given.")
    run.add_argument("model")
    run.add_argument("--inputs", help=".npz file with one array per graph input")
    run.add_argument("--path", choices=["kernels", "functions", "reference"], default="kernels")
    run.add_argument("--threads", type=int, default=0)
    run.add_argument("-o", "--output", help="output .npz (default MODEL.outputs.npz)")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="kernels vs functions vs reference", description="Runs the kernels, the functions "
                           "and the NumPy reference on the same inputs and reports the largest disagreement per output.")
    check.add_argument("model")
    check.add_argument("--inputs", help=".npz file with one array per graph input")
    check.add_argument("--threads", type=int, default=0)
    check.set_defaults(func=cmd_check)

    inspect = sub.add_parser("inspect", help="list the resample_grad nodes", description="Lists the resample_grad nodes "
                             "of MODEL with their attributes and inferred shapes (validating them).")
    inspect.add_argument("model")
    inspect.set_defaults(func=cmd_inspect)

    sub.add_parser("bench", help="the kernels' benchmark table (resample-grad bench --help for its options)")

    _add_convert(sub)
    return main_parser


def _add_convert(sub) -> None:
    try:
        from resample_grad.converters import ascend
    except ImportError:
        return
    ascend.add_cli(sub)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # the benchmark parses its own options (argparse REMAINDER drops "--help")
        return EXIT_BAD_INPUT if _bench(argv[1:]) is None else 0
    args = parser().parse_args(argv)
    if not getattr(args, "command", None):
        parser().print_help()
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except CliError as error:
        print(f"resample-grad: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:  # noqa: BLE001 - bad models surface from onnx / onnxruntime in many types
        if _is_bad_input(error):
            message = " ".join(str(error).split())
            print(f"resample-grad: error: {message}", file=sys.stderr)
            return EXIT_BAD_INPUT
        raise


def _is_bad_input(error: Exception) -> bool:
    from resample_grad.opset import ResampleGradError
    import onnx
    if isinstance(error, (ResampleGradError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError, OSError)):
        return True
    return type(error).__module__.startswith("onnxruntime")


if __name__ == "__main__":
    sys.exit(main())
