"""Running a model on the three paths (the native kernels, the portable functions, the NumPy reference) and
comparing them: what `resample-grad run`, `check` and `demo` do, as a library.

    load_model(path)                   an ONNX model file, checked
    load_inputs(path, model)           an .npz of inputs checked against the model, or random_inputs(model)
    random_inputs(model, seed)         random inputs of the declared shapes; grids in [-1.1, 1.1]
    run_on(model, feeds, path)         the outputs on 'kernels', 'functions' or 'reference'
    compare_paths(model, feeds)        each path against the reference: errors, times, whether all agree
    disagreement(ours, reference)      max |ours - reference| / max(|reference|, 1)

Bad input (a missing or corrupt model, inputs that do not fit it) raises CliError, one line saying what is wrong
and what was expected; the command line prints it and exits with code 2.
"""
from __future__ import annotations

import copy
import pathlib
import re
import time

import numpy as np

from resample_grad.constants import DEFAULT_DOMAINS, DOMAIN, GE_DOMAIN, VERSION

# largest |path - reference| / max(|reference|, 1) accepted, per output dtype
TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9, np.dtype(np.float16): 2e-3}
RANDOM_DIM = 2  # the size random inputs give a symbolic dimension


class CliError(Exception):
    """Bad input from the user (a model, an inputs file, an option): one line saying what is wrong and what was
    expected. The command line prints it and exits with code 2."""


# --------------------------------------------------------------------------- models and inputs

def load_model(path: str, converted_ok: bool = False):
    """The ONNX model at path; converted_ok: a model converted for Ascend (GE ops) is accepted too."""
    import onnx
    from google.protobuf.message import DecodeError

    file = pathlib.Path(path)
    if file.is_dir():
        found = sorted(p.name for p in file.glob("*.onnx"))[:3]
        raise CliError(f"{path!r} is a directory; expected an .onnx model file"
                       + (f" (it holds {', '.join(found)})" if found else ""))
    if not file.is_file():
        raise CliError(f"cannot read model {path!r}: no such file (expected an .onnx model file)")
    hint = " (an .npz file holds inputs: pass it with --inputs)" if file.suffix == ".npz" else ""
    try:
        model = onnx.load(str(file))
    except (DecodeError, ValueError, RuntimeError) as error:
        raise CliError(f"{path!r} is not a readable ONNX model ({type(error).__name__}: {error}){hint}") from None
    if not model.graph.node:
        raise CliError(f"{path!r} is not a readable ONNX model (it has no graph nodes){hint}")
    if not converted_ok and any(n.domain == GE_DOMAIN for n in model.graph.node):
        raise CliError(f"{path!r} is a model converted for Ascend ATC (domain {GE_DOMAIN}), which only ATC reads; "
                       f"expected an ONNX model with resample_grad ops: the original, or "
                       f"`resample-grad convert {path} --from ascend -o model.onnx`")
    return model


def _graph_inputs(model):
    initialized = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialized]


def _grid_names(model) -> set:
    names = set()
    for node in model.graph.node:
        if node.op_type in ("GridSampler2DGrad", "GridSampler3DGrad") and len(node.input) > 2:
            names.add(node.input[2])
        if node.op_type == "GridSample" and len(node.input) > 1:
            names.add(node.input[1])
    return names


def random_inputs(model, seed: int = 0, dynamic: int = RANDOM_DIM) -> dict[str, np.ndarray]:
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


def shape_text(dims) -> str:
    return "[" + ", ".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in dims) + "]"


def load_inputs(path: str | None, model) -> dict[str, np.ndarray]:
    """Random inputs, or the arrays of an .npz file checked against the model's inputs
    (names, dtypes, shapes, and one value per symbolic dimension)."""
    if path is None:
        return random_inputs(model)
    import ml_dtypes
    from onnx import helper

    expected = "expected an .npz file with one array per graph input (numpy.savez)"
    file = pathlib.Path(path)
    if file.is_dir():
        raise CliError(f"inputs {path!r} is a directory; {expected}")
    if not file.is_file():
        raise CliError(f"cannot read inputs {path!r}: no such file; {expected}")
    try:
        loaded = np.load(file, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise CliError(f"inputs {path!r} is a single .npy array; {expected}")
        with loaded as data:
            feeds = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError) as error:
        raise CliError(f"cannot read inputs {path!r} ({type(error).__name__}: {error}); {expected}") from None
    declared = {i.name: i for i in _graph_inputs(model)}
    names = ", ".join(declared) or "none"
    missing = [name for name in declared if name not in feeds]
    if missing:
        raise CliError(f"inputs file {path!r} lacks {', '.join(missing)} (the model's inputs: {names})")
    extra = [name for name in feeds if name not in declared]
    if extra:
        raise CliError(f"inputs file {path!r} has {', '.join(extra)}, which the model does not take "
                       f"(the model's inputs: {names})")
    symbols = {}  # dim_param -> (value, input name, axis): one value per symbol across the inputs
    for name, value in declared.items():
        tensor = value.type.tensor_type
        array = feeds[name]
        want = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if want == ml_dtypes.bfloat16 and array.dtype == np.dtype("V2"):  # numpy.savez stores bfloat16 as raw 2 bytes
            array = feeds[name] = array.view(ml_dtypes.bfloat16)
        if array.dtype != want:
            raise CliError(f"input {name!r} in {path!r} is {array.dtype}; the model declares {np.dtype(want).name}")
        if not tensor.HasField("shape"):
            continue
        dims = tensor.shape.dim
        fixed = zip(dims, array.shape, strict=False)  # read only when the ranks are equal
        if array.ndim != len(dims) or any(d.HasField("dim_value") and d.dim_value != n for d, n in fixed):
            raise CliError(f"input {name!r} in {path!r} has shape {list(array.shape)}; the model declares "
                           f"{shape_text(dims)}")
        for axis, (d, n) in enumerate(zip(dims, array.shape, strict=True)):
            if d.dim_param:
                seen = symbols.setdefault(d.dim_param, (n, name, axis))
                if seen[0] != n:
                    raise CliError(f"input {name!r} in {path!r} has {d.dim_param} = {n} at dimension {axis}, but "
                                   f"{seen[1]!r} has {d.dim_param} = {seen[0]} at dimension {seen[2]}; the model "
                                   f"declares one {d.dim_param}")
    return feeds


def bind_shapes(model, feeds):
    """A copy of model whose graph inputs have the feeds' static shapes: the checks of attach() and
    shape inference then see the real sizes, so a mismatch is named before anything runs."""
    from onnx import TensorShapeProto

    bound = copy.deepcopy(model)
    for value in bound.graph.input:
        if value.name in feeds and value.type.HasField("tensor_type"):
            shape = value.type.tensor_type.shape
            del shape.dim[:]
            shape.dim.extend(TensorShapeProto.Dimension(dim_value=int(n)) for n in np.shape(feeds[value.name]))
    return bound


def _check_fit(model, bound, random: bool) -> None:
    """Names a shape conflict that the inputs' sizes cause (the model with its declared shapes passes
    onnx's strict shape inference, with the inputs' shapes it fails) before a runtime meets it."""
    import onnx

    from resample_grad.opset import OPS

    try:
        onnx.shape_inference.infer_shapes(bound, strict_mode=True)
        return
    except onnx.shape_inference.InferenceError as error:
        if any(f"{op_type}: " in str(error) for op_type in OPS):
            return  # our op's own message: attach() and validate_model() report it, naming the attribute
        conflict = error
    try:
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except onnx.shape_inference.InferenceError:
        return  # the model fails as declared too: not the inputs' doing, the runtime decides
    shapes = ", ".join(f"{v.name} {shape_text(v.type.tensor_type.shape.dim)}" for v in _graph_inputs(bound))
    reason = f"the inputs ({shapes}) do not fit the model: {_first_inference_error(conflict)}"
    if random:
        reason += (f" (random inputs give every symbolic dimension the size {RANDOM_DIM}; "
                   "pass --inputs FILE.npz with the real shapes)")
    raise CliError(reason)


def _first_inference_error(error: Exception) -> str:
    """The first of onnx's shape inference errors; the ones after it are its consequences."""
    text = " ".join(str(error).split())
    entries = [part.strip() for part in re.split(r"(?=\(op_type:)", text) if part.startswith("(op_type:")]
    if not entries:
        return text
    first = re.sub(r"\[\w+Error\] ", "", entries[0])
    return first + (f" (and {len(entries) - 1} error(s) that follow from it)" if len(entries) > 1 else "")


def _why_it_failed(bound, path: str, error: Exception, random: bool) -> str:
    """One line for a run that failed inside onnxruntime or the reference evaluator: what onnx's
    shape inference says about the model with the inputs' shapes, else the runtime's own words."""
    import onnx

    try:
        onnx.shape_inference.infer_shapes(bound, strict_mode=True)
        reason = f"running the model on the {path} failed: {error}"
    except onnx.shape_inference.InferenceError as inference:
        reason = f"the inputs do not fit the model: {inference}"
    if random:
        reason += (f" (random inputs give every symbolic dimension the size {RANDOM_DIM}; "
                   "pass --inputs FILE.npz with the real shapes)")
    return " ".join(reason.split())


def run_on(model, feeds, path: str, threads: int = 0, timing: dict | None = None,
           random: bool = False) -> dict[str, np.ndarray]:
    """Outputs by name on one path: 'kernels', 'functions' or 'reference'.

    timing, when given, gets "ms": the time of the run alone (not the session's creation).
    random: the feeds are random_inputs() (a failure then says how to give real ones)."""
    timing = {} if timing is None else timing
    import onnx

    from resample_grad import opset, runtime
    onnxruntime = runtime.require_onnxruntime()

    names = [o.name for o in model.graph.output]
    bound = bind_shapes(model, feeds)
    _check_fit(model, bound, random)
    if path == "reference":
        from onnx.reference import ReferenceEvaluator
        opset.validate_model(bound)  # the same checks attach() makes on the other paths
        plain = copy.deepcopy(bound)  # without our function bodies the evaluator uses the NumPy ops
        kept = [f for f in plain.functions if f.domain != DOMAIN]
        del plain.functions[:]
        plain.functions.extend(kept)
        # onnx's reference GridSample knows only the opset-20 spellings of the same modes
        for node in plain.graph.node:
            if node.op_type == "GridSample" and node.domain in DEFAULT_DOMAINS:
                for attr in node.attribute:
                    if attr.name == "mode":
                        attr.s = {b"bilinear": b"linear", b"bicubic": b"cubic"}.get(attr.s, attr.s)
        if not any(o.domain == DOMAIN for o in plain.opset_import):
            plain.opset_import.append(onnx.helper.make_opsetid(DOMAIN, VERSION))
        try:
            evaluator = ReferenceEvaluator(plain, new_ops=opset.reference_ops())
            outputs, timing["ms"] = _timed(lambda: evaluator.run(None, feeds))
        except opset.ResampleGradError:
            raise
        except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as error:
            raise CliError(_why_it_failed(bound, path, error, random)) from None
        return dict(zip(names, outputs, strict=True))
    attached = opset.attach(bound)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    if path == "kernels":
        options.register_custom_ops_library(runtime.library_path())
    try:
        session = _cpu_session(onnxruntime, attached, options)
        runtime.run(session, feeds, names)  # warm-up: the first run allocates
        outputs, timing["ms"] = _timed(lambda: runtime.run(session, feeds, names))
    except RuntimeError as error:  # onnxruntime's errors (Fail, InvalidArgument, ...) are RuntimeErrors
        raise CliError(_why_it_failed(bound, path, error, random)) from None
    return dict(zip(names, outputs, strict=True))


def _cpu_session(onnxruntime, model, options):
    """An InferenceSession on the CPU. onnxruntime 1.19 (onnxruntime-training's last release) fuses a double MatMul
    and Transpose into com.microsoft::FusedMatMul, which it implements for float only, and then refuses the
    functions (they compute in double): that fusion alone is then left out."""
    data = model.SerializeToString()
    try:
        return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - onnxruntime's NotImplemented
        if "FusedMatMul" not in str(error):
            raise
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"],
                                        disabled_optimizers=["MatmulTransposeFusion"])


def disagreement(ours: np.ndarray, reference: np.ndarray) -> float:
    ours = np.asarray(ours, np.float64)
    reference = np.asarray(reference, np.float64)
    if ours.shape != reference.shape:
        return float("inf")
    scale = max(float(np.abs(reference).max(initial=0.0)), 1.0)
    return float(np.abs(ours - reference).max(initial=0.0)) / scale


def domain_ops(model) -> list[str]:
    return sorted({n.op_type for n in model.graph.node if n.domain == DOMAIN})


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - start) * 1e3


def compare_paths(model, feeds, threads: int = 0, paths=("kernels", "functions"), random: bool = False) -> dict:
    """Runs the reference and each path; returns times, per-output errors and whether all agree."""
    timing = {}
    reference = run_on(model, feeds, "reference", timing=timing, random=random)
    report = {"reference_ms": timing["ms"], "paths": {}, "agree": True}
    for path in paths:
        outputs = run_on(model, feeds, path, threads, timing, random=random)
        ms = timing["ms"]
        errors = {name: disagreement(outputs[name], reference[name]) for name in reference}
        tolerance = {name: TOLERANCE.get(np.asarray(reference[name]).dtype, 1e-2) for name in reference}
        ok = all(errors[n] <= tolerance[n] for n in errors)
        report["paths"][path] = {"ms": ms, "errors": errors, "ok": ok}
        report["agree"] = report["agree"] and ok
    return report
