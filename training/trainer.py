"""Training on plain onnxruntime: a step model that holds its optimizer's update, run step after step in one
InferenceSession, the parameters and the optimizer state kept in onnxruntime between steps.

    trainer = Trainer("step.onnx")                  # converters.export_training_step(..., optimizer=...)'s model
    loss = trainer.step(batch, target)              # one step: forward, backward, optimizer update
    trainer.learning_rate = 1e-3                    # a schedule: the learning rate is an input of the step
    trainer.parameters()                            # {name: numpy array}: the parameters and buffers
    trainer.save("checkpoint.safetensors")          # every state tensor, in the safetensors format
    trainer = Trainer.load("checkpoint.safetensors")   # (the step model named in it, or given as the second argument)
    trainer.export_inference_model("model.onnx")    # the eval-mode forward with the trained weights

Needs onnxruntime (any build: plain onnxruntime, not onnxruntime-training) and onnx; not torch. The step model's
conventions (resample_grad.constants): a state input X (a parameter, a buffer, an optimizer state: the inputs with
an initializer, which holds the starting value) that the step changes has the output X_updated; the other inputs
(input_k, target_k) are the batch. Each step binds the outputs X_updated to the OrtValues of the spare set and
swaps the two sets afterwards, so the state never leaves onnxruntime's memory (IO binding, no host copy).
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import onnx

from resample_grad.constants import (
    INFERENCE_DOMAIN,
    INFERENCE_FUNCTION,
    LEARNING_RATE_INPUT,
    OPTIMIZER_PREFIX,
    STEP_INPUT,
    UPDATED,
)

from . import _safetensors

CHECKPOINT_FORMAT = {"format": "resample_grad.training.Trainer"}  # the checkpoint's safetensors metadata
STEP_MODEL_KEY = "step_model"  # checkpoint metadata: the step model's file, when the Trainer was made from one


def _load_model(step_model) -> onnx.ModelProto:
    if isinstance(step_model, onnx.ModelProto):
        return step_model
    if isinstance(step_model, (str, os.PathLike)):
        if not pathlib.Path(step_model).is_file():
            raise FileNotFoundError(f"Trainer: cannot read step model {os.fspath(step_model)!r}: no such file")
        return onnx.load(os.fspath(step_model))
    raise TypeError(f"Trainer: step_model must be an onnx.ModelProto or a path, got {type(step_model).__name__}")


class Trainer:
    """Trains a step model (converters.export_training_step(..., optimizer=...)) on plain onnxruntime.

    kernels: True (the default) runs the resample_grad ops on the native library when it loads, False on the
    portable functions the model carries. threads: intra-op threads (0: onnxruntime's default)."""

    def __init__(self, step_model, *, kernels: bool = True, threads: int = 0):
        from resample_grad import runtime

        self._ort = runtime.require_onnxruntime()
        model = _load_model(step_model)
        inputs = {i.name: i for i in model.graph.input}
        outputs = {o.name for o in model.graph.output}
        starts = {t.name: t for t in model.graph.initializer if t.name in inputs}
        if LEARNING_RATE_INPUT not in inputs or STEP_INPUT not in inputs or "loss" not in outputs:
            raise ValueError(
                "Trainer: the step model has no optimizer (expected the inputs optimizer.step and "
                "optimizer.learning_rate and the output loss): export it with "
                "converters.export_training_step(module, loss_fn, inputs, targets, optimizer=torch.optim...)")
        self.batch_names = [n for n in inputs if n not in starts]
        self.carried = [n for n in starts if n + UPDATED in outputs]
        self.extra_outputs = [o for o in outputs if o != "loss" and not (o.endswith(UPDATED) and
                                                                          o[:-len(UPDATED)] in starts)]
        self._inputs, self._model = inputs, model
        self._source = (os.path.abspath(os.fspath(step_model)) if isinstance(step_model, (str, os.PathLike))
                        else None)
        session_model = onnx.ModelProto()
        session_model.CopyFrom(model)
        kept = [t for t in session_model.graph.initializer if t.name not in starts]  # state: fed, not constants
        del session_model.graph.initializer[:]
        session_model.graph.initializer.extend(kept)
        data = session_model.SerializeToString()
        self._session = None
        if kernels:
            try:
                self._session = runtime.session(data, threads=threads)
            except FileNotFoundError:  # no native library here (a source tree without the build): the functions
                pass
        if self._session is None:
            options = self._ort.SessionOptions()
            if threads:
                options.intra_op_num_threads = threads
            self._session = self._ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        self._state = {n: self._value(onnx.numpy_helper.to_array(t)) for n, t in starts.items()}
        self._spare = {n: self._value(np.zeros_like(onnx.numpy_helper.to_array(starts[n]))) for n in self.carried}
        loss_type = next(o for o in model.graph.output if o.name == "loss").type.tensor_type.elem_type
        self._loss = self._value(np.zeros((), onnx.helper.tensor_dtype_to_np_dtype(loss_type)))

    def _value(self, array: np.ndarray):
        return self._ort.OrtValue.ortvalue_from_numpy(np.array(array, order="C"))  # (a copy that the OrtValue keeps)

    # ----------------------------------------------------------------------- training

    def step(self, *batch) -> float:
        """One training step on the batch (the step model's input_k then target_k, numpy arrays); the loss."""
        if len(batch) != len(self.batch_names):
            raise TypeError(f"Trainer.step: expected {len(self.batch_names)} arrays ({', '.join(self.batch_names)}), "
                            f"got {len(batch)}")
        binding = self._session.io_binding()
        arrays = [np.ascontiguousarray(value) for value in batch]  # (alive until the run: bound, not copied)
        for name, array in zip(self.batch_names, arrays, strict=True):
            self._check(name, array)
            binding.bind_cpu_input(name, array)
        for name, value in self._state.items():
            binding.bind_ortvalue_input(name, value)
        for name in self.carried:
            binding.bind_ortvalue_output(name + UPDATED, self._spare[name])
        binding.bind_ortvalue_output("loss", self._loss)
        for name in self.extra_outputs:  # (grad_input_k: computed, not kept)
            binding.bind_output(name, "cpu")
        self._session.run_with_iobinding(binding)
        for name in self.carried:
            self._state[name], self._spare[name] = self._spare[name], self._state[name]
        return float(self._loss.numpy())

    def _check(self, name: str, array: np.ndarray) -> None:
        tensor = self._inputs[name].type.tensor_type
        want = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if array.dtype != want or array.ndim != len(dims) or any(d not in (None, n) for d, n in zip(dims, array.shape,
                                                                                                     strict=False)):
            shape = [d if d is not None else "?" for d in dims]
            raise ValueError(f"Trainer.step: {name} must be {np.dtype(want).name} of shape {shape}, got "
                             f"{array.dtype} of shape {list(array.shape)}")

    @property
    def learning_rate(self) -> float:
        return float(self._state[LEARNING_RATE_INPUT].numpy())

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        self._state[LEARNING_RATE_INPUT] = self._value(np.array(value, np.float32))

    @property
    def steps(self) -> int:
        """Optimizer steps taken (optimizer.step)."""
        return int(self._state[STEP_INPUT].numpy())

    # ----------------------------------------------------------------------- state

    def state(self) -> dict[str, np.ndarray]:
        """Every state tensor by input name (parameters, buffers, optimizer state, step, learning rate): copies."""
        return {name: value.numpy().copy() for name, value in self._state.items()}

    def parameters(self) -> dict[str, np.ndarray]:
        """The module's parameters and buffers, named as its state_dict (frozen parameters are constants of the step
        and not among them): copies, for torch's module.load_state_dict(..., strict=False) as tensors."""
        return {name: value for name, value in self.state().items() if not name.startswith(OPTIMIZER_PREFIX)}

    def save(self, path) -> None:
        """The state (as state()) in the safetensors format at path; its metadata names the step model's file when
        the Trainer was made from one (STEP_MODEL_KEY)."""
        source = {STEP_MODEL_KEY: self._source} if self._source else {}
        _safetensors.save(path, self.state(), {**CHECKPOINT_FORMAT, **source})

    @classmethod
    def load(cls, path, step_model=None, **kwargs) -> Trainer:
        """A Trainer of step_model (default: the file the checkpoint names) with the state that save() wrote to
        path; kwargs as Trainer's."""
        tensors, metadata = _safetensors.load(path)
        if step_model is None:
            step_model = metadata.get(STEP_MODEL_KEY)
            if step_model is None:
                raise ValueError(f"Trainer.load: checkpoint {os.fspath(path)!r} names no step model file (its Trainer "
                                 "was made from a ModelProto): pass step_model")
        trainer = cls(step_model, **kwargs)
        missing, extra = sorted(set(trainer._state) - set(tensors)), sorted(set(tensors) - set(trainer._state))
        if missing or extra:
            raise ValueError(f"Trainer.load: checkpoint {os.fspath(path)!r} does not fit the step model: "
                             + "; ".join(f"{what} {names[:5]}" for what, names in (("it lacks", missing),
                                                                                   ("it has unknown", extra)) if names))
        for name, array in tensors.items():
            have = trainer._state[name]
            if list(array.shape) != list(have.shape()) or array.dtype != have.numpy().dtype:
                raise ValueError(f"Trainer.load: checkpoint {os.fspath(path)!r} has {name} as {array.dtype} "
                                 f"{list(array.shape)}; the step model takes {have.numpy().dtype} {have.shape()}")
            trainer._state[name] = trainer._value(array)
        return trainer

    # ----------------------------------------------------------------------- inference

    def export_inference_model(self, path=None) -> onnx.ModelProto:
        """The eval-mode forward the step model carries (resample_grad.training::inference), as a model: inputs
        input_k, outputs output_k, the trained parameters and buffers as initializers. Saved to path when given."""
        function = next((f for f in self._model.functions
                         if (f.domain, f.name) == (INFERENCE_DOMAIN, INFERENCE_FUNCTION)), None)
        if function is None:
            raise ValueError("Trainer.export_inference_model: the step model carries no inference function "
                             f"({INFERENCE_DOMAIN}::{INFERENCE_FUNCTION}); export it with "
                             "converters.export_training_step(..., optimizer=...)")
        state = self.state()
        used = {name for node in function.node for name in node.input}
        graph = onnx.helper.make_graph(
            list(function.node), "inference", [self._inputs[n] for n in function.input if n not in state],
            [onnx.helper.make_empty_tensor_value_info(n) for n in function.output],
            [onnx.numpy_helper.from_array(state[n], n) for n in function.input if n in state and n in used])
        functions = [f for f in self._model.functions if f.domain != INFERENCE_DOMAIN]
        model = onnx.helper.make_model(graph, opset_imports=list(function.opset_import), functions=functions,
                                       ir_version=self._model.ir_version, producer_name="resample_grad.training")
        inferred = onnx.shape_inference.infer_shapes(model)
        del model.graph.output[:]
        model.graph.output.extend(inferred.graph.output)
        if path is not None:
            onnx.save(model, os.fspath(path))
        return model
