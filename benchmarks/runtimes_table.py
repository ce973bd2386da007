"""The README's table of ONNX runtimes: how many of the demo's models each runtime runs right in each form.

    python benchmarks/runtimes_table.py [--runtimes openvino,tract,tinygrad,iree] [--models a,b]

Each model (resample_grad.models.BUILDERS) in four forms: the function form (attach), onnx.inliner's inlining of it,
opset.inline(model), and opset.inline(model, forward=...) with the forward ops the runtime lacks replaced (the
FORWARD table of tests/portable/test_runtimes.py); a form passes when every output is within paths.TOLERANCE of the
NumPy reference of the original model. Each run is a child process (a runtime may abort), with a time limit. Prints
a table per runtime of what failed and how, then the counts.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "portable"
FORMS = ("attach", "onnx.inliner", "inline", "inline+forward")

CHILD = """
import sys, pathlib, numpy as np, onnx, onnx.inliner
sys.path.insert(0, sys.argv[1])
from resample_grad import models, opset, paths
from runtimes import RUNTIMES
from test_runtimes import FORWARD
name, runtime, form, workdir = sys.argv[2:6]
model = models.BUILDERS[name]()
feeds = models.example_inputs(name, model=model)
reference = paths.run_on(model, feeds, "reference")
built = {"attach": lambda: opset.attach(model),
         "onnx.inliner": lambda: onnx.inliner.inline_local_functions(opset.attach(model)),
         "inline": lambda: opset.inline(model),
         "inline+forward": lambda: opset.inline(model, forward=FORWARD[runtime])}[form]()
outputs = RUNTIMES[runtime].run(built, feeds, pathlib.Path(workdir))
worst = max(paths.disagreement(np.asarray(outputs[k]), v) / paths.TOLERANCE.get(np.asarray(outputs[k]).dtype, 1e-12)
            for k, v in reference.items())
print("RESULT", "pass" if worst <= 1 else f"wrong ({worst:.3g} x tolerance)")
"""


def run(name: str, runtime: str, form: str, timeout: float) -> str:
    with tempfile.TemporaryDirectory() as workdir:
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, str(TESTS), name, runtime, form, workdir],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"timeout ({timeout:g} s)"
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return line[len("RESULT "):]
    # the exception's own line (a runtime's backtrace may follow it), else the last line
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b.*:", line)]
    return "error: " + ((raised or lines or [f"exit {done.returncode}"])[-1])[:100]


def main() -> int:
    sys.path.insert(0, str(TESTS))
    from resample_grad import models

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default="openvino,tract,tinygrad,iree")
    parser.add_argument("--models", default=",".join(models.BUILDERS))
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    names = args.models.split(",")
    counts = {}
    for runtime in args.runtimes.split(","):
        print(f"\n{runtime}\n| model | " + " | ".join(FORMS) + " |\n|---|" + "---|" * len(FORMS), flush=True)
        for name in names:
            results = [run(name, runtime, form, args.timeout) for form in FORMS]
            for form, result in zip(FORMS, results, strict=True):
                counts.setdefault(runtime, dict.fromkeys(FORMS, 0))[form] += result == "pass"
            print(f"| {name} | " + " | ".join(results) + " |", flush=True)
    print("\n| runtime | " + " | ".join(FORMS) + " |\n|---|" + "---|" * len(FORMS))
    for runtime, row in counts.items():
        print(f"| {runtime} | " + " | ".join(f"{row[form]} / {len(names)}" for form in FORMS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
