"""resample-grad: the command line.

    resample-grad demo                 build the example models, run them on the kernels and the
                                       functions, check both against the NumPy reference
    resample-grad run MODEL            run a model (random inputs unless --inputs FILE.npz)
    resample-grad check MODEL          kernels vs functions vs reference on the same inputs
    resample-grad inspect MODEL        the resample_grad nodes, attributes and inferred shapes
    resample-grad bench                the kernels' benchmark table
    resample-grad convert MODEL        to Ascend ATC (--target ascend) or back (--from ascend)

Bad input (a missing or corrupt model, a bad attribute, wrong inputs, a bad option) prints one
line `resample-grad: error: ...` on stderr and exits with code 2; a disagreement between the
paths exits with code 1. Progress lines go to stderr only when it is a terminal, so a script
that captures stderr sees nothing but that one line.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

from resample_grad.constants import DOMAIN
from resample_grad.paths import (
    RANDOM_DIM,
    CliError,
    compare_paths,
    domain_ops,
    load_inputs,
    load_model,
    run_on,
    shape_text,
)

EXIT_DISAGREE = 1
EXIT_BAD_INPUT = 2
MAX_THREADS = 1024  # beyond this onnxruntime would try to start that many threads


def progress(text: str) -> None:
    if sys.stderr.isatty():  # a pipe or a log file gets only results and the one error line
        print(f"  ... {text}", file=sys.stderr, flush=True)


def _version() -> str:
    import resample_grad
    return resample_grad.__version__


# --------------------------------------------------------------------------- files written

def output_file(path: str, suffix: str, what: str) -> pathlib.Path:
    """An output file path checked before any work: the right suffix (numpy.savez would add .npz
    to any other name), an existing parent folder, not a folder itself."""
    file = pathlib.Path(path)
    if file.suffix != suffix:
        raise CliError(f"{what} {path!r} must be a file name ending in {suffix}")
    if file.is_dir():
        raise CliError(f"{what} {path!r} is a directory; expected a file name ending in {suffix}")
    if not file.parent.is_dir():
        raise CliError(f"{what} {path!r}: the folder {str(file.parent)!r} does not exist")
    return file


def write_atomically(file: pathlib.Path, write) -> None:
    """write(binary file object), into a temporary file renamed over `file` at the end: an error
    half-way leaves nothing behind."""
    handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".part")
    umask = os.umask(0)
    os.umask(umask)
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; an output file gets the usual mode
        os.replace(temporary, file)
    except BaseException:
        os.unlink(temporary)
        raise


def output_folder(path: str, what: str) -> pathlib.Path:
    folder = pathlib.Path(path)
    if folder.exists() and not folder.is_dir():
        raise CliError(f"{what} {path!r} is a file; expected a folder (created if missing)")
    return folder


# --------------------------------------------------------------------------- subcommands

def cmd_demo(args) -> int:
    from resample_grad import models
    from resample_grad.opset import ResampleGradError

    if args.out is None:
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="resample-grad-demo-"))
    else:
        workdir = output_folder(args.out, "--out")
    workdir = workdir.resolve()
    progress(f"building the example models into {workdir}/")
    paths = models.build_all(workdir)
    converter = _ascend_converter()
    rows, refused = [], []
    agree = True
    for index, path in enumerate(paths, 1):
        model = load_model(str(path))
        progress(f"[{index}/{len(paths)}] {path.stem}: reference, kernels, functions")
        report = compare_paths(model, models.example_inputs(path.stem, seed=index, model=model), args.threads)
        agree = agree and report["agree"]
        conversion = "converter not available"
        if converter is not None:
            progress(f"[{index}/{len(paths)}] {path.stem}: Ascend conversion")
            try:
                conversion = f"{converter(model, workdir / 'ascend' / path.stem)} -> ascend/{path.stem}/"
            except ResampleGradError as error:  # a whole-model refusal is a result to show, not a demo failure
                refused.append(f"[{len(refused) + 1}] {path.stem}: {error}")
                conversion = f"not converted [{len(refused)}]"
        rows.append((path.stem, ", ".join(domain_ops(model)), report, conversion, len(model.graph.node) > 1))

    print(f"\nmodels in {workdir}/, Ascend files in {workdir}/ascend/ (err: max |path - NumPy reference| / "
          f"max(|reference|, 1); ms: one run, after a warm-up run)\n")
    header = ["model", "ops", "kernels err", "functions err", "kernels ms", "functions ms", "reference ms", "Ascend"]
    table = [header]
    for name, ops, report, conversion, _ in rows:
        k, f = report["paths"]["kernels"], report["paths"]["functions"]
        table.append([name, ops, f"{max(k['errors'].values()):.1e}" + ("" if k["ok"] else " FAIL"),
                      f"{max(f['errors'].values()):.1e}" + ("" if f["ok"] else " FAIL"),
                      f"{k['ms']:.1f}", f"{f['ms']:.1f}", f"{report['reference_ms']:.1f}", conversion])
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    steps = next((i for i, row in enumerate(rows, 1) if row[4]), None)  # the first model of several nodes
    for i, row in enumerate(table):
        if i == steps:
            print()  # one node per model above, training steps below
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))
    for line in refused:
        print(f"\n{line}")
    agree = _training_demo(workdir, args.threads) and agree
    print("\nall paths agree with the reference" if agree else "\nDISAGREEMENT: see FAIL above")
    return 0 if agree else EXIT_DISAGREE


TRAINING_STEPS = 20
FOLLOW_TOLERANCE = 1e-3  # largest |onnxruntime's loss - torch's| / torch's first loss the demo accepts


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))


def _training_demo(workdir: pathlib.Path, threads: int) -> bool:
    """The stored step models of models/optimizer_steps.py trained on plain onnxruntime (training.Trainer) beside
    torch.optim's loss curve (live where torch is installed, else the one recorded in the model), their curves in
    workdir/training/losses.csv; then, where onnxruntime-training is installed, its API on models/training.py's
    models. False unless each loss follows torch's and halves."""
    import onnx

    from resample_grad import runtime, training
    from resample_grad.models import optimizer_steps as steps
    try:
        import torch  # noqa: F401
        source = "torch.optim, live"
    except ImportError:
        source = "torch.optim, recorded with the model"
    rows, ok, curves = [["model", "optimizer", "steps", "first loss", "last loss", "torch last", "max |ort - torch|",
                         "ms/step"]], True, {}
    for name in steps.TASKS:
        progress(f"training {name} on onnxruntime ({TRAINING_STEPS} steps)")
        model = onnx.load(str(steps.path(name)))
        trainer, (x, target) = training.Trainer(model, threads=threads), steps.batch(name)
        start = time.perf_counter()
        ours = [trainer.step(x, target) for _ in range(TRAINING_STEPS)]
        ms = (time.perf_counter() - start) * 1e3 / TRAINING_STEPS
        want = steps.torch_losses(name, TRAINING_STEPS) if source.endswith("live") else steps.recorded_losses(model)
        follows = max(abs(a - b) for a, b in zip(ours, want, strict=True)) / want[0]
        halves = ours[-1] <= 0.5 * ours[0]
        ok = ok and follows <= FOLLOW_TOLERANCE and halves
        curves[name] = (ours, want)
        optimizer = next(p.value for p in model.metadata_props if p.key == steps.OPTIMIZER)
        rows.append([name, optimizer, str(TRAINING_STEPS), f"{ours[0]:.4f}", f"{ours[-1]:.4f}"
                     + ("" if halves else " FAIL (not halved)"), f"{want[-1]:.4f}",
                     f"{follows:.1e}" + ("" if follows <= FOLLOW_TOLERANCE else " FAIL"), f"{ms:.1f}"])
    out = workdir / "training"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "losses.csv", "w") as file:
        file.write("step," + ",".join(f"{n} onnxruntime,{n} torch" for n in curves) + "\n")
        for k in range(TRAINING_STEPS):
            file.write(f"{k + 1}," + ",".join(f"{a[k]:.6g},{b[k]:.6g}" for a, b in curves.values()) + "\n")
    _plot_losses(curves, out / "losses.svg")
    version = runtime.require_onnxruntime().__version__
    print(f"\ntraining on plain onnxruntime {version} (resample_grad.training.Trainer, the optimizer inside each "
          f"stored step; torch's curve: {source}; max |ort - torch|: over the steps, / torch's first loss, at most "
          f"{FOLLOW_TOLERANCE:g}; both curves in {out}/losses.csv, plotted in losses.svg)\n")
    _table(rows)
    for name, (ours, want) in curves.items():
        marks = sorted({0, *range(4, TRAINING_STEPS, 5), TRAINING_STEPS - 1})
        print(f"  {name:20} onnxruntime " + " ".join(f"{ours[k]:.4f}" for k in marks)
              + f"  (steps {', '.join(str(k + 1) for k in marks)})")
        print(f"  {'':20} torch       " + " ".join(f"{want[k]:.4f}" for k in marks))
    if training.available():
        ok = _onnxruntime_training_demo(workdir, threads) and ok
    return ok


def _plot_losses(curves: dict, path: pathlib.Path) -> None:
    """An SVG file, one panel per model: the loss per step on a log scale, onnxruntime's solid, torch's dashed."""
    width, height, pad = 300, 200, 30
    parts = []
    for index, (name, (ours, want)) in enumerate(curves.items()):
        logs = np.log10(np.maximum([ours, want], 1e-30))
        low, span = float(logs.min()), max(float(logs.max() - logs.min()), 1e-12)
        xs = index * width + pad + np.arange(logs.shape[1]) * (width - 2 * pad) / max(logs.shape[1] - 1, 1)
        ys = pad + (1 - (logs - low) / span) * (height - 2 * pad)
        parts.append(f'<text x="{index * width + pad}" y="18" font-size="13">{name}: loss per step (log)</text>')
        for row, style in zip(ys, ('stroke="#1f77b4"', 'stroke="#d62728" stroke-dasharray="5,4"'), strict=True):
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, row, strict=True))
            parts.append(f'<polyline fill="none" stroke-width="2" {style} points="{points}"/>')
    parts.append(f'<text x="{pad}" y="{height - 6}" font-size="12">solid: onnxruntime (Trainer); dashed: torch.optim'
                 '</text>')
    path.write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * len(curves)}" height="{height}">'
                    + "".join(parts) + "</svg>\n")


def _onnxruntime_training_demo(workdir: pathlib.Path, threads: int) -> bool:
    """A U-Net and a spatial transformer (models/training.py) trained for TRAINING_STEPS steps with
    onnxruntime-training's API (where it is installed); False when a loss does not halve."""
    import onnxruntime

    from resample_grad.models import training as examples
    onnxruntime.set_default_logger_severity(3)
    rows, ok = [], True
    for name, (model, inputs, target, learning_rate) in examples.tasks().items():
        progress(f"training {name} with onnxruntime-training")
        result = examples.train(model, inputs, target, learning_rate, TRAINING_STEPS, workdir / "training" / name,
                                threads)
        losses = result["losses"]
        down = losses[-1] < 0.5 * losses[0]
        ok = ok and down
        rows.append([name, ", ".join(sorted({n.op_type for n in model.graph.node})), str(TRAINING_STEPS),
                     f"{losses[0]:.4f}", f"{losses[-1]:.4f}" + ("" if down else " FAIL"), f"{result['ms']:.1f}"])
    print(f"\non-device training with onnxruntime-training {onnxruntime.__version__} on the CPU "
          "(SGD on one batch, MSE; "
          f"artifacts in {workdir}/training/; ms: one step, forward + backward + SGD)\n")
    _table([["model", "forward ops", "steps", "first loss", "last loss", "ms/step"]] + rows)
    return ok


def _ascend_converter():
    """The Ascend conversion step of the demo, when the converter is installed."""
    try:
        from resample_grad.converters import ascend_cli as ascend
    except ImportError:
        return None
    return ascend.demo_conversion


def _summary(value: np.ndarray) -> str:
    if value.size == 0:
        return "empty"
    data = np.asarray(value, np.float64)
    return f"min {float(data.min()):.4g} max {float(data.max()):.4g}"


def cmd_run(args) -> int:
    model = load_model(args.model)
    out = output_file(args.output or str(pathlib.Path(args.model).with_suffix("")) + ".outputs.npz", ".npz",
                      "output" if args.output else "default output (next to the model; -o to choose)")
    feeds = load_inputs(args.inputs, model)
    progress(f"running {args.model} on the {args.path}")
    timing = {}
    outputs = run_on(model, feeds, args.path, args.threads, timing, random=args.inputs is None)
    ms = timing["ms"]
    arrays = {k: np.asarray(v, np.float32) if v.dtype.name == "bfloat16" else v for k, v in outputs.items()}
    write_atomically(out, lambda handle: np.savez(handle, **arrays))
    for name, value in outputs.items():
        print(f"{name}: shape {list(value.shape)} dtype {value.dtype} {_summary(value)}")
    print(f"{len(outputs)} output(s) written to {out} ({ms:.1f} ms on the {args.path})")
    return 0


def cmd_check(args) -> int:
    model = load_model(args.model)
    feeds = load_inputs(args.inputs, model)
    progress(f"checking {args.model}: reference, kernels, functions")
    report = compare_paths(model, feeds, args.threads, random=args.inputs is None)
    print(f"{'output':<24} {'kernels vs reference':>22} {'functions vs reference':>24}")
    for name in report["paths"]["kernels"]["errors"]:
        print(f"{name:<24} {report['paths']['kernels']['errors'][name]:>22.2e} "
              f"{report['paths']['functions']['errors'][name]:>24.2e}")
    print("agree" if report["agree"] else "DISAGREE")
    return 0 if report["agree"] else EXIT_DISAGREE


def cmd_inspect(args) -> int:
    from resample_grad import opset

    model = load_model(args.model)
    inferred = opset.validate_model(opset.attach(model))
    shapes = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        shapes[value.name] = shape_text(value.type.tensor_type.shape.dim)
    nodes = [n for n in model.graph.node if n.domain == DOMAIN]
    print(f"{args.model}: {len(model.graph.node)} nodes, {len(nodes)} in the {DOMAIN} domain")
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
    if isinstance(value, bytes):
        return repr(value.decode())
    return list(value) if isinstance(value, (list, tuple)) or hasattr(value, "__iter__") else value


def cmd_bench(args) -> int:
    from resample_grad import benchmark

    names = [row.name for row in benchmark.all_rows(args.quick)]
    if args.rows and not any(args.rows in name for name in names):
        raise CliError(f"--rows {args.rows!r} matches no benchmark row; expected text from a row name: "
                       + "; ".join(names))
    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            raise CliError("bench: PyTorch is not installed and the torch column needs it; expected "
                           "`pip install torch` (or pass --no-torch for the kernel and function columns)") from None
    return benchmark.execute(args, progress)


# --------------------------------------------------------------------------- options

def _int_in(low: int, high: int, meaning: str = ""):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low}{meaning} to {high}, got {text!r}")
        return value
    return parse


THREADS = _int_in(0, MAX_THREADS, " (onnxruntime's choice)")
THREADS_HELP = "intra-op threads (default: 0, onnxruntime's choice)"


class Parser(argparse.ArgumentParser):
    """argparse with the command line's error format: one line, no usage block, exit code 2."""

    def error(self, message):
        command = self.prog[len("resample-grad"):].strip()
        raise CliError(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)")


def _model_and_inputs(command: argparse.ArgumentParser) -> None:
    """The arguments of the commands that run a model: the model, its inputs, the threads."""
    command.add_argument("model", help="an .onnx model")
    command.add_argument("--inputs", metavar="FILE.npz", help="one array per graph input, of the declared dtype and "
                         f"shape (default: random inputs; a symbolic dimension gets the size {RANDOM_DIM})")
    command.add_argument("--threads", type=THREADS, default=0, metavar="N", help=THREADS_HELP)


def parser() -> argparse.ArgumentParser:
    try:
        from resample_grad import benchmark
    except ImportError:  # no onnxruntime (the runtime extra): `bench` says how to install it when run
        benchmark = None

    main_parser = Parser(prog="resample-grad", description="Backward passes of spatial resampling as ONNX ops: "
                         "run, check, inspect, benchmark and convert models that use them.",
                         epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    main_parser.add_argument("--version", action="version", version=_version(),
                             help="print the version (%(version)s) and exit")
    sub = main_parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    demo = sub.add_parser("demo", help="build the example models and check every path on them",
                          description="Builds the example models into a folder, runs each on the native kernels "
                                      "and on the functions, checks both against the NumPy reference, "
                                      "converts each for Ascend ATC (into FOLDER/ascend/), and prints a table. Exit "
                                      "code 1 if anything disagrees.")
    demo.add_argument("--out", metavar="FOLDER", help="where the models go, created if missing (default: a new folder "
                      "resample-grad-demo-* in the system's temporary directory; the table names it)")
    demo.add_argument("--threads", type=THREADS, default=0, metavar="N", help=THREADS_HELP)
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run a model that uses the ops",
                         description="Runs MODEL with onnxruntime and writes its outputs to an .npz file; random "
                                     "inputs of the declared shapes unless --inputs is given.")
    _model_and_inputs(run)
    run.add_argument("--path", choices=["kernels", "functions", "reference"], default="kernels",
                     help="the native kernels, the portable functions or the NumPy reference (default: kernels)")
    run.add_argument("-o", "--output", metavar="OUT.npz", help="where the outputs go (default: MODEL.outputs.npz "
                     "next to the model, MODEL without its .onnx)")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="kernels vs functions vs reference",
                           description="Runs the kernels, the functions and the NumPy reference on the same inputs "
                                       "and reports the largest disagreement per output (exit code 1 if any exceeds "
                                       "the tolerance).")
    _model_and_inputs(check)
    check.set_defaults(func=cmd_check)

    inspect = sub.add_parser("inspect", help="list the resample_grad nodes",
                             description="Lists the resample_grad nodes of MODEL with their attributes and inferred "
                                         "shapes (validating them).")
    inspect.add_argument("model", help="an .onnx model")
    inspect.set_defaults(func=cmd_inspect)

    bench = sub.add_parser("bench", help="the kernels' benchmark table (needs torch for its torch column)",
                           description=" ".join((benchmark.__doc__ if benchmark else "Needs onnxruntime.").split()))
    if benchmark is not None:
        benchmark.add_arguments(bench, _int_in)
    bench.set_defaults(func=cmd_bench if benchmark is not None else _needs_onnxruntime)

    _add_convert(sub)
    return main_parser


def _needs_onnxruntime(args) -> int:
    from resample_grad import runtime
    runtime.require_onnxruntime()  # raises OnnxruntimeMissing: one line saying how to install it
    return 0


def _add_convert(sub) -> None:
    try:
        from resample_grad.converters import ascend_cli as ascend
    except ImportError:
        return
    ascend.add_cli(sub)


# --------------------------------------------------------------------------- entry point

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser().parse_args(argv)
        if not getattr(args, "command", None):
            raise CliError("a command is required: demo, run, check, inspect, bench or convert "
                           "(see resample-grad --help)")
        return args.func(args)
    except CliError as error:
        return _fail(str(error))
    except Exception as error:  # noqa: BLE001 - bad models surface from onnx / onnxruntime in many types
        if _is_bad_input(error):
            return _fail(str(error))
        raise


def _fail(message: str) -> int:
    print(f"resample-grad: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _is_bad_input(error: Exception) -> bool:
    from resample_grad.runtime import OnnxruntimeMissing
    if isinstance(error, OnnxruntimeMissing):  # a missing dependency: one line saying how to install it
        return True
    import onnx

    from resample_grad.opset import ResampleGradError
    bad_input = (ResampleGradError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError, OSError)
    if isinstance(error, bad_input):
        return True
    return type(error).__module__.startswith("onnxruntime")


if __name__ == "__main__":
    sys.exit(main())
