"""The command line, run as a subprocess on the example models."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from resample_grad import models, opset
from resample_grad.paths import random_inputs, run_on


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "resample_grad", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    models.build_all(out)
    return out


def test_demo_end_to_end_in_a_clean_folder(tmp_path):
    result = cli("demo", "--out", tmp_path / "demo", "--threads", 1)
    assert result.returncode == 0, result.stderr
    assert "all paths agree with the reference" in result.stdout
    out = (tmp_path / "demo").resolve()
    assert f"models in {out}/, Ascend files in {out}/ascend/" in result.stdout
    for name in models.BUILDERS:
        assert (out / f"{name}.onnx").is_file() and (out / f"{name}.inputs.npz").is_file()
        line = next(line for line in result.stdout.splitlines() if line.startswith(name + " "))
        if name in NOT_CONVERTED:  # the refusal is a numbered note under the table
            note = line.split("not converted ")[1].strip()
            assert f"\n{note} {name}: to_ascend: {NOT_CONVERTED[name]}" in result.stdout, result.stdout
            continue
        # the Ascend column's path, relative to the printed folder, is where the files are
        shown = line.split(" -> ")[1].strip()
        assert shown == f"ascend/{name}/" and (out / shown / "model.ascend.onnx").is_file(), line
    assert result.stderr == ""  # progress lines only on a terminal


# models the Ascend converter refuses as a whole, with the start of its reason
NOT_CONVERTED = {}  # none: registration_step's 5-D GridSample and Resize become GE forward ops


def test_demo_inputs_files_check_the_models(model_dir):
    """build_all writes each model's example inputs: `check --inputs` runs a model random inputs cannot
    (its scales are fed at run time)."""
    result = cli("check", model_dir / "resize_training_step.onnx",
                 "--inputs", model_dir / "resize_training_step.inputs.npz")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("agree")


def test_demo_defaults_to_a_fresh_temporary_folder(tmp_path):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    result = subprocess.run([sys.executable, "-m", "resample_grad", "demo"], capture_output=True, text=True,
                            cwd=tmp_path / "cwd", env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert list((tmp_path / "cwd").iterdir()) == []  # nothing written where the user stands
    (made,) = (tmp_path / "tmp").glob("resample-grad-demo-*")
    assert f"models in {made.resolve()}/" in result.stdout and (made / "decoder_step.onnx").is_file()


def test_progress_only_on_a_terminal(model_dir, tmp_path):
    """Progress lines go to stderr when it is a terminal; piped, stderr holds nothing but errors."""
    import pty
    leader, follower = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "resample_grad", "run", model_dir / "decoder_step.onnx", "-o",
                                 tmp_path / "out.npz"], stdout=subprocess.PIPE, stderr=follower, timeout=600)
        os.close(follower)
        written = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: everything has been read
                break
            if not chunk:
                break
            written += chunk
    finally:
        os.close(leader)
    assert result.returncode == 0
    assert b"... running" in written
    piped = cli("run", model_dir / "decoder_step.onnx", "-o", tmp_path / "out.npz")
    assert piped.returncode == 0 and piped.stderr == ""


@pytest.mark.parametrize("command", ["demo", "run", "check", "inspect", "bench", "convert"])
def test_every_subcommand_has_help(command):
    result = cli(command, "--help")
    assert result.returncode == 0
    assert "usage: resample-grad" in result.stdout


def test_run_writes_outputs(model_dir, tmp_path):
    out = tmp_path / "out.npz"
    result = cli("run", model_dir / "decoder_step.onnx", "--path", "kernels", "--threads", "2", "-o", out)
    assert result.returncode == 0, result.stderr
    assert "grad_z: shape [2, 8, 8, 8]" in result.stdout
    with np.load(out) as data:
        assert set(data.files) == {"loss", "grad_z"}


def test_run_with_inputs_file_on_functions(model_dir, tmp_path):
    rng = np.random.default_rng(0)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, grad_output=rng.standard_normal((2, 16, 50, 45)).astype(np.float32))
    out = tmp_path / "out.npz"
    result = cli("run", model_dir / "upsample_nearest_exact2d_grad.onnx", "--inputs", inputs, "--path", "functions",
                 "-o", out)
    assert result.returncode == 0, result.stderr
    with np.load(out) as data:
        expected = opset.OPS["UpsampleNearestExact2dGrad"].reference(
            np.load(inputs)["grad_output"], input_size=[2, 16, 20, 30], scales_h=2.5, scales_w=1.5)
        np.testing.assert_allclose(data["grad_input"], expected, rtol=1e-5, atol=1e-6)


def test_check_reports_each_output(model_dir):
    result = cli("check", model_dir / "spatial_transformer_step.onnx")
    assert result.returncode == 0, result.stderr
    for name in ("loss", "grad_x", "grad_theta"):
        assert name in result.stdout
    assert result.stdout.strip().endswith("agree")


def test_inspect_lists_nodes_and_shapes(model_dir):
    result = cli("inspect", model_dir / "decoder_step.onnx")
    assert result.returncode == 0, result.stderr
    assert "2 in the resample_grad domain" in result.stdout
    assert "ResizeBilinearV2Grad 'bilinear_backward' (align_corners=0, half_pixel_centers=1)" in result.stdout
    assert "out grad_z: [2, 8, 8, 8]" in result.stdout


def _one_error_line(result):
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("resample-grad: error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


def test_corrupted_model_is_one_clear_error(tmp_path):
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf \xff\xfe" * 10)
    line = _one_error_line(cli("check", bad))
    assert "corrupt.onnx" in line and "not a readable ONNX model" in line


def test_missing_model_is_one_clear_error(tmp_path):
    line = _one_error_line(cli("run", tmp_path / "nothing.onnx"))
    assert "no such file" in line


def test_bad_attribute_is_one_clear_error(model_dir, tmp_path):
    model = onnx.load(model_dir / "grid_sampler_2d_grad.onnx")
    for attr in model.graph.node[0].attribute:
        if attr.name == "padding_mode":
            attr.s = b"mirror"
    bad = tmp_path / "bad_attribute.onnx"
    onnx.save(model, bad)
    for command in ("run", "inspect"):
        line = _one_error_line(cli(command, bad))
        assert ("GridSampler2DGrad: attribute 'padding_mode' must be one of 'zeros', 'border', 'reflection', "
                "got 'mirror'") in line


def test_version_is_the_package_metadata():
    import pathlib
    import re

    import resample_grad
    pyproject = (pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert resample_grad.__version__ == re.search(r'^version = "(.+)"$', pyproject, re.M).group(1)
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == resample_grad.__version__


def test_run_summarises_a_scalar_output(model_dir, tmp_path):
    result = cli("run", model_dir / "decoder_step.onnx", "-o", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as data:
        loss = float(data["loss"])
    line = next(line for line in result.stdout.splitlines() if line.startswith("loss:"))
    assert line == f"loss: shape [] dtype float32 min {loss:.4g} max {loss:.4g}"


def test_convert_to_ascend_and_back(model_dir, tmp_path):
    to = cli("convert", model_dir / "decoder_step.onnx", "--soc", "ascend910b3", "-o", tmp_path / "ascend")
    assert to.returncode == 0, to.stderr
    assert "--soc_version=Ascend910B3 " in (tmp_path / "ascend" / "atc.sh").read_text()  # ATC's spelling
    back = cli("convert", tmp_path / "ascend" / "model.ascend.onnx", "--from", "ascend", "-o", tmp_path / "back.onnx")
    assert back.returncode == 0, back.stderr
    assert "resample_grad ops ResizeBilinearV2Grad, UpsampleNearestExact2dGrad" in back.stdout
    model = onnx.load(model_dir / "decoder_step.onnx")
    feeds = random_inputs(model)
    original = run_on(model, feeds, "kernels")
    returned = run_on(onnx.load(tmp_path / "back.onnx"), feeds, "kernels")
    for name in original:
        np.testing.assert_array_equal(returned[name], original[name])
