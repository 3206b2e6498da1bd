"""FLOPs of any module, counted by PyTorch rather than modelled: the user's module (lmperf.model.user)
runs one sequence's forward and backward under `torch.utils.flop_counter.FlopCounterMode`.

- The count runs on the meta device where the module's code allows it (shapes only: no memory,
  no arithmetic), else on one real sequence on the GPU (the CPU without one). It is the module
  as built: no compile, no checkpointing (its recomputation is not model work), the eager loss.
- One sequence of the step's context is counted and multiplied by the batch: a matmul's FLOPs
  grow with the tokens, and attention's with each sequence's context squared.
- FlopCounterMode counts matmuls (mm, bmm, einsum's, addmm, convolutions) and SDPA by formula.
  Attention's scores and weighted sum are counted over the full T×T square, causal or not: a
  masked einsum computes the whole square, and SDPA's formula ignores `is_causal` (lmperf's
  analytic model counts the same way). On a CPU, SDPA runs its math backend while counting,
  since its fused CPU kernel has no formula. Kernels outside PyTorch's dispatcher (a Triton
  kernel called directly) are not counted.
- Per module, each module's own FLOPs (its children's taken out), forward and backward apart;
  the backward's are attributed by FlopCounterMode to the module whose forward created them.
- `transformer_flops` is the rule of thumb to check the count against when the module looks like
  a Transformer (repeated blocks, a width, a vocabulary): per token 2·N + 4·L·d·T forward (N the
  matmul parameters, L blocks of width d, context T), three times that with the backward.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from lmperf.errors import UsageError
from lmperf.model.module_tree import ROOT, collapse
from lmperf.model.user import UserModel, probe_device
from lmperf.model.user_code import UserCodeError, call_user

CAUSAL_ATTENTION = "full T×T square (the masked half of causal attention counted too)"


@dataclass(frozen=True)
class CountedFlops:
    """One sequence's FLOPs: in total and per module path (its own ops), forward and backward."""

    context: int
    where: str  # "meta", "cuda" or "cpu"
    forward_total: float
    backward_total: float
    forward: dict[str, float]
    backward: dict[str, float]

    def matmul(self, batch: int, mode: str) -> float:
        """The step's matmul FLOPs at `batch` sequences in `mode` (the optimizer's are none)."""
        return batch * (self.forward_total + (0.0 if mode == "forward" else self.backward_total))

    def method(self, batch: int) -> str:
        return f"FlopCounterMode on {self.where} tensors: one sequence of {self.context} tokens × batch {batch}"

    def by_region(self, batch: int, mode: str, containers: list[str], compiled_blocks: str = "") -> dict[str, float]:
        """FLOPs per module path, repeated blocks collapsed (`layers.*.attn`), in module order.
        With `compiled_blocks` (the path of blocks compiled whole), what runs inside them counts
        for the module that calls them, where a profile finds their time."""
        flops: dict[str, float] = {}
        for path, forward in self.forward.items():
            own = forward + (0.0 if mode == "forward" else self.backward.get(path, 0.0))
            if compiled_blocks and path.startswith(compiled_blocks + "."):
                path = compiled_blocks.rpartition(".")[0]
            region = collapse(path, containers) or ROOT
            flops[region] = flops.get(region, 0.0) + batch * own
        return flops


def counted_flops(model: UserModel, context: int) -> CountedFlops:
    """One sequence of `context` tokens counted (kept on `model`: a sweep counts each context once)."""
    if context not in model.cache:
        try:
            model.cache[context] = _count(model, context, torch.device("meta"))
        except UserCodeError:  # the module's code needs real tensors: count a real sequence
            model.cache[context] = _count(model, context, probe_device())
    return model.cache[context]


def _count(model: UserModel, context: int, device: torch.device) -> CountedFlops:
    module = model.build(device)
    batch = model.make_batch(1, context, device, torch.Generator().manual_seed(0))
    loss_of = model.step_loss(module, "eager")
    params = [p for p in module.parameters() if p.requires_grad]
    attention = sdpa_kernel(SDPBackend.MATH) if device.type == "cpu" else contextlib.nullcontext()
    with attention, FlopCounterMode(display=False) as counter:
        owners = _Owners(module, counter)
        with owners.watching():
            loss = call_user(f"{model.name}'s forward at context {context}", loss_of, module, batch)
        if not (isinstance(loss, torch.Tensor) and loss.dim() == 0):
            raise UsageError(f"{model.name}'s step loss is not a scalar tensor at context {context}")
        forward_total = counter.get_total_flops()
        owners.claim([loss], OUTSIDE)
        with owners.timing_nodes():
            call_user(
                f"{model.name}'s backward at context {context}", torch.autograd.grad, loss, params, allow_unused=True
            )
    forward, backward = owners.forward, owners.backward
    forward.pop(OUTSIDE, None)
    backward.pop(OUTSIDE, None)
    return CountedFlops(
        context, device.type, float(forward_total), float(counter.get_total_flops() - forward_total), forward, backward
    )


OUTSIDE = "<outside>"  # the loss and whatever else runs outside the module


class _Owners:
    """Counted FLOPs per module path, forward and backward, from one FlopCounterMode's running
    total. Forward: what a module's forward adds to the total, less its children's. Backward:
    each autograd node belongs to the innermost module whose forward created it (its outputs'
    graph, up to nodes already claimed, is claimed when the module returns; what its inputs
    bring is claimed first for the module around it), and what the node adds to the total while
    it runs is that module's."""

    def __init__(self, module: torch.nn.Module, counter: FlopCounterMode):
        self.module, self.counter = module, counter
        self.forward: dict[str, float] = {path: 0.0 for path, _ in module.named_modules()}  # module order
        self.backward: dict[str, float] = {}
        self.node_owner: dict = {}
        self.stack: list[list] = []  # [path, total at entry, children's FLOPs]

    @contextlib.contextmanager
    def watching(self):
        handles = []
        for path, sub in self.module.named_modules():
            handles.append(sub.register_forward_pre_hook(functools.partial(self._enter, path), with_kwargs=True))
            handles.append(sub.register_forward_hook(functools.partial(self._leave, path), always_call=True))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _enter(self, path, module, args, kwargs):
        self.claim([*args, *kwargs.values()], self.stack[-1][0] if self.stack else OUTSIDE)
        self.stack.append([path, self.counter.get_total_flops(), 0])

    def _leave(self, path, module, args, output):
        _, entered, inner = self.stack.pop()
        spent = self.counter.get_total_flops() - entered
        self.forward[path] = self.forward.get(path, 0.0) + spent - inner
        if self.stack:
            self.stack[-1][2] += spent
        self.claim(torch.utils._pytree.tree_leaves(output), path)

    def claim(self, values, path: str) -> None:
        """Give `path` the unclaimed autograd nodes behind the tensors among `values`."""
        todo = [v.grad_fn for v in values if isinstance(v, torch.Tensor) and v.grad_fn is not None]
        while todo:
            node = todo.pop()
            if node is None or node in self.node_owner:
                continue
            self.node_owner[node] = path
            todo.extend(next_node for next_node, _ in node.next_functions)

    @contextlib.contextmanager
    def timing_nodes(self):
        started: list[float] = []

        def before(path, grad_outputs):
            started.append(self.counter.get_total_flops())

        def after(path, grad_inputs, grad_outputs):
            self.backward[path] = self.backward.get(path, 0.0) + self.counter.get_total_flops() - started.pop()

        handles = []
        for node, path in self.node_owner.items():
            handles.append(node.register_prehook(functools.partial(before, path)))
            handles.append(node.register_hook(functools.partial(after, path)))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()


def transformer_flops(model: UserModel, batch: int, context: int, mode: str) -> float | None:
    """2·N + 4·L·d·T FLOPs per token forward (3x with the backward), or None when the module does
    not look like a Transformer (no repeated blocks, width or vocabulary)."""
    if not (model.layers and model.width and model.vocab_size):
        return None
    per_token = 2 * model.matmul_params + 4 * model.layers * model.width * context
    return batch * context * per_token * (1 if mode == "forward" else 3)
