"""The user's own nn.Module behind lmperf's step: `UserModel`.

The common contract is a language model's: the module maps token ids (batch, context) to logits
(batch, context, vocab) (a tensor, or an object with a `logits` tensor, as Hugging Face models
return), and the step's loss is the mean next-token cross-entropy of random token ids. A module
with another contract comes with its own `batch(batch, context, device)` and `loss(module, batch)`
functions (Python only).

A UserModel is read once, on the meta device where the module's code allows it (no memory, no
arithmetic), else on a small real batch: its output is checked, and its vocabulary, parameter
count, repeated blocks, width, matmul parameters and last Linear are recorded with the factory,
its arguments and the hash of its source files. That record is what rows carry and resume keys
on; `UserModel.from_record` rebuilds a runnable model from it in another process.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn as nn

from lmperf.errors import UsageError
from lmperf.model.module_tree import checkpoint_blocks, repeated_blocks, repeated_blocks_path
from lmperf.model.transformer import checkpoint_options, lm_loss
from lmperf.model.user_code import UserCodeError, call_user, load_factory, source_hash, split_spec
from lmperf.ops import fused_linear_cross_entropy

OWN_ATTENTION = "own"  # a user module's rows name no lmperf attention implementation
INSTANCE = "instance of "
PROBE_BATCH, PROBE_CONTEXT = 2, 8


def probe_device() -> torch.device:
    """Where a module that cannot run on the meta device is read: the GPU when there is one."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def logits_of(output: Any) -> Any:
    """The logits in a module's output: the output itself, or its `logits` (Hugging Face)."""
    return output.logits if hasattr(output, "logits") else output


@dataclass(frozen=True)
class UserModel:
    """The user's module, its record (the fields before `build_module`) and how to build it."""

    name: str  # what tables call it: "file:factory", or the instance's class
    factory: str  # as given: "pkg.mod:build", "path/to/file.py:build", or "instance of Class"
    arguments: str = "{}"  # the factory's keyword arguments, canonical JSON
    vocab_size: int | None = None  # token ids are drawn below it; None with the user's own batch
    params: int = 0
    source_hash: str = ""
    blocks: str = ""  # path of the repeated blocks (its largest ModuleList); "" when none
    layers: int = 0
    width: int = 0  # the width of the blocks' input (d_model); 0 when it has no blocks
    matmul_params: int = 0  # parameters of 2-D tensors but the input embedding's own table
    head: str = ""  # path of the last layer when it is a Linear whose output is the logits
    build_module: Callable[[torch.device], nn.Module] | None = field(default=None, compare=False, repr=False)
    loss: Callable | None = field(default=None, compare=False, repr=False)
    batch: Callable | None = field(default=None, compare=False, repr=False)
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # FLOP counts by context

    @classmethod
    def from_factory(cls, spec: str, arguments: str | None = None, vocab: int | None = None) -> "UserModel":
        """`--module SPEC --module-args JSON`, imported, built and read (once per process: a
        command validates its options more than once)."""
        return _read_factory(spec, json.dumps(_arguments(arguments), sort_keys=True), vocab)

    @classmethod
    def of(
        cls,
        module: nn.Module | Callable[[], nn.Module],
        loss: Callable | None = None,
        batch: Callable | None = None,
        vocab: int | None = None,
    ) -> "UserModel":
        """A module from Python: an instance (each step runs a copy of it, moved to the step's
        device) or a function that builds one. `batch(batch, context, device)` and
        `loss(module, batch)` replace the language-model contract when given (both, or neither)."""
        if (loss is None) != (batch is None):
            raise UsageError("give the module's own loss and batch functions together, or neither")
        if isinstance(module, nn.Module):
            instance = module
            build = lambda device: copy.deepcopy(instance).to(device)  # noqa: E731
            name, objects = type(module).__name__, []
        elif callable(module):
            name, objects = getattr(module, "__qualname__", type(module).__name__), [module]
            build = factory_builder(name, module, {})
        else:
            raise UsageError(
                f"UserModel.of takes an nn.Module or a function that builds one, got {type(module).__name__}"
            )
        return cls(name, INSTANCE + name, build_module=build, loss=loss, batch=batch).read(vocab, objects)

    @classmethod
    def from_record(cls, record: dict) -> "UserModel":
        """The model a row (or a job sent to other processes) recorded; factories only."""
        values = {f.name: record[f.name] for f in fields(cls) if f.name in record}
        values["arguments"] = json.dumps(record.get("arguments", {}), sort_keys=True)
        model = cls(**values)
        if model.factory.startswith(INSTANCE):
            return model  # a row to compare or render; it cannot be run in another process
        build = factory_builder(model.factory, None, json.loads(model.arguments))
        return replace(model, build_module=build)

    def __reduce__(self):
        # Another process (a data-parallel rank) gets the record and imports the factory again.
        return UserModel.from_record, (self.record(),)

    def record(self) -> dict:
        """What rows carry: every field before `build_module`, the arguments as an object."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.compare}
        return {**values, "arguments": json.loads(self.arguments)}

    @property
    def language_model(self) -> bool:
        return self.loss is None

    def build(self, device: torch.device | str) -> nn.Module:
        if self.build_module is None:
            raise UsageError(
                f"{self.factory} cannot be rebuilt here: pass the module itself (a factory crosses processes)"
            )
        return self.build_module(torch.device(device))

    def read(self, vocab: int | None, objects: list) -> "UserModel":
        """This model with its record filled in from one forward pass of a fresh build: on the
        meta device, or on a small real batch where the module's code needs real tensors (a
        `.item()`, a data-dependent branch); an error there is the user's."""
        try:
            module, structure = self._read_on(torch.device("meta"), vocab)
        except UserCodeError:
            module, structure = self._read_on(probe_device(), vocab)
        return replace(self, **structure, source_hash=source_hash(objects + [type(m) for m in module.modules()]))

    def _read_on(self, device: torch.device, vocab: int | None) -> tuple[nn.Module, dict]:
        module = self.build(device)
        return module, probe(module, device, self, vocab)

    def make_batch(self, batch: int, context: int, device: torch.device, generator: torch.Generator) -> Any:
        """The step's batch: random token ids and their next tokens, or the user's own batch."""
        if not self.language_model:
            return call_user(f"{self.name}'s batch function", self.batch, batch, context, device)
        data = torch.randint(0, self.vocab_size, (batch, context + 1), generator=generator).to(device)
        return data[:, :-1], data[:, 1:]  # next-token prediction

    def step_module(self, device: torch.device, checkpoint: str) -> nn.Module:
        """A fresh module on `device`, its repeated blocks checkpointed under `checkpoint`."""
        module = self.build(device)
        if checkpoint != "none":
            checkpoint_blocks(repeated_blocks(module), checkpoint_options(checkpoint))
        return module

    def step_loss(self, module: nn.Module, loss: str) -> Callable[[nn.Module, Any], torch.Tensor]:
        """The step's loss function of (module, batch); "fused" makes the last Linear compute the
        loss (fused_linear_cross_entropy) instead of the logits."""
        if not self.language_model:
            return lambda model, batch: call_user(f"{self.name}'s loss function", self.loss, model, batch)
        if loss == "eager":
            return lambda model, batch: lm_loss(logits_of(model(batch[0])), batch[1])
        return FusedHeadLoss(module.get_submodule(self.head))

    def check(self, loss: str) -> None:
        """Refuse a step option this module cannot take."""
        if loss == "fused" and not self.head:
            raise UsageError(
                f"--loss fused needs {self.name}'s output to be its last Linear's "
                "(x·Wᵀ with a (vocab, width) weight, no bias), returned unchanged"
            )


@functools.lru_cache(maxsize=None)
def _read_factory(spec: str, arguments: str, vocab: int | None) -> UserModel:
    factory = load_factory(spec)
    where, name = split_spec(spec)
    label = f"{Path(where).stem if where.endswith('.py') else where}:{name}"
    model = UserModel(label, spec, arguments, build_module=factory_builder(spec, factory, json.loads(arguments)))
    return model.read(vocab, [factory])


def factory_builder(spec: str, factory: Callable | None, kwargs: dict) -> Callable[[torch.device], nn.Module]:
    """device -> the factory's module built there (the factory imported on first use)."""

    def build(device: torch.device) -> nn.Module:
        call = factory or load_factory(spec)
        with device:
            module = call_user(f"--module: {spec}", call, **kwargs)
        if not isinstance(module, nn.Module):
            raise UsageError(
                f"--module: {spec} returned an object of type {type(module).__name__}, not a torch.nn.Module"
            )
        return module.to(device)

    return build


def _arguments(text: str | None) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"--module-args is not JSON ({error.msg} at character {error.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--module-args takes a JSON object of keyword arguments, got {text!r}")
    return value


class FusedHeadLoss:
    """The loss with the module's last Linear replaced, on this instance, by the fused linear
    cross-entropy: the head returns the mean loss, which the module passes on as its output."""

    def __init__(self, head: nn.Module):
        self.targets = None
        head.forward = lambda hidden: fused_linear_cross_entropy(
            hidden.flatten(0, -2), head.weight, self.targets.flatten()
        )

    def __call__(self, model: nn.Module, batch: tuple) -> torch.Tensor:
        inputs, self.targets = batch
        return logits_of(model(inputs))


# What one forward pass tells about a module (probe): each module's first input and its output.
@dataclass
class _Seen:
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: list[tuple[str, Any]] = field(default_factory=list)  # in the order calls finish


def _first_tensor(args: tuple, kwargs: dict) -> torch.Tensor | None:
    return next((v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)), None)


def _watch(module: nn.Module, seen: _Seen) -> list:
    handles = []
    for path, sub in module.named_modules():

        def on_input(sub, args, kwargs, path=path):
            seen.inputs.setdefault(path, _first_tensor(args, kwargs))

        def on_output(sub, args, output, path=path):
            seen.outputs.append((path, output))

        handles.append(sub.register_forward_pre_hook(on_input, with_kwargs=True))
        handles.append(sub.register_forward_hook(on_output))
    return handles


def probe(module: nn.Module, device: torch.device, model: UserModel, vocab: int | None) -> dict:
    """The record fields of `module`, from one forward pass at PROBE_BATCH × PROBE_CONTEXT."""
    seen = _Seen()
    handles = _watch(module, seen)
    try:
        with torch.no_grad():
            if model.language_model:
                tokens = torch.zeros(PROBE_BATCH, PROBE_CONTEXT, dtype=torch.long, device=device)
                logits = logits_of(call_user(f"{model.name}'s forward", module, tokens))
                vocab = _check_logits(logits, vocab or vocab_of(module), model.name)
            else:
                data = model.make_batch(PROBE_BATCH, PROBE_CONTEXT, device, torch.Generator())
                loss = call_user(f"{model.name}'s loss function", model.loss, module, data)
                if not (isinstance(loss, torch.Tensor) and loss.dim() == 0):
                    raise UsageError(f"{model.name}'s loss function returned {_describe(loss)}, not a scalar tensor")
                logits, vocab = None, None
    finally:
        for handle in handles:
            handle.remove()
    return _structure(module, seen, logits, vocab)


def vocab_of(module: nn.Module) -> int | None:
    """The vocabulary a module states: its config's vocab_size, its own vocab_size, or the output
    width of its last nn.Linear; None when it states none."""
    for stated in (getattr(getattr(module, "config", None), "vocab_size", None), getattr(module, "vocab_size", None)):
        if isinstance(stated, int):
            return stated
    linears = [m for m in module.modules() if isinstance(m, nn.Linear)]
    return linears[-1].out_features if linears else None


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def _check_logits(logits: Any, vocab: int | None, name: str) -> int:
    shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else None
    if shape is None or len(shape) != 3 or shape[:2] != (PROBE_BATCH, PROBE_CONTEXT) or (vocab and shape[2] < vocab):
        wanted = f"vocab {vocab}" if vocab else "vocab"
        raise UsageError(
            f"{name} maps token ids of shape ({PROBE_BATCH}, {PROBE_CONTEXT}) to {_describe(logits)}; "
            f"lmperf needs logits (batch {PROBE_BATCH}, context {PROBE_CONTEXT}, {wanted})"
        )
    return vocab or shape[2]


def _structure(module: nn.Module, seen: _Seen, logits: Any, vocab: int | None) -> dict:
    blocks = repeated_blocks_path(module) or ""
    first_block = seen.inputs.get(f"{blocks}.0") if blocks else None
    return {
        "vocab_size": vocab,
        "params": sum(p.numel() for p in module.parameters()),
        "blocks": blocks,
        "layers": len(module.get_submodule(blocks)) if blocks else 0,
        "width": first_block.shape[-1] if isinstance(first_block, torch.Tensor) else 0,
        "matmul_params": _matmul_params(module, seen),
        "head": _head(module, seen, logits),
    }


def _matmul_params(module: nn.Module, seen: _Seen) -> int:
    """Parameters of 2-D (or larger) tensors, less the tables of modules that take token ids
    (embeddings: a gather, no matmul) unless another module uses the table too (a tied head)."""
    gathered = {
        path
        for path, first in seen.inputs.items()
        if isinstance(first, torch.Tensor) and not first.is_floating_point() and not first.is_complex()
    }
    owners: dict[int, set[str]] = {}
    for path, sub in module.named_modules(remove_duplicate=False):
        for param in sub.parameters(recurse=False):
            owners.setdefault(id(param), set()).add(path)
    return sum(p.numel() for p in module.parameters() if p.dim() >= 2 and not owners.get(id(p), set()) <= gathered)


def _head(module: nn.Module, seen: _Seen, logits: Any) -> str:
    """The innermost module whose output is the logits tensor itself, when it is a Linear of the
    fused loss's form: one (vocab, width) `weight`, applied to an input of that width."""
    if logits is None:
        return ""
    path = next((path for path, output in seen.outputs if output is logits), None)
    if path is None:
        return ""
    head = module.get_submodule(path)
    params = dict(head.named_parameters())
    weight, first = params.get("weight"), seen.inputs.get(path)
    if set(params) != {"weight"} or weight.dim() != 2 or not isinstance(first, torch.Tensor):
        return ""
    return path if tuple(weight.shape) == (logits.shape[-1], first.shape[-1]) else ""
