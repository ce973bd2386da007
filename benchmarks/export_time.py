"""Where the time of converters.export_training_step goes, by phase, for two training steps.

    python benchmarks/export_time.py [--repeats 3] [--models unet5,diffusion] [--verify on,off] [--warm]
                                     [--clock wall|cpu] [--module PATH]

    unet5: models/unet_step.py's U-Net generalised to 5 levels (conv-BatchNorm-ReLU blocks, max pooling, nearest
        and bilinear x2 upsampling alternating, skip connections), 2x1x64x64, MSE loss.
    diffusion: a small diffusion-style UNet (3 levels, a time embedding, residual blocks of GroupNorm, SiLU and
        conv, 3 self-attention blocks with F.scaled_dot_product_attention, average pooling, nearest and bilinear
        upsampling), 2x3x32x32, MSE loss.

Each export runs in a new Python process (what a script that exports once waits for, its imports excepted), or
with --warm in this process after one warm-up export of each model (what a further export costs: torch's one-time
set-up is paid). --repeats exports per model and verify setting, interleaved; the table gives the median seconds
of each phase, wall time or (--clock cpu) the exporting process's CPU time, which other jobs on a shared machine
disturb less. The phases are timed by wrapping the functions that run them: the training step's eager run and
set-up (everything before export()), our make_fx calls, our ExportedProgram of the traced graph, the exporter's
registry of translations, its torch.export capture (absent when it is handed an ExportedProgram),
run_decompositions, type promotion and translation to ONNX, our optimizer passes, attach(), the verification;
"other" is the rest of the total (copies, serialization).
--module times another version of converters/torch_export.py (before / after comparisons).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # (read when torch's OpenMP starts: no spinning counted as CPU)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from resample_grad.converters import torch_export  # noqa: E402

EXPORTER = torch_export  # the module whose export_training_step is timed (--module: another version of it)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}  # (cpu: this process's, all its threads)
CLOCK = CLOCKS["wall"]


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """models/unet_step.py's U-Net generalised to `depth` levels (nearest and bilinear upsampling alternate)."""

    def __init__(self, depth=5, c=4):
        super().__init__()
        chans = [c * 2 ** min(k, 3) for k in range(depth)]
        self.enc = nn.ModuleList([block(1 if k == 0 else chans[k - 1], chans[k]) for k in range(depth)])
        self.mid = block(chans[-1], chans[-1])
        self.dec = nn.ModuleList([block(2 * chans[k] if k == depth - 1 else chans[k + 1] + chans[k], chans[k])
                                  for k in range(depth)])
        self.head = nn.Conv2d(chans[0], 1, 1)

    def forward(self, x):
        skips = []
        for enc in self.enc:
            x = enc(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for k in reversed(range(len(self.dec))):
            if k % 2:
                x = F.interpolate(x, scale_factor=2, mode="nearest")
            else:
                x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            x = self.dec[k](torch.cat([x, skips[k]], 1))
        return self.head(x)


class ResBlock(nn.Module):
    def __init__(self, c, t):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.t = nn.Linear(t, c)

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class Attention(nn.Module):
    def __init__(self, c, heads=2):
        super().__init__()
        self.n, self.qkv, self.o, self.h = nn.GroupNorm(4, c), nn.Linear(c, 3 * c), nn.Linear(c, c), heads

    def forward(self, x):
        b, c, hh, ww = x.shape
        s = self.n(x).flatten(2).transpose(1, 2)
        q, k, v = (t.unflatten(-1, (self.h, -1)).transpose(1, 2) for t in self.qkv(s).chunk(3, -1))
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
        return x + self.o(o).transpose(1, 2).reshape(b, c, hh, ww)


class DiffusionUNet(nn.Module):
    """A small diffusion-style UNet: time embedding, residual blocks (GroupNorm, SiLU), attention at the lower
    levels."""

    def __init__(self, c=16, t=32):
        super().__init__()
        self.temb = nn.Sequential(nn.Linear(1, t), nn.SiLU(), nn.Linear(t, t))
        self.inp = nn.Conv2d(3, c, 3, padding=1)
        self.d1, self.d2, self.a2 = ResBlock(c, t), ResBlock(c, t), Attention(c)
        self.mid, self.amid = ResBlock(c, t), Attention(c)
        self.u2, self.au2, self.u1 = ResBlock(c, t), Attention(c), ResBlock(c, t)
        self.out = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, x, t):
        e = self.temb(t)
        h1 = self.d1(self.inp(x), e)
        h2 = self.a2(self.d2(F.avg_pool2d(h1, 2), e))
        m = self.amid(self.mid(F.avg_pool2d(h2, 2), e))
        u2 = self.au2(self.u2(F.interpolate(m, scale_factor=2, mode="nearest") + h2, e))
        u1 = self.u1(F.interpolate(u2, scale_factor=2, mode="bilinear") + h1, e)
        return self.out(u1)


def mse(y, t):
    return (y - t).square().mean()


def model(name):
    """(module, inputs, targets) of a benchmark model, from seed 0."""
    torch.manual_seed(0)
    if name == "unet5":
        return UNet(5), (torch.randn(2, 1, 64, 64),), (torch.randn(2, 1, 64, 64),)
    if name == "diffusion":
        return DiffusionUNet(), (torch.randn(2, 3, 32, 32), torch.rand(2, 1)), (torch.randn(2, 3, 32, 32),)
    raise ValueError(f"export_time: model must be unet5 or diffusion, got {name!r}")


# --------------------------------------------------------------------------- phase timers

class Phases:
    """Seconds per phase of the export running now: the wrapped functions add to it."""

    def __init__(self):
        self.times, self.calls, self.start = {}, {}, CLOCK()

    def add(self, phase, seconds):
        self.times[phase] = self.times.get(phase, 0.0) + seconds

    def timed(self, phase, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            start = CLOCK()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(phase, CLOCK() - start)
        return run


@contextlib.contextmanager
def _patched(phases: Phases):
    """Wraps the functions that run each phase (those that exist in the installed version) with phases' timers."""
    from torch.export import exported_program as _exported_program
    from torch.fx.experimental import proxy_tensor
    from torch.onnx._internal.exporter import _capture_strategies, _core, _fx_passes, _registration

    from resample_grad import opset

    make_fx = proxy_tensor.make_fx

    def counted_make_fx(*args, **kwargs):  # ours only: torch.export calls make_fx too
        traced = make_fx(*args, **kwargs)
        if sys._getframe(1).f_globals.get("__name__") != EXPORTER.__name__:
            return traced
        phases.calls["make_fx"] = phases.calls.get("make_fx", 0) + 1
        return phases.timed(f"trace: make_fx #{phases.calls['make_fx']}", traced)

    targets = [(proxy_tensor, "make_fx", lambda fn: counted_make_fx),
               (_capture_strategies.TorchExportNonStrictStrategy, "_capture",
                lambda fn: phases.timed("onnx: torch.export", fn)),
               (_registration.ONNXRegistry, "from_torchlib",
                lambda fn: staticmethod(phases.timed("onnx: registry", fn))),
               (_exported_program.ExportedProgram, "run_decompositions",
                lambda fn: phases.timed("onnx: run_decompositions", fn)),
               (_fx_passes, "insert_type_promotion_nodes", lambda fn: phases.timed("onnx: type promotion", fn)),
               (_core, "_exported_program_to_onnx_program", lambda fn: phases.timed("onnx: translation", fn)),
               (EXPORTER, "_program", lambda fn: phases.timed("program (ExportedProgram of the graph)", fn)),
               (EXPORTER, "_optimize", lambda fn: phases.timed("optimize", fn)),
               (opset, "attach", lambda fn: phases.timed("attach", fn)),
               (EXPORTER, "_verify", lambda fn: phases.timed("verify", fn))]
    def entered(fn):  # the time before export(): the training step's eager run on copies, and its set-up
        @functools.wraps(fn)
        def run(*args, **kwargs):
            phases.add("eager step, set-up", CLOCK() - phases.start)
            return fn(*args, **kwargs)
        return run

    targets.append((EXPORTER, "export", entered))
    saved = [(owner, name, vars(owner)[name]) for owner, name, _ in targets if name in vars(owner)]
    try:
        for owner, name, wrap in targets:
            if name in vars(owner):
                setattr(owner, name, wrap(getattr(owner, name)))
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def run_once(name, verify: bool) -> dict:
    """{phase: seconds} of one export_training_step of model `name`, with "total" and "other"."""
    module, inputs, targets = model(name)
    phases = Phases()
    with _patched(phases):
        phases.start = CLOCK()
        EXPORTER.export_training_step(module, mse, inputs, targets, verify=verify)
        total = CLOCK() - phases.start
    times = dict(phases.times)
    times["other"] = total - sum(times.values())
    times["total"] = total
    return times


def _load(path):
    """converters/torch_export.py of another version (such as `git show REV:converters/torch_export.py`), as a
    module of resample_grad.converters (its relative imports are the installed package's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("resample_grad.converters._timed_export", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _fresh(name, verify: bool, module=None, clock="wall") -> dict:
    """run_once in a new Python process (its imports are not timed)."""
    command = [sys.executable, __file__, "--child", name, "on" if verify else "off", "--clock", clock,
               *(["--module", module] if module else [])]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"export_time: {' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="exports per model and verify setting (median)")
    parser.add_argument("--models", default="unet5,diffusion", help="comma-separated: unet5, diffusion")
    parser.add_argument("--verify", default="on,off", help="comma-separated: on, off")
    parser.add_argument("--warm", action="store_true",
                        help="export in this process after one warm-up export of each model, instead of each export "
                             "in a new process")
    parser.add_argument("--module", metavar="PATH",
                        help="time another version of converters/torch_export.py (a file), such as the one of "
                             "`git show REV:converters/torch_export.py`, for a before / after comparison")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="wall: elapsed seconds; cpu: CPU seconds of the exporting process (steadier on a machine "
                             "that other jobs share)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "VERIFY"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    global EXPORTER, CLOCK
    CLOCK = CLOCKS[options.clock]
    if options.module:
        EXPORTER = _load(options.module)
    if options.child:
        print(json.dumps(run_once(options.child[0], options.child[1] == "on")))
        return
    names = options.models.split(",")
    settings = [s == "on" for s in options.verify.split(",")]
    if options.warm:
        for name in names:
            start = time.perf_counter()
            run_once(name, verify=False)
            print(f"warm-up export of {name} (verify off): {time.perf_counter() - start:.2f} s", flush=True)
    runs = {(name, v): [] for name in names for v in settings}
    for _ in range(options.repeats):
        for key in runs:
            runs[key].append(run_once(*key) if options.warm else _fresh(*key, options.module, options.clock))
    columns = [f"{name} verify {'on' if v else 'off'}" for name, v in runs]
    phases = []
    for times in (t for values in runs.values() for t in values):
        phases += [p for p in times if p not in phases and p not in ("other", "total")]
    phases += ["other", "total"]  # (in the order they ran)
    width = max(len(p) for p in phases)
    where = "in one warm process" if options.warm else "each in a new process"
    print(f"\nmedian {options.clock} seconds of {options.repeats} exports {where}; totals: min-max\n")
    print(f"{'phase':<{width}}  " + "  ".join(f"{c:>22}" for c in columns))
    for phase in phases:
        cells = [statistics.median(t.get(phase, 0.0) for t in values) for values in runs.values()]
        print(f"{phase:<{width}}  " + "  ".join(f"{c:>22.2f}" for c in cells))
    spans = [f"{min(t['total'] for t in values):.2f}-{max(t['total'] for t in values):.2f}" for values in runs.values()]
    print(f"{'':<{width}}  " + "  ".join(f"{c:>22}" for c in spans))


if __name__ == "__main__":
    main()
