"""One SGD training step of the benchmark U-Net three ways, interleaved: torch eager, the step exported with
converters.export_training_step on plain onnxruntime, and onnxruntime-training 1.19.2's artifacts of the same model.

    python benchmarks/step_speed.py [--threads 1,2] [--repeats 15] [--training-python .venv-training/bin/python]

The U-Net: models/unet_step.py's at width 48 (250k parameters; conv-BatchNorm-ReLU blocks, max pooling, nearest
and bilinear upsampling), batch 8 of 1x64x64, MSE loss, SGD (lr 0.01), the same weights and data on every side.
  torch: zero_grad, forward, loss, backward, optimizer.step (torch.optim.SGD).
  exported: export_training_step's graph with the SGD update appended (parameter - lr gradient), one
    InferenceSession.run per step, its new parameters and running statistics fed to the next step.
  ort-training: the forward exported by torch's TorchScript exporter (BatchNorm in training mode), its artifacts
    from resample_grad.training.generate_artifacts (MSE, SGD): Module(x, target), Optimizer.step(),
    lazy_reset_grad(). Runs in a second Python (--training-python) with onnxruntime-training-cpu 1.19.2, numpy < 2,
    onnx 1.16, torch and this package (pip install --no-deps .), as .ci/run's second environment; left out when
    that Python is missing.
Each side is a worker process; the driver asks each in turn for one step (round robin), `--repeats` rounds after
two warm-up rounds, and prints the median milliseconds per side, each side's first loss (all must agree), the
node counts of the two ONNX step graphs and the machine load. Every side waits passively between steps
(OMP_WAIT_POLICY=PASSIVE, onnxruntime's session.intra_op.allow_spinning 0): a pool that spins after its work would
take a core from the next side's step.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch's OpenMP starts

BATCH, WIDTH, SIZE = 8, 48, 64
LEARNING_RATE = 0.01
HERE = pathlib.Path(__file__).resolve()


# --------------------------------------------------------------------------- the model and data (driver)

def _module_and_data():
    import torch

    from resample_grad.models import unet_step

    module = unet_step.unet(channels=WIDTH)
    generator = torch.Generator().manual_seed(0)
    x, target = (torch.randn(BATCH, 1, SIZE, SIZE, generator=generator) for _ in range(2))
    return module, x, target


def _with_sgd(model, names: list):
    """model (export_training_step's) with outputs new_<p> = p - learning_rate grad_<p> for each parameter p."""
    import onnx
    from onnx import helper

    rate = onnx.numpy_helper.from_array(__import__("numpy").array(LEARNING_RATE, "float32"), "sgd_learning_rate")
    model.graph.initializer.append(rate)
    for name in names:
        scaled = f"sgd_scaled_{name}"
        model.graph.node.extend([helper.make_node("Mul", ["sgd_learning_rate", f"grad_{name}"], [scaled]),
                                 helper.make_node("Sub", [name, scaled], [f"new_{name}"])])
        grad = next(o for o in model.graph.output if o.name == f"grad_{name}")
        value = onnx.ValueInfoProto()
        value.CopyFrom(grad)
        value.name = f"new_{name}"
        model.graph.output.append(value)
    return model


def prepare(folder: pathlib.Path) -> dict:
    """The step model (exported, SGD appended), the forward model for onnxruntime-training, the weights and data."""
    import numpy as np
    import onnx
    import torch

    from resample_grad import converters
    from resample_grad.models import unet_step

    module, x, target = _module_and_data()
    torch.save({"state": module.state_dict(), "x": x, "target": target}, folder / "data.pt")
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    start = time.perf_counter()
    step = converters.export_training_step(module, unet_step.mse, x, target, verify=False)
    export_seconds, nodes = time.perf_counter() - start, len(step.graph.node)
    onnx.save(_with_sgd(step, names), str(folder / "step.onnx"))
    forward = unet_step.unet(channels=WIDTH)  # the forward only: generate_artifacts adds the loss
    forward.load_state_dict(module.state_dict())
    torch.onnx.export(forward, (x,), str(folder / "forward.onnx"), dynamo=False, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["input"], output_names=["output"])
    np.save(folder / "names.npy", np.array(names))
    return {"step nodes": nodes, "export s": export_seconds}


# --------------------------------------------------------------------------- workers

def _torch_worker(folder, threads):
    import torch

    from resample_grad.models import unet_step

    torch.set_num_threads(threads)
    data = torch.load(folder / "data.pt")
    module = unet_step.unet(channels=WIDTH)
    module.load_state_dict(data["state"])
    sgd = torch.optim.SGD(module.parameters(), lr=LEARNING_RATE)

    def step():
        sgd.zero_grad()
        loss = unet_step.mse(module(data["x"]), data["target"])
        loss.backward()
        sgd.step()
        return float(loss.detach())
    return step, {}


def _exported_worker(folder, threads):
    import numpy as np
    import onnx
    import onnxruntime
    import torch

    from resample_grad import runtime

    data = torch.load(folder / "data.pt")
    model = onnx.load(str(folder / "step.onnx"))
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = runtime.session(model, threads, sess_options=options)
    names = [str(n) for n in np.load(folder / "names.npy")]
    state = {k: v.numpy() for k, v in data["state"].items()}
    feeds = {"input_0": data["x"].numpy(), "target_0": data["target"].numpy(),
             **{i.name: state[i.name] for i in session.get_inputs() if i.name in state}}
    outputs = [o.name for o in session.get_outputs()]
    updates = {f"new_{n}": n for n in names}
    updates.update({o: o[:-len("_updated")] for o in outputs if o.endswith("_updated")})

    def step():
        results = dict(zip(outputs, session.run(None, feeds), strict=True))
        for output, name in updates.items():
            if name in feeds:
                feeds[name] = results[output]
        return float(results["loss"])
    return step, {"nodes": len(model.graph.node)}


def _training_worker(folder, threads):
    import numpy as np
    import onnx
    import onnxruntime
    import torch

    from resample_grad import training
    from resample_grad.training import api, artifacts

    onnxruntime.set_default_logger_severity(3)
    data = torch.load(folder / "data.pt")
    forward = onnx.load(str(folder / "forward.onnx"))
    params = [i.name for i in forward.graph.initializer if i.data_type == onnx.TensorProto.FLOAT
              and not i.name.endswith(("running_mean", "running_var"))]
    out = folder / "artifacts"
    if not (out / "training_model.onnx").exists():
        training.generate_artifacts(forward, requires_grad=params, loss=artifacts.LossType.MSELoss,
                                    optimizer=artifacts.OptimType.SGD, artifact_directory=out)
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    state = api.CheckpointState.load_checkpoint(str(out / "checkpoint"))
    module = api.Module(str(out / "training_model.onnx"), state, None, device="cpu",  # (its eval model: BatchNorm
                        # keeps its training outputs, which onnxruntime refuses in inference mode)
                        session_options=training.session_options(options, threads=threads))
    optimizer = api.Optimizer(str(out / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(LEARNING_RATE)
    module.train()
    x, target = data["x"].numpy(), data["target"].numpy()

    def step():
        loss = module(x, target)
        optimizer.step()
        module.lazy_reset_grad()
        return float(np.asarray(loss))
    return step, {"nodes": len(onnx.load(str(out / "training_model.onnx")).graph.node)}


WORKERS = {"torch": _torch_worker, "exported": _exported_worker, "ort-training": _training_worker}


def worker(kind: str, folder: pathlib.Path, threads: int) -> None:
    """Build the side, print `ready <loss of the first step> <nodes>`, then one step per `run` line: its ms."""
    step, info = WORKERS[kind](folder, threads)
    first = step()
    print(f"ready {first!r} {info.get('nodes', 0)}", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        step()
        print(f"{(time.perf_counter() - start) * 1000:.3f}", flush=True)


# --------------------------------------------------------------------------- driver

def _start(python, kind, folder, threads):
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.Popen([python, str(HERE), "--worker", kind, "--folder", str(folder), "--threads", str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def measure(pythons: dict, folder, threads: int, repeats: int) -> dict:
    workers = {kind: _start(python, kind, folder, threads) for kind, python in pythons.items()}
    info = {}
    for kind, process in workers.items():
        line = process.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError(f"step_speed: the {kind} worker failed (see its stderr above)")
        info[kind] = {"first loss": float(line[1]), "nodes": int(line[2])}
    times = {kind: [] for kind in workers}
    for round_ in range(repeats + 2):
        for kind, process in workers.items():
            process.stdin.write("run\n")
            process.stdin.flush()
            ms = float(process.stdout.readline())
            if round_ >= 2:
                times[kind].append(ms)
    for process in workers.values():
        process.stdin.close()
        process.wait()
    for kind in workers:
        info[kind]["ms"] = statistics.median(times[kind])
    return info


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default: 1,2)")
    parser.add_argument("--repeats", type=int, default=15, help="timed rounds, the median reported (default: 15)")
    parser.add_argument("--training-python", default=str(HERE.parents[1] / ".venv-training" / "bin" / "python"),
                        help="a Python with onnxruntime-training 1.19.2 (default: .venv-training/bin/python)")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, pathlib.Path(args.folder), int(args.threads))
        return 0
    import onnxruntime

    from resample_grad import runtime

    pythons = {"torch": sys.executable, "exported": sys.executable}
    if pathlib.Path(args.training_python).exists():
        pythons["ort-training"] = args.training_python
    else:
        print(f"(no {args.training_python}: the onnxruntime-training side is left out)")
    print(f"machine: {runtime.machine()}; onnxruntime {onnxruntime.__version__}; load average at the start "
          f"{os.getloadavg()[0]:.1f} (1 minute)")
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        prepared = prepare(folder)
        print(f"exported step: {prepared['step nodes']} nodes before the SGD update (2 per parameter), exported "
              f"in {prepared['export s']:.0f} s (verify=False)")
        print("\n| threads | side | nodes | ms | / torch | / ort-training | first loss |")
        print("|---:|---|---:|---:|---:|---:|---|")
        for threads in [int(t) for t in args.threads.split(",")]:
            info = measure(pythons, folder, threads, args.repeats)
            for kind, row in info.items():
                base = info.get("ort-training", {}).get("ms")
                print(f"| {threads} | {kind} | {row['nodes'] or ''} | {row['ms']:.1f} | "
                      f"{row['ms'] / info['torch']['ms']:.3f} | {row['ms'] / base if base else float('nan'):.3f} | "
                      f"{row['first loss']:.6f} |", flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f} (1 minute)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
