"""The ONNX runtimes that the portable form is tested on, each as run(model, feeds, workdir) -> {output: array}.

RUNTIMES: name -> Runtime(module, run). A runtime whose Python package is not installed is skipped by the tests,
which say so (tests/portable/test_portable.py).
"""
from __future__ import annotations

import hashlib
import importlib.util
import pathlib
import subprocess
import sys
from typing import NamedTuple

import numpy as np
import onnx


def _outputs(model: onnx.ModelProto) -> list[str]:
    return [o.name for o in model.graph.output]


def _inputs(model: onnx.ModelProto) -> list[str]:
    initialized = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initialized]


def _saved(model: onnx.ModelProto, workdir: pathlib.Path) -> pathlib.Path:
    path = workdir / "model.onnx"
    onnx.save(model, path)
    return path


def run_openvino(model, feeds, workdir):
    import openvino

    core = openvino.Core()
    # f32 throughout: a CPU with bf16 or fp16 units would otherwise compute in them by default
    compiled = core.compile_model(core.read_model(_saved(model, workdir)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled([feeds[name] for name in _inputs(model)])
    return {name: np.asarray(results[compiled.output(k)]) for k, name in enumerate(_outputs(model))}


def run_tract(model, feeds, workdir):
    import tract

    runnable = tract.onnx().load(str(_saved(model, workdir))).into_model().into_runnable()
    results = runnable.run([feeds[name] for name in _inputs(model)])
    return {name: results[k].to_numpy() for k, name in enumerate(_outputs(model))}


def run_tinygrad(model, feeds, workdir):
    from tinygrad import Tensor
    from tinygrad.nn.onnx import OnnxRunner

    results = OnnxRunner(_saved(model, workdir))({name: Tensor(feeds[name]) for name in _inputs(model)})
    return {name: results[name].numpy() for name in _outputs(model)}


def run_iree(model, feeds, workdir):
    import iree.compiler
    import iree.runtime

    mlir = workdir / "model.mlir"
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(_saved(model, workdir)), "-o",
                    str(mlir)], check=True, capture_output=True, text=True)
    flatbuffer = iree.compiler.compile_file(str(mlir), target_backends=["llvm-cpu"],
                                            extra_args=["--iree-llvmcpu-target-cpu=host"])
    module = iree.runtime.load_vm_flatbuffer(flatbuffer, driver="local-task")
    results = module[model.graph.name](*[feeds[name] for name in _inputs(model)])
    results = results if isinstance(results, (list, tuple)) else [results]
    return {name: np.asarray(results[k].to_host()) for k, name in enumerate(_outputs(model))}


# onnx2tf pins onnx 1.19 and numpy 1.26: it lives in a venv of its own (.ci/run makes it), run in a subprocess
ONNX2TF_PYTHON = pathlib.Path(__file__).parents[2] / ".venv-onnx2tf" / "bin" / "python"
ONNX2TF_DRIVER = pathlib.Path(__file__).with_name("onnx2tf_driver.py")
ONNX2TF_TIMEOUT = 300  # seconds for a conversion and its two runs


_ONNX2TF_RESULTS: dict = {}  # model and feeds digest -> (workdir, error): one conversion serves TF and .tflite


def _onnx2tf_outputs(model, feeds, workdir) -> pathlib.Path:
    """The directory holding tf.npz and tflite.npz of the model's onnx2tf conversion, converted once per model and
    feeds (each conversion takes tens of seconds); raises RuntimeError when it cannot convert."""
    digest = hashlib.sha256(model.SerializeToString())
    for name in sorted(feeds):
        digest.update(name.encode() + np.ascontiguousarray(feeds[name]).tobytes())
    key = digest.hexdigest()
    if key not in _ONNX2TF_RESULTS:
        _ONNX2TF_RESULTS[key] = workdir, _convert_onnx2tf(model, feeds, workdir)
    done, error = _ONNX2TF_RESULTS[key]
    if error:
        raise RuntimeError(error)
    return done


def _convert_onnx2tf(model, feeds, workdir) -> str | None:
    """Converts and runs the model in onnx2tf's venv; the error, if any."""
    _saved(model, workdir)
    np.savez(workdir / "feeds.npz", **feeds)
    try:
        done = subprocess.run([str(ONNX2TF_PYTHON), str(ONNX2TF_DRIVER), str(workdir)], capture_output=True,
                              text=True, timeout=ONNX2TF_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"onnx2tf: no result in {ONNX2TF_TIMEOUT} s"
    if (workdir / "error.txt").exists():
        return f"onnx2tf cannot convert the model: {(workdir / 'error.txt').read_text()[-2000:]}"
    if done.returncode:
        return f"onnx2tf driver failed ({done.returncode}): {done.stderr[-2000:]}"
    return None


def _run_onnx2tf(kind: str):
    """run(model, feeds, workdir) of onnx2tf's conversion on TensorFlow (kind "tf") or on its .tflite ("tflite")."""

    def run(model, feeds, workdir):
        return dict(np.load(_onnx2tf_outputs(model, feeds, workdir) / f"{kind}.npz"))

    return run


class Runtime(NamedTuple):
    module: str | None  # the Python module that must be importable (None: onnx2tf's venv)
    package: str  # the PyPI package that brings it
    run: object


RUNTIMES = {
    "openvino": Runtime("openvino", "openvino", run_openvino),
    "tract": Runtime("tract", "tract", run_tract),
    "tinygrad": Runtime("tinygrad", "tinygrad", run_tinygrad),
    "iree": Runtime("iree.runtime", "iree-base-compiler and iree-base-runtime", run_iree),
    "onnx2tf-tf": Runtime(None, "onnx2tf==1.29.24 in .venv-onnx2tf (.ci/run)", _run_onnx2tf("tf")),
    "onnx2tf-tflite": Runtime(None, "onnx2tf==1.29.24 in .venv-onnx2tf (.ci/run)", _run_onnx2tf("tflite")),
}


def missing(name: str) -> str | None:
    """Why runtime `name` cannot run here (None: it can)."""
    runtime = RUNTIMES[name]
    if runtime.module is None:  # onnx2tf: its own venv
        return None if ONNX2TF_PYTHON.exists() else f"{name}: {ONNX2TF_PYTHON} missing (install {runtime.package})"
    try:
        found = importlib.util.find_spec(runtime.module) is not None
    except ModuleNotFoundError:
        found = False
    return None if found else f"{name}: not installed (pip install {runtime.package})"
