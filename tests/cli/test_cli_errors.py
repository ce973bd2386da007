"""Every subcommand with bad input: exit code 2, one line `resample-grad: error: ...` naming what was wrong
and what was expected, no traceback, nothing written.

The table runs in-process (cli.main with the test's captured file descriptors: a Python exception would
fail the test as a traceback would); a row from each subcommand also runs as a real `python -m
resample_grad` process, and the rows that need a missing torch run only that way."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from resample_grad import cli, models
from resample_grad.converters import ascend

ROWS = [  # (id, arguments, text the error line must contain)
    # the command itself
    ("no-command", [], "a command is required: demo, run, check, inspect, bench or convert"),
    ("unknown-command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("unknown-option", ["run", "{models}/decoder_step.onnx", "--frob"], "unrecognized arguments: --frob"),
    # demo
    ("demo-threads-negative", ["demo", "--threads", "-1"], "--threads: expected an integer from 0"),
    ("demo-threads-huge", ["demo", "--threads", "5000"], "to 1024, got '5000'"),
    ("demo-threads-text", ["demo", "--threads", "two"], "got 'two'"),
    ("demo-out-is-a-file", ["demo", "--out", "{bad}/notes.txt"], "is a file; expected a folder"),
    # run: the model file
    ("run-no-model", ["run"], "the following arguments are required: model"),
    ("run-missing-file", ["run", "{out}/nothing.onnx"], "no such file (expected an .onnx model file)"),
    ("run-directory", ["run", "{models}"], "is a directory; expected an .onnx model file (it holds decoder_step.onnx"),
    ("run-corrupt", ["run", "{bad}/corrupt.onnx"], "corrupt.onnx' is not a readable ONNX model"),
    ("run-text-file", ["run", "{bad}/notes.txt"], "notes.txt' is not a readable ONNX model"),
    ("run-npz-as-model", ["run", "{bad}/shape.npz"], "an .npz file holds inputs: pass it with --inputs"),
    ("run-converted", ["run", "{bad}/model.ascend.onnx"],
     "is a model converted for Ascend ATC (domain resample_grad.ge)"),
    ("run-bad-attribute", ["run", "{bad}/bad_attribute.onnx"],
     "GridSampler2DGrad: attribute 'padding_mode' must be one of 'zeros', 'border', 'reflection', got 'mirror'"),
    # run: the inputs file
    ("run-inputs-shape", ["run", "{models}/upsample_nearest_exact2d_grad.onnx", "--inputs", "{bad}/shape.npz"],
     "input 'grad_output' in '{bad}/shape.npz' has shape [2, 16, 50, 44]; the model declares [2, 16, 50, 45]"),
    ("run-inputs-rank", ["run", "{models}/upsample_nearest_exact2d_grad.onnx", "--inputs", "{bad}/rank.npz"],
     "has shape [2, 16, 50]; the model declares [2, 16, 50, 45]"),
    ("run-inputs-dtype", ["run", "{models}/upsample_nearest_exact2d_grad.onnx", "--inputs", "{bad}/dtype.npz"],
     "input 'grad_output' in '{bad}/dtype.npz' is float64; the model declares float32"),
    ("run-inputs-extra", ["run", "{models}/upsample_nearest_exact2d_grad.onnx", "--inputs", "{bad}/extra.npz"],
     "has foo, which the model does not take (the model's inputs: grad_output)"),
    ("run-inputs-missing", ["run", "{models}/grid_sampler_2d_grad.onnx", "--inputs", "{bad}/shape.npz"],
     "lacks input, grid (the model's inputs: grad_output, input, grid)"),
    ("run-inputs-npy", ["run", "{models}/decoder_step.onnx", "--inputs", "{bad}/array.npy"], "is a single .npy array"),
    ("run-inputs-not-npz", ["run", "{models}/decoder_step.onnx", "--inputs", "{bad}/notes.txt"],
     "cannot read inputs '{bad}/notes.txt'"),
    ("run-inputs-missing-file", ["run", "{models}/decoder_step.onnx", "--inputs", "{out}/none.npz"],
     "cannot read inputs '{out}/none.npz': no such file; expected an .npz file"),
    ("run-inputs-directory", ["run", "{models}/decoder_step.onnx", "--inputs", "{models}"],
     "is a directory; expected an .npz"),
    ("run-inputs-symbol-conflict", ["run", "{bad}/grid_shared_n.onnx", "--inputs", "{bad}/grid_n3_n4.npz"],
     "input 'input' in '{bad}/grid_n3_n4.npz' has N = 3 at dimension 0, but 'grad_output' has N = 4"),
    # run: dynamic shapes the function path cannot take (onnxruntime used to fail in an inlined Reshape)
    ("run-functions-dynamic-batch", ["run", "{bad}/grid_own_dims.onnx", "--inputs", "{bad}/grid_n3_n4.npz", "--path",
                                     "functions"],
     "GridSampler2DGrad: dimension 0 of 'grid' (4) must equal dimension 0 of 'input' (3)"),
    ("run-functions-output-size", ["run", "{bad}/nearest1d_dynamic.onnx", "--inputs", "{bad}/length200.npz", "--path",
                                   "functions"], "attribute 'output_size' is [250] but grad_output has L = 200"),
    ("run-random-symbolic", ["run", "{bad}/transformer_dynamic.onnx"],
     "do not fit the model: (op_type:Sub): Incompatible dimensions (and "),
    # run: options and the output file
    ("run-path", ["run", "{models}/decoder_step.onnx", "--path", "gpu"], "invalid choice: 'gpu' (choose from "),
    ("run-threads-negative", ["run", "{models}/decoder_step.onnx", "--threads", "-3"],
     "--threads: expected an integer from 0"),
    ("run-output-suffix", ["run", "{models}/decoder_step.onnx", "-o", "{out}/result.txt"],
     "must be a file name ending in .npz"),
    ("run-output-folder-missing", ["run", "{models}/decoder_step.onnx", "-o", "{out}/no/such/result.npz"],
     "the folder '{out}/no/such' does not exist"),
    ("run-output-directory", ["run", "{models}/decoder_step.onnx", "-o", "{bad}/folder.npz"],
     "is a directory; expected a file"),
    # check
    ("check-missing-file", ["check", "{out}/nothing.onnx"], "no such file"),
    ("check-converted", ["check", "{bad}/model.ascend.onnx"],
     "convert {bad}/model.ascend.onnx --from ascend -o model.onnx"),
    ("check-inputs-dtype", ["check", "{models}/upsample_nearest_exact2d_grad.onnx", "--inputs", "{bad}/dtype.npz"],
     "is float64; the model declares float32"),
    ("check-random-symbolic", ["check", "{bad}/transformer_dynamic.onnx"],
     "pass --inputs FILE.npz with the real shapes"),
    ("check-threads", ["check", "{models}/decoder_step.onnx", "--threads", "-1"], "check: argument --threads"),
    # inspect
    ("inspect-no-model", ["inspect"], "the following arguments are required: model"),
    ("inspect-directory", ["inspect", "{models}"], "is a directory"),
    ("inspect-corrupt", ["inspect", "{bad}/corrupt.onnx"], "is not a readable ONNX model"),
    ("inspect-converted", ["inspect", "{bad}/model.ascend.onnx"], "is a model converted for Ascend ATC"),
    ("inspect-bad-attribute", ["inspect", "{bad}/bad_attribute.onnx"], "attribute 'padding_mode' must be one of"),
    # bench
    ("bench-threads-zero", ["bench", "--threads", "0"],
     "bench: argument --threads: expected an integer from 1 to 1024, got '0'"),
    ("bench-threads-negative", ["bench", "--threads", "-3"], "expected an integer from 1 to 1024, got '-3'"),
    ("bench-threads-list", ["bench", "--threads", "1,x"], "got 'x' in '1,x'"),
    ("bench-repeats-zero", ["bench", "--repeats", "0"], "--repeats: expected an integer from 1 to 1000, got '0'"),
    ("bench-rows-unknown", ["bench", "--rows", "no such row", "--no-torch"],
     "--rows 'no such row' matches no benchmark row; expected text from a row name: GridSampler2DGrad bilinear/zeros"),
    ("bench-unknown-option", ["bench", "--fast"], "unrecognized arguments: --fast"),
    ("bench-isa-unknown", ["bench", "--isa", "avx2,sse2"],
     "--isa: expected instruction sets from baseline, avx2, avx512, got 'sse2' in 'avx2,sse2'"),
    # convert
    ("convert-family-soc", ["convert", "{models}/decoder_step.onnx", "--soc", "a2", "-o", "{out}/c"],
     "--soc 'a2' is a product family (Atlas A2), not an SoC; ATC's --soc_version needs a concrete SoC: "
     "one of Ascend910B1"),
    ("convert-family-soc-training", ["convert", "{models}/decoder_step.onnx", "--soc", "training", "-o", "{out}/c"],
     "is a product family (Atlas training series)"),
    ("convert-unknown-soc", ["convert", "{models}/decoder_step.onnx", "--soc", "Ascend999", "-o", "{out}/c"],
     "unknown --soc 'Ascend999'; known: Atlas training series: Ascend910"),
    ("convert-no-output", ["convert", "{models}/decoder_step.onnx"],
     "the following arguments are required: -o/--output"),
    ("convert-output-is-a-file", ["convert", "{models}/decoder_step.onnx", "-o", "{bad}/notes.txt"],
     "is a file; expected a folder"),
    ("convert-missing-model", ["convert", "{out}/nothing.onnx", "-o", "{out}/c"], "no such file"),
    ("convert-device-limit", ["convert", "{models}/decoder_step.onnx", "--soc", "Ascend910", "-o", "{out}/c"],
     "is not available on Atlas training series"),
    ("convert-twice", ["convert", "{bad}/model.ascend.onnx", "-o", "{out}/c"],
     "the model already has resample_grad.ge nodes (it was converted for Ascend)"),
    ("convert-fallback", ["convert", "{models}/decoder_step.onnx", "--fallback", "some", "-o", "{out}/c"],
     "invalid choice: 'some'"),
    ("convert-both-directions", ["convert", "{bad}/model.ascend.onnx", "--target", "ascend", "--from", "ascend", "-o",
                                 "{out}/back.onnx"], "not allowed with argument"),
    ("convert-back-not-converted",
     ["convert", "{models}/decoder_step.onnx", "--from", "ascend", "-o", "{out}/back.onnx"],
     "the model has no resample_grad.ge nodes; expected a model written by to_ascend"),
    ("convert-back-with-soc", ["convert", "{bad}/model.ascend.onnx", "--from", "ascend", "--soc", "Ascend910B1", "-o",
                               "{out}/back.onnx"], "--soc applies only to --target ascend"),
    ("convert-back-suffix", ["convert", "{bad}/model.ascend.onnx", "--from", "ascend", "-o", "{out}/back"],
     "must be a file name ending in .onnx"),
]
SUBCOMMANDS = ("demo", "run", "check", "inspect", "bench", "convert")


def _save_dynamic(model: onnx.ModelProto, path, dims: dict) -> None:
    """model with its inputs' dims replaced by symbols (dims: input name -> list of str or int)."""
    for value in model.graph.input:
        if value.name in dims:
            for d, new in zip(value.type.tensor_type.shape.dim, dims[value.name], strict=True):
                if isinstance(new, str):
                    d.dim_param = new
    del model.graph.value_info[:]
    for output in model.graph.output:
        output.type.tensor_type.ClearField("shape")
    onnx.save(model, path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The example models, and a folder of bad or awkward files."""
    model_dir = tmp_path_factory.mktemp("models")
    models.build_all(model_dir)
    bad = tmp_path_factory.mktemp("bad")
    rng = np.random.default_rng(0)
    (bad / "corrupt.onnx").write_bytes(b"\x08\x07this is not a protobuf \xff\xfe" * 10)
    (bad / "notes.txt").write_text("a text file, not a model\n")
    (bad / "folder.npz").mkdir()
    np.savez(bad / "shape.npz", grad_output=np.zeros((2, 16, 50, 44), np.float32))
    np.savez(bad / "rank.npz", grad_output=np.zeros((2, 16, 50), np.float32))
    np.savez(bad / "dtype.npz", grad_output=np.zeros((2, 16, 50, 45), np.float64))
    np.savez(bad / "extra.npz", grad_output=np.zeros((2, 16, 50, 45), np.float32), foo=np.zeros(3))
    np.save(bad / "array.npy", np.zeros(3))
    np.savez(bad / "grid_n3_n4.npz", grad_output=rng.standard_normal((4, 16, 32, 32)).astype(np.float32),
             input=rng.standard_normal((3, 16, 48, 48)).astype(np.float32),
             grid=rng.uniform(-1, 1, (4, 32, 32, 2)).astype(np.float32))
    np.savez(bad / "length200.npz", grad_output=rng.standard_normal((4, 32, 200)).astype(np.float32))
    model = onnx.load(model_dir / "grid_sampler_2d_grad.onnx")
    for attr in model.graph.node[0].attribute:
        if attr.name == "padding_mode":
            attr.s = b"mirror"
    onnx.save(model, bad / "bad_attribute.onnx")
    ascend.to_ascend(models.decoder_step(), soc="Ascend910B1", out_dir=bad)  # bad/model.ascend.onnx
    grid = models.grid_sampler_2d_grad()
    _save_dynamic(grid, bad / "grid_shared_n.onnx",
                  {"grad_output": ["N", "C", "H", "W"], "input": ["N", "C", "h", "w"], "grid": ["N", "H", "W", 2]})
    _save_dynamic(models.grid_sampler_2d_grad(), bad / "grid_own_dims.onnx",
                  {"grad_output": ["a", "b", "c", "d"], "input": ["e", "f", "g", "h"], "grid": ["i", "j", "k", 2]})
    _save_dynamic(models.upsample_nearest_exact1d_grad(), bad / "nearest1d_dynamic.onnx",
                  {"grad_output": ["N", "C", "L"]})
    _save_dynamic(models.spatial_transformer_step(), bad / "transformer_dynamic.onnx",
                  {"x": ["N", "C", "H", "W"], "theta": ["N", 2, 3], "target": ["N", "C", "h", "w"]})
    return {"models": model_dir, "bad": bad}


def _fill(arguments, files, out):
    return [a.format(models=files["models"], bad=files["bad"], out=out) for a in arguments]


def _one_error_line(code: int, stderr: str) -> str:
    assert code == cli.EXIT_BAD_INPUT, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("resample-grad: error: ")
    return lines[0]


def _nothing_written(files, out) -> None:
    assert list(out.iterdir()) == []
    assert not list(files["models"].glob("*.outputs.npz"))  # run's default output, next to the model


def test_the_table_covers_every_subcommand():
    covered = {row[1][0] for row in ROWS if row[1]}
    assert covered >= set(SUBCOMMANDS), set(SUBCOMMANDS) - covered
    assert set(SUBCOMMANDS) == {a.dest for a in cli.parser()._subparsers._group_actions[0]._choices_actions}


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_bad_input_is_one_error_line(row, files, tmp_path, capfd):
    _, arguments, text = row
    out = tmp_path / "out"
    out.mkdir()
    code = cli.main(_fill(arguments, files, out))
    captured = capfd.readouterr()
    line = _one_error_line(code, captured.err)
    assert text.format(models=files["models"], bad=files["bad"], out=out) in line
    assert captured.out == ""
    _nothing_written(files, out)


SUBPROCESS_ROWS = ["unknown-command", "demo-threads-negative", "run-inputs-extra", "run-functions-dynamic-batch",
                   "check-converted", "inspect-directory", "bench-threads-zero", "convert-family-soc"]


def _no_torch_env(tmp_path) -> dict:
    """An environment whose `import torch` fails as it does where torch is not installed."""
    blocker = tmp_path / "no_torch" / "torch"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    path = os.pathsep.join(filter(None, [str(blocker.parent), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


@pytest.mark.parametrize("case", SUBPROCESS_ROWS + ["bench-without-torch"])
def test_bad_input_as_a_process(case, files, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = None
    if case == "bench-without-torch":
        arguments, text = ["bench", "--quick"], "PyTorch is not installed and the torch column needs it"
        env = _no_torch_env(tmp_path)
    else:
        _, arguments, text = next(row for row in ROWS if row[0] == case)
    result = subprocess.run([sys.executable, "-m", "resample_grad", *_fill(arguments, files, out)], capture_output=True,
                            text=True, timeout=600, env=env)
    line = _one_error_line(result.returncode, result.stderr)
    assert text.format(models=files["models"], bad=files["bad"], out=out) in line
    _nothing_written(files, out)


def test_export_without_torch_says_so(tmp_path):
    code = "from resample_grad import converters\nconverters.export(lambda x: x, ())\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_no_torch_env(tmp_path),
                            timeout=600)
    assert result.returncode == 1
    assert "ImportError: resample_grad.converters.export needs PyTorch, which is not installed" in result.stderr


def test_every_option_shows_its_default():
    """Every --help names each option's default (flags are off unless given; required options have none)."""
    parser = cli.parser()
    for name, sub in [("", parser)] + list(parser._subparsers._group_actions[0].choices.items()):
        for action in sub._actions:
            if not action.option_strings or action.required or action.nargs == 0:
                continue  # positionals, required options, flags, --help, --version
            if action.dest == "source":
                continue  # convert --from: a direction, absent unless given
            assert "(default: " in (action.help or ""), f"{name} {action.option_strings}"
