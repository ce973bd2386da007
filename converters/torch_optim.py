"""A torch.optim optimizer's update as torch operations, for export_training_step(..., optimizer=...): the exported
step then holds the update, and a plain onnxruntime session trains (resample_grad.training.Trainer).

    plan = optimizer_plan(optimizer, params)       # SGD (momentum, dampening, nesterov, weight decay), Adam, AdamW
    state = plan.initial_state(params)             # {input name: tensor}: per-parameter slots, the step count, the lr
    new_params, new_state = plan.update(params, grads, state)

Each update is the formula of torch 2.13's single-tensor implementation (torch/optim/sgd.py _single_tensor_sgd,
torch/optim/adam.py _single_tensor_adam, which AdamW runs with decoupled_weight_decay=True), as functional
operations in the same order; the scalars torch computes in Python doubles (bias corrections, step size) are
computed in float64 and rounded to the parameter's dtype where torch rounds them. State names:

    optimizer.<parameter>.momentum_buffer                   SGD with momentum
    optimizer.<parameter>.exp_avg, .exp_avg_sq (, .max_exp_avg_sq with amsgrad)    Adam, AdamW
    optimizer.step                                          steps taken (int64): Adam's bias correction; SGD's first
                                                            step, which takes the gradient as the momentum buffer
    optimizer.learning_rate                                 float32 scalar, an input only: schedules feed it
"""
from __future__ import annotations

import dataclasses

from resample_grad.constants import LEARNING_RATE_INPUT as LEARNING_RATE
from resample_grad.constants import OPTIMIZER_PREFIX as PREFIX
from resample_grad.constants import STEP_INPUT as STEP

# torch.optim class name -> its per-parameter state slots (amsgrad adds max_exp_avg_sq)
SLOTS = {"SGD": ("momentum_buffer",), "Adam": ("exp_avg", "exp_avg_sq"), "AdamW": ("exp_avg", "exp_avg_sq")}


def _refused(name: str, reason: str):
    from .torch_export import ExportRefused

    return ExportRefused(name, reason)


@dataclasses.dataclass
class OptimizerPlan:
    """One param group's hyperparameters and the slots each parameter keeps."""

    kind: str  # "SGD", "Adam" or "AdamW"
    group: dict  # torch's param group, without its params
    slots: tuple
    torch_state: dict  # parameter name -> torch's state of it (empty before the optimizer's first step)

    def slot_names(self, param: str) -> list:
        return [f"{PREFIX}{param}.{slot}" for slot in self.slots]

    def initial_state(self, params: dict) -> dict:
        """{state input name: tensor}: the optimizer's current state (zeros where it has none yet), the step count
        and the learning rate."""
        import torch

        state, steps = {}, set()
        for name, param in params.items():
            kept = self.torch_state.get(name, {})
            for slot, input_name in zip(self.slots, self.slot_names(name), strict=True):
                value = kept.get(slot)
                state[input_name] = (torch.zeros_like(param) if value is None else value.detach().clone()).contiguous()
            if "step" in kept:
                steps.add(int(kept["step"]))
            elif kept:  # SGD keeps no step count: a momentum buffer means at least one step was taken
                steps.add(1)
        if len(steps) > 1:
            raise _refused(f"torch.optim.{self.kind}", f"its parameters have taken different numbers of steps "
                                                       f"({sorted(steps)}); expected one step count for the group")
        state[STEP] = torch.tensor(steps.pop() if steps else 0, dtype=torch.int64)
        state[LEARNING_RATE] = torch.tensor(float(self.group["lr"]), dtype=torch.float32)
        return state

    def update(self, params: dict, grads: dict, state: dict) -> tuple[dict, dict]:
        """(new parameters, new state without the learning rate), functional torch operations."""
        step = state[STEP] + 1
        new_params, new_state = {}, {}
        for name, param in params.items():
            slots = dict(zip(self.slots, (state[n] for n in self.slot_names(name)), strict=True))
            grad = -grads[name] if self.group.get("maximize", False) else grads[name]
            update = self._sgd if self.kind == "SGD" else self._adam
            new_params[name], slots = update(param, grad, slots, state[STEP], step, state[LEARNING_RATE])
            new_state.update(zip(self.slot_names(name), (slots[s] for s in self.slots), strict=True))
        new_state[STEP] = step
        return new_params, new_state

    def _sgd(self, param, grad, slots, before, step, lr):
        """_single_tensor_sgd: weight decay, momentum (the gradient itself on the first step), nesterov."""
        import torch

        g = self.group
        if g["weight_decay"] != 0:
            grad = grad + g["weight_decay"] * param
        if g["momentum"] != 0:
            buf = slots["momentum_buffer"]
            buf = torch.where(before == 0, grad, buf * g["momentum"] + (1 - g["dampening"]) * grad)
            slots = {"momentum_buffer": buf}
            grad = grad + g["momentum"] * buf if g["nesterov"] else buf
        return param - lr.to(param.dtype) * grad, slots

    def _adam(self, param, grad, slots, before, step, lr):
        """_single_tensor_adam (capturable=False): decoupled (AdamW) or L2 weight decay, the moments, amsgrad,
        bias corrections in float64 as torch's Python floats."""
        import torch

        g = self.group
        beta1, beta2 = (float(b) for b in g["betas"])
        lr64 = lr.double()
        if g["weight_decay"] != 0:
            if self.kind == "AdamW" or g.get("decoupled_weight_decay", False):
                param = param * (1 - lr64 * g["weight_decay"]).to(param.dtype)
            else:
                grad = grad + g["weight_decay"] * param
        exp_avg = torch.lerp(slots["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = slots["exp_avg_sq"] * beta2 + (1 - beta2) * grad * grad
        new = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        if g.get("amsgrad", False):
            exp_avg_sq = new["max_exp_avg_sq"] = torch.maximum(slots["max_exp_avg_sq"], exp_avg_sq)
        count = step.double()
        step_size = lr64 / (1 - beta1 ** count)
        denom = exp_avg_sq.sqrt() / torch.sqrt(1 - beta2 ** count).to(param.dtype) + g["eps"]
        return param - step_size.to(param.dtype) * exp_avg / denom, new  # (addcdiv: value * t1 / t2)


def optimizer_plan(optimizer, params: dict) -> OptimizerPlan:
    """The plan of a torch.optim SGD, Adam or AdamW over exactly the module's trainable parameters (params: name ->
    parameter); ExportRefused names any other optimizer, TypeError / ValueError what else does not fit."""
    import torch

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"export_training_step: optimizer must be a torch.optim.Optimizer (SGD, Adam or AdamW) over "
                        f"the module's parameters, got {type(optimizer).__name__}")
    kind = type(optimizer).__name__
    if type(optimizer) not in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
        raise _refused(f"{type(optimizer).__module__}.{kind}", "only torch.optim.SGD, Adam and AdamW are translated "
                                                                "into the step (their update formulas exactly)")
    if len(optimizer.param_groups) != 1:
        raise ValueError(f"export_training_step: the optimizer has {len(optimizer.param_groups)} parameter groups; "
                         "expected one (the exported step has one learning rate input)")
    group = optimizer.param_groups[0]
    names = {id(p): n for n, p in params.items()}
    given = [names.get(id(p)) for p in group["params"]]
    if None in given or len(set(given)) != len(params):
        missing = sorted(set(params) - set(given))
        raise ValueError("export_training_step: the optimizer's parameters must be the module's trainable parameters"
                         + (f"; it lacks {missing[:5]}" if missing else "; it has tensors that are not among them"))
    if any(p.is_complex() for p in params.values()):
        raise ValueError("export_training_step: complex parameters are not translated into the optimizer's update")
    hyper = {k: v for k, v in group.items() if k != "params"}
    hyper["lr"] = float(hyper["lr"])
    slots = SLOTS[kind] + (("max_exp_avg_sq",) if kind != "SGD" and hyper.get("amsgrad", False) else ())
    if kind == "SGD" and hyper["momentum"] == 0:
        slots = ()
    state = {names[id(p)]: dict(optimizer.state[p]) for p in group["params"] if p in optimizer.state}
    return OptimizerPlan(kind, hyper, slots, state)
