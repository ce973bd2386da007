"""One training step of a U-Net with onnxruntime-training on the CPU next to torch eager, and the
com.microsoft::ResizeGrad kernel alone next to torch's upsample backward.

    python benchmarks/training_step.py [--threads 1,2] [--repeats 7]

Needs torch and onnxruntime-training in one environment (onnxruntime-training-cpu 1.19.2, numpy < 2,
torch 2.13 CPU: `import onnxruntime.training` then works as is); without onnxruntime-training only the
kernel table is printed. Each pair is timed interleaved in one process at the same thread count
(intra_op_num_threads, torch.set_num_threads): median milliseconds of `--repeats` runs after a warm-up.

    step: models/training.py's U-Net at batch 8, 3 channels, 64x64, width 16 (Conv-ReLU, MaxPool,
          Conv-ReLU, Resize linear x2, skip Concat, Conv); MSE loss; SGD (lr 0.01). onnxruntime-training:
          api.Module(...)(x, target), Optimizer.step(), lazy_reset_grad(); torch eager: the same network and
          weights, zero_grad, forward, loss, backward, SGD step. The first step's loss and gradients are
          compared (max relative difference) before timing.
    kernel: com.microsoft::ResizeGrad (libresample_grad_training_ops) in an InferenceSession vs
          torch.ops.aten.upsample_*_backward on the same gradient.

Both sides wait passively between runs (onnxruntime's session.intra_op.allow_spinning 0, OMP_WAIT_POLICY
PASSIVE for torch's OpenMP, unless set): interleaved in one process, a pool that spins after its work would
take a core from the other side's next run.
"""
from __future__ import annotations

import argparse
import functools
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch's OpenMP starts

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "models"))
import training as examples  # noqa: E402  models/training.py (resample_grad.models' __init__ needs onnx >= 1.20)
from resample_grad import runtime, training  # noqa: E402

BATCH, CHANNELS, SIZE, WIDTH = 8, 3, 64, 16
LEARNING_RATE = 0.01


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def passive_options(threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def interleaved(fns: dict, repeats: int) -> dict:
    for fn in fns.values():
        fn()  # warm-up
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: statistics.median(values) for name, values in times.items()}


# --------------------------------------------------------------------------- one training step

class TorchUNet(torch.nn.Module):
    """models/training.py's unet in torch, with the ONNX model's weights."""

    def __init__(self, model: onnx.ModelProto):
        super().__init__()
        weights = {i.name: torch.from_numpy(onnx.numpy_helper.to_array(i).copy()) for i in model.graph.initializer}
        self.enc = torch.nn.Conv2d(CHANNELS, WIDTH, 3, padding=1)
        self.mid = torch.nn.Conv2d(WIDTH, WIDTH, 3, padding=1)
        self.dec = torch.nn.Conv2d(2 * WIDTH, CHANNELS, 3, padding=1)
        with torch.no_grad():
            for name, p in self.named_parameters():
                p.copy_(weights[name])

    def forward(self, x):
        e = torch.relu(self.enc(x))
        m = torch.relu(self.mid(F.max_pool2d(e, 2)))
        u = F.interpolate(m, scale_factor=2, mode="bilinear", align_corners=False)
        return self.dec(torch.cat([u, e], 1))


def _torch_step(net, sgd, x, target):
    sgd.zero_grad()
    loss = F.mse_loss(net(x), target)
    loss.backward()
    sgd.step()
    return loss.detach()


def _ort_step(module, optimizer, x, target):
    module(x, target)
    optimizer.step()
    module.lazy_reset_grad()


def step_rows(threads_list, repeats, folder) -> list:
    from resample_grad.training import api, artifacts

    model = examples.unet(n=BATCH, channels=CHANNELS, size=SIZE, width=WIDTH)
    params = [i.name for i in model.graph.initializer if "." in i.name]
    with examples._quiet_stderr():
        training.generate_artifacts(model, requires_grad=params, loss=artifacts.LossType.MSELoss,
                                    optimizer=artifacts.OptimType.SGD, artifact_directory=folder)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, CHANNELS, SIZE, SIZE)).astype(np.float32)
    target = rng.standard_normal((BATCH, CHANNELS, SIZE, SIZE)).astype(np.float32)
    rows = []
    for threads in threads_list:
        torch.set_num_threads(threads)
        state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
        module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"), device="cpu",
                            session_options=training.session_options(passive_options(threads), threads=threads))
        optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)
        optimizer.set_learning_rate(LEARNING_RATE)
        module.train()
        net = TorchUNet(model)
        sgd = torch.optim.SGD(net.parameters(), lr=LEARNING_RATE)
        tx, tt = torch.from_numpy(x), torch.from_numpy(target)

        # the first step of each, compared
        ort_loss = float(module(x, target))
        grads = {p: np.array(state.parameters[p].grad) for p in params}
        optimizer.step()
        module.lazy_reset_grad()
        torch_step = functools.partial(_torch_step, net, sgd, tx, tt)
        torch_loss = float(torch_step())
        difference = abs(ort_loss - torch_loss) / abs(torch_loss)
        for name, p in net.named_parameters():
            torch_grad = p.grad.numpy()
            difference = max(difference, float(np.abs(grads[name] - torch_grad).max() / np.abs(torch_grad).max()))

        ort_step = functools.partial(_ort_step, module, optimizer, x, target)
        median = interleaved({"ort": ort_step, "torch": torch_step}, repeats)
        del module, optimizer, state, ort_step  # the next thread count builds its own session
        rows.append((f"U-Net step {BATCH}x{CHANNELS}x{SIZE}x{SIZE} (width {WIDTH})", threads, median["ort"],
                     median["torch"], f"first step: loss and gradients differ by {difference:.1e} (relative)"))
    return rows


# --------------------------------------------------------------------------- the kernel alone

KERNEL_ROWS = [  # name, x shape, Resize attributes, torch backward (grad, x shape, out size) -> grad_input
    ("linear half_pixel, U-Net decoder 8x16x32x32->64x64", [8, 16, 32, 32], dict(mode="linear"),
     lambda g, s, o: torch.ops.aten.upsample_bilinear2d_backward(g, o, s, False, 2.0, 2.0)),
    ("linear half_pixel 8x64x64x64->128x128", [8, 64, 64, 64], dict(mode="linear"),
     lambda g, s, o: torch.ops.aten.upsample_bilinear2d_backward(g, o, s, False, 2.0, 2.0)),
    ("linear align_corners 8x64x64x64->128x128", [8, 64, 64, 64],
     dict(mode="linear", coordinate_transformation_mode="align_corners"),
     lambda g, s, o: torch.ops.aten.upsample_bilinear2d_backward(g, o, s, True, 2.0, 2.0)),
    ("nearest asymmetric floor 8x64x64x64->128x128", [8, 64, 64, 64],
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     lambda g, s, o: torch.ops.aten.upsample_nearest2d_backward(g, o, s, 2.0, 2.0)),
    ("cubic half_pixel A=-0.75 8x64x64x64->128x128", [8, 64, 64, 64], dict(mode="cubic"),
     lambda g, s, o: torch.ops.aten.upsample_bicubic2d_backward(g, o, s, False, 2.0, 2.0)),
]


def kernel_rows(threads_list, repeats) -> list:
    rows = []
    for name, x_shape, attrs, torch_backward in KERNEL_ROWS:
        out = [x_shape[2] * 2, x_shape[3] * 2]
        node = helper.make_node("ResizeGrad", ["dY", "X", "", "scales"], ["dX"], domain="com.microsoft", **attrs)
        graph = helper.make_graph([node], "g",
                                  [helper.make_tensor_value_info("dY", TensorProto.FLOAT, x_shape[:2] + out),
                                   helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
                                  [helper.make_tensor_value_info("dX", TensorProto.FLOAT, x_shape)],
                                  initializer=[helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])])
        model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 19),
                                                                      helper.make_opsetid("com.microsoft", 1)])
        dy = np.random.default_rng(1).standard_normal(x_shape[:2] + out).astype(np.float32)
        x = np.zeros(x_shape, np.float32)
        tdy = torch.from_numpy(dy)
        for threads in threads_list:
            torch.set_num_threads(threads)
            options = passive_options(threads)
            options.register_custom_ops_library(runtime.training_library_path())
            session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                   providers=["CPUExecutionProvider"])
            ours = session.run(None, {"dY": dy, "X": x})[0]
            reference = torch_backward(tdy, x_shape, out).numpy()
            difference = float(np.abs(ours - reference).max() / np.abs(reference).max())
            median = interleaved({"kernel": functools.partial(session.run, None, {"dY": dy, "X": x}),
                                  "torch": functools.partial(torch_backward, tdy, x_shape, out)}, repeats)
            rows.append((f"com.microsoft::ResizeGrad {name}", threads, median["kernel"], median["torch"],
                         f"vs torch {difference:.1e}"))
            del session
    return rows


def machine() -> str:
    return (f"machine: {runtime.machine()}; onnxruntime {onnxruntime.__version__}"
            f"{' (training)' if training.available() else ''}, torch {torch.__version__}, "
            f"resample_grad ISA {runtime.isa()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default: 1,2)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per pair, the median reported (default: 7)")
    args = parser.parse_args(argv)
    threads_list = [int(t) for t in args.threads.split(",")]
    onnxruntime.set_default_logger_severity(3)
    print(machine())
    rows = []
    if training.available():
        with tempfile.TemporaryDirectory() as folder:
            rows += step_rows(threads_list, args.repeats, pathlib.Path(folder))
    else:
        print(f"(no onnxruntime-training here: the training-step rows are left out; {training.INSTALL_HINT})")
    rows += kernel_rows(threads_list, args.repeats)
    print("\n| row | threads | ours ms | torch ms | ours/torch | check |\n|---|---:|---:|---:|---:|---|")
    for name, threads, ours, theirs, note in rows:
        print(f"| {name} | {threads} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
