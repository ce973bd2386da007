"""Converts WORKDIR/model.onnx with onnx2tf and runs it on TensorFlow and on its .tflite (the LiteRT interpreter).

Run by the python of the onnx2tf venv (.venv-onnx2tf: onnx2tf pins onnx 1.19 and numpy 1.26, so it cannot share
.venv), from tests/portable/runtimes.py: `python onnx2tf_driver.py WORKDIR`. Reads WORKDIR/feeds.npz (the model's
inputs by name), writes WORKDIR/tf.npz and WORKDIR/tflite.npz (the outputs by name), or WORKDIR/error.txt with the
conversion's exception. Every input keeps its ONNX shape (keep_shape_absolutely_input_names): onnx2tf would otherwise
read a 4-D input as NCHW and transpose it to NHWC.
"""
from __future__ import annotations

import pathlib
import sys
import traceback

import numpy as np
import onnx


def main(workdir: pathlib.Path) -> None:
    import onnx2tf
    from ai_edge_litert.interpreter import Interpreter

    model = onnx.load(workdir / "model.onnx")
    feeds = dict(np.load(workdir / "feeds.npz"))
    initialized = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initialized]
    outputs = [o.name for o in model.graph.output]
    try:
        keras_model = onnx2tf.convert(input_onnx_file_path=str(workdir / "model.onnx"),
                                      output_folder_path=str(workdir / "tf"), keep_shape_absolutely_input_names=inputs,
                                      copy_onnx_input_output_names_to_tflite=True, output_signaturedefs=True,
                                      non_verbose=True)
    except Exception:  # noqa: BLE001 - the conversion's own error is the result
        (workdir / "error.txt").write_text(traceback.format_exc())
        return
    results = keras_model([feeds[name] for name in inputs])
    results = results if isinstance(results, (list, tuple)) else [results]
    np.savez(workdir / "tf.npz", **{name: np.asarray(r) for name, r in zip(outputs, results, strict=True)})

    runner = Interpreter(model_path=str(workdir / "tf" / "model_float32.tflite")).get_signature_runner()
    lite = runner(**{name: feeds[name] for name in inputs})
    np.savez(workdir / "tflite.npz", **{name: np.asarray(lite[name]) for name in outputs})


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
