"""resample_grad.constants: importable without onnx and numpy, and its facts agree with the C++ library,
with aten's mode codes and with onnxruntime."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

from conftest import run_model
from resample_grad import _ort_probe, constants, runtime


def test_constants_import_without_onnx_or_numpy():
    """resample_grad.training imports it under onnx 1.16 (no resample_grad.opset there): standard library only."""
    code = ("import sys\nsys.modules['onnx'] = sys.modules['numpy'] = None\n"
            "import resample_grad.constants as c\nprint(c.DOMAIN)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == constants.DOMAIN


def test_the_native_library_registers_the_domain():
    """A node in constants.DOMAIN with no function body attached runs only if the C++ library registers that
    domain (runtime/src's kDomain); it gives what the NumPy reference gives."""
    node = helper.make_node("UpsampleNearestExact1dGrad", ["grad_output"], ["grad_input"], domain=constants.DOMAIN,
                            input_size=[1, 1, 3], output_size=[5])
    graph = helper.make_graph([node], "domain", [helper.make_tensor_value_info("grad_output", onnx.TensorProto.FLOAT,
                                                                               [1, 1, 5])],
                              [helper.make_tensor_value_info("grad_input", onnx.TensorProto.FLOAT, [1, 1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(constants.DOMAIN, constants.VERSION)])
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(runtime.library_path())
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"grad_output": np.arange(1.0, 6.0, dtype=np.float32).reshape(1, 1, 5)}
    (kernel,) = session.run(None, feeds)
    (reference,) = run_model(model, feeds, "reference")
    np.testing.assert_array_equal(kernel, reference)
    assert float(kernel.sum()) == 15.0  # every grad_output element lands in one input pixel


@pytest.mark.parametrize("kind", ["interpolation", "padding"])
def test_mode_codes_are_atens(kind):
    """A mode's code is aten's: torch.grid_sampler(x, grid, code, ...) equals F.grid_sample(x, grid, name)."""
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 2, 4, 5, generator=generator, dtype=torch.float64)
    grid = torch.rand(1, 3, 3, 2, generator=generator, dtype=torch.float64) * 2.6 - 1.3  # some points outside
    codes = constants.INTERPOLATION_CODE if kind == "interpolation" else constants.PADDING_CODE
    assert list(codes) == list(constants.INTERPOLATION_MODES if kind == "interpolation" else constants.PADDING_MODES)
    outputs = set()
    for name, code in codes.items():
        mode, padding = (name, "zeros") if kind == "interpolation" else ("bilinear", name)
        by_code = torch.grid_sampler(x, grid, code if kind == "interpolation" else 0,
                                     code if kind == "padding" else 0, False)
        by_name = torch.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)
        torch.testing.assert_close(by_code, by_name, rtol=0, atol=0)
        outputs.add(by_code.numpy().tobytes())
    assert len(outputs) == len(codes)  # the modes differ on these points, so a swapped code would fail


def test_ir_probe_returns_the_newest_version_onnxruntime_opens():
    newest = _ort_probe.max_ir_version(onnxruntime)
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])

    def opens(ir: int) -> bool:
        model = helper.make_model(graph, ir_version=ir, opset_imports=[helper.make_opsetid("", 18)])
        try:
            onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - onnxruntime's refusal
            return False
        return True

    assert constants.FUNCTION_IR_VERSION <= newest <= onnx.IR_VERSION
    assert opens(newest)
    assert newest == onnx.IR_VERSION or not opens(newest + 1)
