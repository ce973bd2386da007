"""Training steps of every torch.nn.functional loss and of the layers modern vision models are made of, through
converters.export_training_step, against torch autograd on both paths (native kernels, onnxscript functions).

One table, ROWS: each row is one small training step (a Linear or a convolution in front, so each gradient sums over
a batch and a wrong scale shows). The rows are exported in a few bundles (one export of several rows' modules side
by side, their losses summed: the exporter's fixed cost dominates small steps) and run on both paths; each row's
parameter gradients and updated buffers, and the bundle's loss, must match torch autograd to RTOL relative
(test_training_step.assert_matches). A row whose step cannot be exported exactly is in REFUSED: its export must
raise an error naming the aten op. The verification export does by default is tested at the end. Attention rows cover
F.scaled_dot_product_attention in every form, as a training step and as a lone torch.func.vjp; dropout with p > 0
is random, so its rows check statistics (kept fraction, scaling) and that the forward and backward share one mask.
"""
from __future__ import annotations

import functools

import numpy as np
import onnxruntime
import pytest
from test_training_step import assert_matches

from resample_grad import converters, runtime

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
N, C = 4, 5  # batch, classes


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=_gen(seed))


def _classes(*shape, seed=1, ignore=None):
    """Class indices in [0, C); with ignore, every third is that ignore_index."""
    target = torch.randint(0, C, shape, generator=_gen(seed))
    if ignore is not None:
        target.view(-1)[::3] = ignore
    return target


class Head(nn.Module):
    """A Linear on [*, 3] inputs, then `post` (sigmoid for probabilities, ...): the prediction a loss is taken of."""

    def __init__(self, out, post=None):
        super().__init__()
        self.linear, self.post = nn.Linear(3, out), post

    def forward(self, x):
        y = self.linear(x)
        return self.post(y) if self.post else y


def _loss_row(call, out=C, post=None, batch=(N,), targets=(), seed=0, more=()):
    """(module, loss_fn, inputs, targets): Head(out, post) on a [*batch, 3] input; more: extra inputs passed through
    (a second and third embedding of the pairwise losses), each through its own Linear."""
    def build():
        torch.manual_seed(seed)
        module = Pair(out, post, len(more)) if more else Head(out, post)
        inputs = [_randn(*batch, 3, seed=seed), *more]
        return module, call, inputs, [t() if callable(t) else t for t in targets]
    return build


class Pair(nn.Module):
    """Heads for the pairwise and triplet losses: each input through its own Linear."""

    def __init__(self, out, post, extra):
        super().__init__()
        self.heads = nn.ModuleList([Head(out, post) for _ in range(1 + extra)])

    def forward(self, *xs):
        return tuple(head(x) for head, x in zip(self.heads, xs, strict=False))


def _weighted(loss):
    """A reduction='none' loss as a scalar: weighted by fixed values, so each element's gradient differs."""
    w = torch.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape)
    return (loss * w).sum()


def _probs(*shape, seed=2):
    return torch.rand(*shape, generator=_gen(seed))


def _soft_targets(seed=2):
    return torch.softmax(_randn(N, C, seed=seed), 1)


def _signs(*shape, seed=3):
    return torch.randint(0, 2, shape, generator=_gen(seed)).float() * 2 - 1


def _multilabel_margin_target():
    """Class indices, each row ended by -1 (what follows is ignored)."""
    return torch.tensor([[3, 0, -1, 1, 2], [1, 2, 4, -1, 0], [0, -1, 3, 3, 3], [4, 3, 2, 1, 0]])


W = torch.tensor([0.2, 1.0, 2.0, 0.7, 1.3])  # class weights
W2, POS = torch.rand(C, generator=_gen(5)), torch.rand(C, generator=_gen(6)) * 3


def _kl_div(*args, **kwargs):
    """F.kl_div; its warning for reduction 'mean' (which will change meaning) silenced."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return F.kl_div(*args, **kwargs)


def _losses():
    rows = {}
    for reduction in ("mean", "sum", "none"):
        wrap = _weighted if reduction == "none" else (lambda loss: loss)

        def r(f, reduction=reduction, wrap=wrap, **kw):
            return lambda y, *t: wrap(f(y, *t, reduction=reduction, **kw))
        rows.update({
            f"cross_entropy-{reduction}": _loss_row(r(F.cross_entropy), targets=[_classes(N)]),
            f"cross_entropy-weight-ignore-{reduction}": _loss_row(
                r(F.cross_entropy, weight=W, ignore_index=2),
                targets=[_classes(N + 2, ignore=2)], batch=(N + 2,)),
            f"cross_entropy-label_smoothing-{reduction}": _loss_row(
                r(F.cross_entropy, label_smoothing=0.2, weight=W),
                targets=[_classes(N)]),
            f"cross_entropy-probabilities-{reduction}": _loss_row(r(F.cross_entropy, label_smoothing=0.1),
                                                                 targets=[_soft_targets]),
            f"cross_entropy-4d-{reduction}": _loss_row(
                lambda y, t, reduction=reduction, wrap=wrap: wrap(F.cross_entropy(
                    y.permute(0, 3, 1, 2), t, reduction=reduction, ignore_index=1, weight=W2)),
                batch=(2, 3, 3), targets=[_classes(2, 3, 3, ignore=1)]),
            f"nll_loss-{reduction}": _loss_row(
                r(F.nll_loss, weight=W, ignore_index=0),
                post=lambda y: F.log_softmax(y, 1), targets=[_classes(N + 2, ignore=0)], batch=(N + 2,)),
            f"binary_cross_entropy-{reduction}": _loss_row(r(F.binary_cross_entropy), post=torch.sigmoid,
                                                           targets=[_probs(N, C)]),
            f"binary_cross_entropy-weight-{reduction}": _loss_row(
                r(F.binary_cross_entropy, weight=W2), post=torch.sigmoid,
                targets=[_probs(N, C)]),
            f"bce_with_logits-weight-pos_weight-{reduction}": _loss_row(
                r(F.binary_cross_entropy_with_logits, weight=W2,
                  pos_weight=POS), targets=[_probs(N, C)]),
            f"mse-{reduction}": _loss_row(r(F.mse_loss), targets=[_randn(N, C, seed=7)]),
            f"l1-{reduction}": _loss_row(r(F.l1_loss), targets=[_randn(N, C, seed=7)]),
            f"smooth_l1-beta0.5-{reduction}": _loss_row(r(F.smooth_l1_loss, beta=0.5), targets=[_randn(N, C, seed=7)]),
            f"huber-delta0.7-{reduction}": _loss_row(r(F.huber_loss, delta=0.7), targets=[_randn(N, C, seed=7)]),
            f"kl_div-{reduction}": _loss_row(r(_kl_div), post=lambda y: F.log_softmax(y, 1), targets=[_soft_targets]),
            f"kl_div-log_target-{reduction}": _loss_row(r(_kl_div, log_target=True), post=lambda y: F.log_softmax(y, 1),
                                                       targets=[lambda: torch.log(_soft_targets())]),
            f"poisson_nll-{reduction}": _loss_row(r(F.poisson_nll_loss), targets=[_probs(N, C) * 4]),
            f"poisson_nll-full-rate-{reduction}": _loss_row(
                r(F.poisson_nll_loss, log_input=False, full=True, eps=1e-3), post=F.softplus,
                targets=[_probs(N, C) * 4]),
            f"gaussian_nll-float-var-{reduction}": _loss_row(
                lambda y, t, reduction=reduction, wrap=wrap: wrap(F.gaussian_nll_loss(y, t, 0.7, full=True,
                                                                                      reduction=reduction)),
                targets=[_randn(N, C, seed=7)]),
            f"soft_margin-{reduction}": _loss_row(r(F.soft_margin_loss), targets=[_signs(N, C)]),
            f"multilabel_soft_margin-weight-{reduction}": _loss_row(
                r(F.multilabel_soft_margin_loss, weight=W2),
                targets=[lambda: (_signs(N, C) > 0).float()]),
            f"multilabel_margin-{reduction}": _loss_row(r(F.multilabel_margin_loss),
                                                        targets=[_multilabel_margin_target]),
            f"multi_margin-{reduction}": _loss_row(r(F.multi_margin_loss), targets=[_classes(N)]),
            f"multi_margin-p2-margin-weight-{reduction}": _loss_row(
                r(F.multi_margin_loss, p=2, margin=0.5, weight=W2), targets=[_classes(N)]),
            f"hinge_embedding-{reduction}": _loss_row(r(F.hinge_embedding_loss, margin=0.8), targets=[_signs(N, C)]),
            f"cosine_embedding-{reduction}": _loss_row(
                lambda y, t, reduction=reduction, wrap=wrap: wrap(
                    F.cosine_embedding_loss(y[0], y[1], t, margin=0.2, reduction=reduction)),
                more=[_randn(N, 3, seed=8)], targets=[_signs(N)]),
            f"margin_ranking-{reduction}": _loss_row(
                lambda y, t, reduction=reduction, wrap=wrap: wrap(
                    F.margin_ranking_loss(y[0], y[1], t, margin=0.1, reduction=reduction)),
                out=1, more=[_randn(N, 3, seed=8)], targets=[lambda: _signs(N, 1)]),
            f"triplet_margin-{reduction}": _loss_row(
                lambda y, reduction=reduction, wrap=wrap: wrap(
                    F.triplet_margin_loss(*y, margin=2.0, reduction=reduction)),
                more=[_randn(N, 3, seed=8), _randn(N, 3, seed=9)]),
            f"triplet_margin-p1-swap-{reduction}": _loss_row(
                lambda y, reduction=reduction, wrap=wrap: wrap(
                    F.triplet_margin_loss(*y, margin=2.0, p=1, swap=True, reduction=reduction)),
                more=[_randn(N, 3, seed=8), _randn(N, 3, seed=9)]),
            f"triplet_margin_with_distance-cosine-swap-{reduction}": _loss_row(
                lambda y, reduction=reduction, wrap=wrap: wrap(F.triplet_margin_with_distance_loss(
                    *y, distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.5, swap=True,
                    reduction=reduction)),
                more=[_randn(N, 3, seed=8), _randn(N, 3, seed=9)]),
        })
    rows["kl_div-batchmean"] = _loss_row(lambda y, t: _kl_div(y, t, reduction="batchmean"),
                                         post=lambda y: F.log_softmax(y, 1), targets=[_soft_targets])
    rows["cross_entropy-unbatched"] = _loss_row(lambda y, t: F.cross_entropy(y[0], t), targets=[torch.tensor(3)])
    return rows


# --------------------------------------------------------------------------- layers

class Layer(nn.Module):
    """A 3x3 convolution (so every row has a parameter whose gradient sums over the batch), then the layer. No bias
    where the layer cancels it (its gradient would be rounding noise)."""

    def __init__(self, layer, cin=4, cout=4, bias=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=bias)
        self.layer = layer

    def forward(self, x):
        return self.layer(self.conv(x))


class Lambda(nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


class RMSNormChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(6, eps=1e-5)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class EmbeddingStep(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.embedding = nn.Embedding(7, 6, **kwargs)
        self.linear = nn.Linear(6, 6)

    def forward(self, index):
        return self.linear(self.embedding(index))


def _mse(output, target):
    return (output - target).square().mean()


def _mse_row(module, inputs):
    """(module, mse, inputs, [a random target of the output's shape])."""
    with torch.no_grad():
        shape = module(*inputs).shape
    return module, _mse, inputs, [_randn(*shape, seed=11)]


def _layer_row(layer, shape=(2, 4, 6, 6), eval_mode=False, **kwargs):
    def build():
        torch.manual_seed(0)
        module = Layer(layer() if callable(layer) and not isinstance(layer, nn.Module) else layer, **kwargs)
        if eval_mode:
            module.eval()
        return _mse_row(module, [_randn(*shape, seed=12)])
    return build


def _module_row(factory, inputs):
    def build():
        torch.manual_seed(0)
        return _mse_row(factory(), [x() if callable(x) else x for x in inputs])
    return build


def _bn_eval():
    bn = nn.BatchNorm2d(4)
    bn.running_mean.uniform_(-0.5, 0.5), bn.running_var.uniform_(0.5, 2.0)
    return bn


LAYERS = {
    "layer_norm": _layer_row(lambda: nn.LayerNorm([6, 6]), bias=False),
    "layer_norm-channels-no-bias": _layer_row(lambda: nn.Sequential(Lambda(lambda x: x.permute(0, 2, 3, 1)),
                                                                    nn.LayerNorm(4, bias=False))),
    "group_norm": _layer_row(lambda: nn.GroupNorm(2, 4)),
    "rms_norm": _layer_row(RMSNormChannels, cout=6),
    "instance_norm-affine": _layer_row(lambda: nn.InstanceNorm2d(4, affine=True)),
    "instance_norm-running-stats": _layer_row(lambda: nn.InstanceNorm2d(4, affine=True, track_running_stats=True)),
    "batch_norm-train": _layer_row(lambda: nn.BatchNorm2d(4)),
    "batch_norm-eval": _layer_row(_bn_eval, eval_mode=True),
    "batch_norm1d-train": _module_row(lambda: nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5)), [_randn(6, 3)]),
    "gelu": _layer_row(nn.GELU),
    "gelu-tanh": _layer_row(lambda: nn.GELU(approximate="tanh")),
    "silu": _layer_row(nn.SiLU),
    "mish": _layer_row(nn.Mish),
    "hardswish": _layer_row(nn.Hardswish),
    "leaky_relu": _layer_row(lambda: nn.LeakyReLU(0.1)),
    "prelu": _layer_row(lambda: nn.PReLU(4)),
    "softmax": _layer_row(lambda: nn.Softmax(1)),
    "log_softmax": _layer_row(lambda: nn.LogSoftmax(-1), bias=False),
    "embedding": _module_row(EmbeddingStep, [torch.tensor([[0, 3, 3, 6], [2, 2, 1, 0]])]),
    "embedding-padding_idx-scale_grad_by_freq": _module_row(
        lambda: EmbeddingStep(padding_idx=3, scale_grad_by_freq=True), [torch.tensor([[0, 3, 3, 6], [2, 2, 1, 0]])]),
    "conv-depthwise": _layer_row(lambda: nn.Conv2d(4, 8, 3, padding=1, groups=4)),
    "conv-dilated": _layer_row(lambda: nn.Conv2d(4, 4, 3, padding=2, dilation=2)),
    "conv-grouped-strided": _layer_row(lambda: nn.Conv2d(4, 6, 3, stride=2, groups=2)),
    "conv_transpose": _layer_row(lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)),
    "conv_transpose-grouped": _layer_row(lambda: nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2)),
    "pixel_shuffle": _layer_row(lambda: nn.PixelShuffle(2)),
    "pixel_unshuffle": _layer_row(lambda: nn.PixelUnshuffle(2)),
    "adaptive_avg_pool": _layer_row(lambda: nn.AdaptiveAvgPool2d((4, 3))),
    "adaptive_max_pool": _layer_row(lambda: nn.AdaptiveMaxPool2d((3, 2))),
    "adaptive_max_pool-global": _layer_row(lambda: nn.AdaptiveMaxPool2d(1)),
    "max_pool-ceil_mode": _layer_row(lambda: nn.MaxPool2d(2, stride=2, ceil_mode=True), shape=(2, 4, 7, 7)),
    "max_pool-padding-dilation": _layer_row(lambda: nn.MaxPool2d(3, stride=2, padding=1, dilation=2)),
    "reflection_pad": _layer_row(lambda: nn.ReflectionPad2d((1, 2, 2, 0))),
    "replication_pad": _layer_row(lambda: nn.ReplicationPad2d((1, 2, 2, 0))),
    "where": _layer_row(lambda: Lambda(lambda x: torch.where(x > 0.1, x * 2, x.square()))),
    "masked_fill": _layer_row(lambda: Lambda(lambda x: x.masked_fill(x < -0.2, 0.5).masked_fill(x > 1.0, -1.0))),
    "dropout-p0": _layer_row(lambda: nn.Dropout(0.0)),
}


# --------------------------------------------------------------------------- attention

class Attention(nn.Module):
    """q, k, v projections of [N, L, E] inputs, then F.scaled_dot_product_attention (4-D: heads split off)."""

    def __init__(self, heads=0, kv_heads=0, dim=8, **kwargs):
        super().__init__()
        self.heads, self.kv_heads, self.kwargs = heads, kv_heads or heads, kwargs
        head = dim // max(heads, 1)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * head * max(self.kv_heads, 1))

    def forward(self, x, mask=None):
        q, (k, v) = self.q(x), self.kv(x).chunk(2, -1)
        if self.heads:
            q, k, v = (t.unflatten(-1, (h, -1)).transpose(1, 2) for t, h in
                       ((q, self.heads), (k, self.kv_heads), (v, self.kv_heads)))
        extra = {} if mask is None else {"attn_mask": mask}
        out = F.scaled_dot_product_attention(q, k, v, **extra, **self.kwargs)
        return out.transpose(1, 2).flatten(2) if self.heads else out


def _attention_row(dtype=torch.float32, mask=None, **kwargs):
    def build():
        torch.manual_seed(0)
        module = Attention(**kwargs).to(dtype)
        inputs = [_randn(2, 5, 8, seed=13).to(dtype)]
        if mask == "bool":
            inputs.append((torch.rand(5, 5, generator=_gen(14)) > 0.3) | torch.eye(5, dtype=torch.bool))
        elif mask == "float":
            inputs.append((_randn(2, 1, 5, 5, seed=14) if kwargs.get("heads") else _randn(5, 5, seed=14)).to(dtype))
        return _mse_row(module, inputs)
    return build


ATTENTION = {
    "sdpa-3d": _attention_row(),
    "sdpa-3d-bool-mask": _attention_row(mask="bool"),
    "sdpa-3d-float-mask": _attention_row(mask="float"),
    "sdpa-3d-causal-scale": _attention_row(is_causal=True, scale=0.7),
    "sdpa-4d": _attention_row(heads=2),
    "sdpa-4d-bool-mask": _attention_row(heads=2, mask="bool"),
    "sdpa-4d-float-mask-scale": _attention_row(heads=2, mask="float", scale=0.3),
    "sdpa-4d-causal": _attention_row(heads=2, is_causal=True),
    "sdpa-4d-gqa": _attention_row(heads=4, kv_heads=2, enable_gqa=True),
    "sdpa-4d-gqa-causal": _attention_row(heads=4, kv_heads=2, enable_gqa=True, is_causal=True),
    "sdpa-4d-dropout-p0": _attention_row(heads=2, dropout_p=0.0),
    "sdpa-3d-float16": _attention_row(dtype=torch.float16),
    "sdpa-4d-float16-bool-mask": _attention_row(dtype=torch.float16, heads=2, mask="bool"),
    "sdpa-4d-float16-causal-gqa": _attention_row(dtype=torch.float16, heads=4, kv_heads=2, enable_gqa=True,
                                                 is_causal=True),
}

ROWS = {**_losses(), **LAYERS, **ATTENTION}
RTOL = {torch.float32: 1e-4, torch.float16: 1e-2}
# rows whose export must be refused: (row, the aten op the error must name)
REFUSED = {
    "ctc_loss": (lambda: (Head(C, lambda y: F.log_softmax(y, -1)), lambda y, t: F.ctc_loss(y, t, [6, 6], [3, 2]),
                          [_randn(6, 2, 3)], [torch.tensor([[1, 2, 2], [3, 1, 0]])]), "aten._ctc_loss"),
    "gaussian_nll-tensor-var": (lambda: (Head(C), lambda y, t, v: F.gaussian_nll_loss(y, t, v), [_randn(N, 3)],
                                         [_randn(N, C, seed=7), _probs(N, C) + 0.1]), "aten._local_scalar_dense"),
    "adaptive_max_pool-uneven": (lambda: _mse_row(Layer(nn.AdaptiveMaxPool2d((4, 3))), [_randn(2, 4, 6, 6)]),
                                 "aten.adaptive_max_pool2d"),
}


def _bundle_of(name):
    """Rows are exported in bundles (one export each: the exporter's fixed cost dominates small steps): the losses
    by reduction, the layers, the attention rows by dtype."""
    if name in ATTENTION:
        return "attention-float16" if "float16" in name else "attention-float32"
    if name in LAYERS:
        return "layers"
    return "losses-" + next((r for r in ("sum", "none") if name.endswith(r)), "mean")


BUNDLES = {}
for _name in ROWS:
    BUNDLES.setdefault(_bundle_of(_name), []).append(_name)


def _key(name):
    return name.replace("-", "_").replace(".", "_")


class Bundle(nn.Module):
    """The modules of several rows side by side; forward takes all their inputs and returns their outputs, and
    Bundle.loss(outputs, *targets) is the sum of the rows' losses: each row's parameters get their own gradients."""

    def __init__(self, rows: dict):
        super().__init__()
        self.rows = nn.ModuleDict({_key(name): row[0] for name, row in rows.items()})
        self.losses = [row[1] for row in rows.values()]
        self.counts = [(len(row[2]), len(row[3])) for row in rows.values()]

    def forward(self, *inputs):
        outputs, k = [], 0
        for module, (count, _) in zip(self.rows.values(), self.counts, strict=False):
            outputs.append(module(*inputs[k:k + count]))
            k += count
        return tuple(outputs)

    def loss(self, outputs, *targets):
        total, k = 0.0, 0
        for loss_fn, output, (_, count) in zip(self.losses, outputs, self.counts, strict=False):
            total = total + loss_fn(output, *targets[k:k + count])
            k += count
        return total


def torch_step(module, loss_fn, inputs, targets):
    """The oracle: torch autograd on a copy of the module (train mode): the loss, the parameters' gradients and
    the buffers after the step, {output name: float64 array}."""
    import copy

    module = copy.deepcopy(module)
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    loss = loss_fn(module(*inputs), *targets)
    grads = torch.autograd.grad(loss, list(params.values()))
    want = {"loss": loss, **{f"grad_{n}": g for n, g in zip(params, grads, strict=False)},
            **{f"{n}_updated": b for n, b in module.named_buffers()}}
    return {k: v.detach().double().numpy() for k, v in want.items()}


@functools.cache
def bundle_export(bundle):
    rows = {name: ROWS[name]() for name in BUNDLES[bundle]}
    module = Bundle(rows)
    inputs = [x for row in rows.values() for x in row[2]]
    targets = [t for row in rows.values() for t in row[3]]
    want = torch_step(module, module.loss, inputs, targets)
    model = converters.export_training_step(module, module.loss, tuple(inputs), tuple(targets))
    given = {**{f"input_{k}": x for k, x in enumerate(inputs)}, **{f"target_{k}": t for k, t in enumerate(targets)}}
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    feeds = {i.name: (given[i.name] if i.name in given else state[i.name]).detach().numpy() for i in model.graph.input}
    return model, feeds, want


@functools.cache
def bundle_run(bundle, path):
    model, feeds, _ = bundle_export(bundle)
    session = (runtime.session(model) if path == "kernel"
               else onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))
    return dict(zip([o.name for o in model.graph.output], runtime.run(session, feeds), strict=False))


@pytest.mark.parametrize("name,path", [
    pytest.param(name, path, marks=pytest.mark.xdist_group(f"table-{_bundle_of(name)}"), id=f"{name}-{path}")
    for name in ROWS for path in ("kernel", "function")])
def test_training_step_matches_torch_autograd(name, path):
    """The row's parameter gradients and updated buffers, and the bundle's loss."""
    model, _, want = bundle_export(_bundle_of(name))
    got = bundle_run(_bundle_of(name), path)
    names = [o.name for o in model.graph.output]
    assert set(names) <= set(want), f"outputs {sorted(set(names) - set(want))} are not torch's"
    assert {n for n in want if not n.endswith("_updated")} <= set(names)
    mine = [n for n in names if n.startswith((f"grad_rows.{_key(name)}.", f"rows.{_key(name)}."))]
    assert mine, f"{name}: no output of its own"
    assert_matches(got, want, ["loss", *mine], rtol=RTOL[torch.float16 if "float16" in name else torch.float32])


@pytest.mark.parametrize("name", REFUSED)
def test_inexact_translation_is_refused(name):
    build, aten_op = REFUSED[name]
    module, loss_fn, inputs, targets = build()
    with pytest.raises(NotImplementedError, match=aten_op.replace(".", r"\.")):
        converters.export_training_step(module, loss_fn, tuple(inputs), tuple(targets))


# --------------------------------------------------------------------------- attention as a lone vjp

VJP_FORMS = {  # name: (scaled_dot_product_attention keyword arguments, q / kv heads (0: 3-D), mask)
    "3d": ({}, 0, 0, None),
    "3d-bool-mask": ({}, 0, 0, "bool"),
    "3d-causal-scale": ({"is_causal": True, "scale": 0.6}, 0, 0, None),
    "4d-float-mask": ({}, 2, 2, "float"),
    "4d-causal": ({"is_causal": True}, 2, 2, None),
    "4d-gqa-bool-mask-scale": ({"enable_gqa": True, "scale": 0.4}, 4, 2, "bool"),
}


def _vjp_form(dtype, kwargs, heads, kv_heads, mask):
    """(q, k, v, grad_out, mask?) of one form and its function (q, k, v, grad_out[, mask]) -> (dq, dk, dv)."""
    gen = _gen(15)
    lead = (2, heads) if heads else (2,)
    kv = (2, kv_heads) if heads else (2,)
    tensors = [torch.randn(*lead, 5, 4, generator=gen), torch.randn(*kv, 6, 4, generator=gen),
               torch.randn(*kv, 6, 4, generator=gen), torch.randn(*lead, 5, 4, generator=gen)]
    tensors = [t.to(dtype) for t in tensors]
    if mask == "bool":
        tensors.append((torch.rand(5, 6, generator=gen) > 0.4) | (torch.arange(6) == 0))
    elif mask == "float":
        tensors.append(torch.randn(5, 6, generator=gen).to(dtype))

    def grads(q, k, v, grad_out, *maybe_mask):
        extra = {"attn_mask": maybe_mask[0]} if maybe_mask else {}
        return torch.func.vjp(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **extra, **kwargs), q, k, v)[1](
            grad_out)
    return tensors, grads


@functools.cache
def vjp_export(dtype_name):
    """One export of every form's vjp; ({form: (our dq, dk, dv) per path}, {form: torch autograd's})."""
    dtype = getattr(torch, dtype_name)
    forms = {name: _vjp_form(dtype, *form) for name, form in VJP_FORMS.items()}
    args, layout = [], []
    for name, (tensors, grads) in forms.items():
        layout.append((name, grads, len(args), len(tensors)))
        args += tensors

    def all_forms(*flat):
        return tuple(g for _, grads, start, count in layout for g in grads(*flat[start:start + count]))

    want = {}
    for name, (tensors, _) in forms.items():  # the oracle: torch.autograd.grad of the forward
        q, k, v = (t.clone().requires_grad_(True) for t in tensors[:3])
        extra = {"attn_mask": tensors[4]} if len(tensors) > 4 else {}
        out = F.scaled_dot_product_attention(q, k, v, **extra, **VJP_FORMS[name][0])
        want[name] = [g.double().numpy() for g in torch.autograd.grad(out, (q, k, v), tensors[3])]
    model = converters.export(all_forms, args)
    feeds = {i.name: a.numpy() for i, a in zip(model.graph.input, args, strict=False)}
    got = {}
    for path in ("kernel", "function"):
        session = (runtime.session(model) if path == "kernel"
                   else onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))
        outputs = runtime.run(session, feeds)
        got[path] = {name: outputs[3 * k:3 * k + 3] for k, name in enumerate(forms)}
    return got, want


@pytest.mark.parametrize("name,dtype,path", [
    pytest.param(name, dtype, path, marks=pytest.mark.xdist_group(f"vjp-{dtype}"), id=f"{name}-{dtype}-{path}")
    for name in VJP_FORMS for dtype in ("float32", "float16") for path in ("kernel", "function")])
def test_attention_vjp_matches_torch_autograd(name, dtype, path):
    got, want = vjp_export(dtype)
    rtol = RTOL[getattr(torch, dtype)]
    for which, ours, expected in zip("qkv", got[path][name], want[name], strict=False):
        assert ours.shape == expected.shape, f"d{which}: shape {ours.shape}, torch {expected.shape}"
        error = float(np.abs(ours.astype(np.float64) - expected).max()) / float(np.abs(expected).max())
        assert error <= rtol, f"d{which}: max |ours - torch| / max |torch| = {error:.3g} > {rtol}"


# --------------------------------------------------------------------------- dropout, p > 0

class Dropped(nn.Module):
    """out = dropout(x * w): the loss sum(out * t) is linear in x, so its gradients show the mask."""

    def __init__(self, size, p):
        super().__init__()
        self.w = nn.Parameter(torch.rand(size, generator=_gen(16)) + 0.5)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(x * self.w)


class DroppedAttention(nn.Module):
    """One query per (batch, head) against 64 keys, attention dropout p: dv = (softmax(q k^T s) * mask / (1 - p)) t,
    so the rows of dv show the mask and the attention weights."""

    def __init__(self, p):
        super().__init__()
        gen = _gen(17)
        self.q, self.k, self.v = (nn.Parameter(torch.randn(16, 4, n, 8, generator=gen)) for n in (1, 64, 64))
        self.p = p

    def forward(self, t):
        return F.scaled_dot_product_attention(self.q, self.k, self.v, dropout_p=self.p)


def _linear_loss(out, t):
    return (out * t).sum()


def _kept_fraction_ok(kept, count, p):
    """The kept fraction within 5 standard deviations of the binomial's 1 - p."""
    return abs(kept / count - (1 - p)) <= 5 * np.sqrt(p * (1 - p) / count)


@pytest.mark.parametrize("p", [0.3, 0.6])
def test_dropout_is_training_mode_dropout(p):
    """nn.Dropout(p) exports as ONNX Dropout in training mode: the kept fraction is 1 - p, kept values are scaled
    by 1 / (1 - p), and the forward and backward use one mask (loss = <x, dL/dx> for a loss linear in x)."""
    size = 4096
    x, t = torch.rand(size, generator=_gen(18)) + 0.5, torch.rand(size, generator=_gen(19)) + 0.5
    module = Dropped(size, p)
    model = converters.export_training_step(module, _linear_loss, x, t, input_gradients=True)
    assert [n.op_type for n in model.graph.node].count("Dropout") == 1
    feeds = {"input_0": x.numpy(), "target_0": t.numpy(), "w": module.w.detach().numpy()}
    loss, grad_w, grad_x = onnxruntime.InferenceSession(model.SerializeToString()).run(
        ["loss", "grad_w", "grad_input_0"], feeds)
    kept = grad_x != 0
    assert _kept_fraction_ok(kept.sum(), size, p), f"kept {kept.mean():.3f}, expected {1 - p}"
    w = module.w.detach().numpy()
    np.testing.assert_allclose(grad_x[kept] / (w * t.numpy())[kept], 1 / (1 - p), rtol=1e-6)
    np.testing.assert_array_equal(grad_w != 0, kept)
    np.testing.assert_allclose(loss, float(np.dot(x.numpy().astype(np.float64), grad_x)), rtol=1e-5)


def test_attention_dropout_is_training_mode_dropout():
    """scaled_dot_product_attention's dropout_p: each attention weight kept with probability 1 - p and scaled by
    1 / (1 - p), the same mask in the forward and the backward."""
    p = 0.4
    module = DroppedAttention(p)
    t = torch.randn(16, 4, 1, 8, generator=_gen(20))
    model = converters.export_training_step(module, _linear_loss, t, t)
    names = ["input_0", "target_0", "q", "k", "v"]
    values = [t.numpy(), t.numpy(), *(getattr(module, n).detach().numpy() for n in "qkv")]
    feeds = dict(zip(names, values, strict=True))
    loss, grad_v = onnxruntime.InferenceSession(model.SerializeToString()).run(["loss", "grad_v"], feeds)
    with torch.no_grad():
        weights = torch.softmax(module.q @ module.k.transpose(-1, -2) / np.sqrt(8), -1)  # [16, 4, 1, 64]
    undropped = (weights.transpose(-1, -2) @ t).numpy()  # dv without dropout: [16, 4, 64, 8]
    kept = np.abs(grad_v).max(-1) != 0
    assert _kept_fraction_ok(kept.sum(), kept.size, p), f"kept {kept.mean():.3f}, expected {1 - p}"
    np.testing.assert_allclose(grad_v[kept], undropped[kept] / (1 - p), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(loss, float((grad_v.astype(np.float64) * feeds["v"]).sum()), rtol=1e-4)


# --------------------------------------------------------------------------- verification (export's verify=True)

def test_verification_catches_a_wrong_translation(monkeypatch):
    """torchlib's nll_loss_forward (a constant total_weight) put back: the cross-entropy step's gradients come out
    times the batch size, and the export raises, naming the gradient, instead of returning the model."""
    from onnxscript.function_libs.torch_lib.ops import nn as torchlib

    from resample_grad.converters import torch_backward

    monkeypatch.setitem(torch_backward.TRANSLATIONS, "nll_loss_forward", torchlib.aten_nll_loss_forward)
    torch.manual_seed(0)
    with pytest.raises(converters.VerificationError, match="output 'grad_weight' disagrees with torch"):
        converters.export_training_step(nn.Linear(3, C), F.cross_entropy, _randn(N, 3), _classes(N))
    converters.export_training_step(nn.Linear(3, C), F.cross_entropy, _randn(N, 3), _classes(N), verify=False)


def _kinked(y, c):
    """relu(y - c): with c torch's own y, torch's ReLU input is exactly 0, onnxruntime's (another GEMM) often not."""
    return torch.relu(y - c).sum()


def _kink_case():
    """(Linear, x, c) where torch and onnxruntime put a ReLU input on different sides of 0: the step's gradient
    differs from torch's (the first seed that does, checked on a step exported without verification)."""
    torch.manual_seed(0)
    module = nn.Linear(256, 4, bias=False)
    x = torch.ones(8, 256)
    model = converters.export_training_step(module, _kinked, x, module(x).detach(), verify=False)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    for seed in range(100):
        x = _randn(8, 256, seed=seed)
        c = module(x).detach()
        feeds = {"input_0": x.numpy(), "target_0": c.numpy(), "weight": module.weight.detach().numpy()}
        grad = session.run(["grad_weight"], feeds)[0]
        want = torch.autograd.grad(_kinked(module(x), c), module.weight)[0].numpy()
        if np.abs(grad - want).max() > 0.1:
            return module, x, c
    raise AssertionError("no seed puts a ReLU input on different sides in torch and onnxruntime")


def test_verification_tolerates_a_kink(monkeypatch):
    """At the kink the step's gradient differs from torch's (_kink_case), yet export_training_step does not raise.
    The perturbed point alone tolerates it too: with the float64 reference and the jittered runs taken out (torch's
    one run at the point is the reference), it exports, and it raises when the perturbed point is the point itself."""
    from resample_grad.converters import torch_export

    module, x, c = _kink_case()
    converters.export_training_step(module, _kinked, x, c)  # verify=True
    monkeypatch.setattr(torch_export, "_in_float64", lambda fn, point: None)
    monkeypatch.setattr(torch_export, "JITTERS", 0)
    converters.export_training_step(module, _kinked, x, c)
    monkeypatch.setattr(torch_export, "_perturbed", lambda args: args)
    with pytest.raises(converters.VerificationError, match="output 'grad_weight'"):
        converters.export_training_step(module, _kinked, x, c)
