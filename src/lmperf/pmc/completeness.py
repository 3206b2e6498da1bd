"""Is the kernel range one whole step? A range that stops early (a copy cut between rows, an NVTX
range closed too soon) holds a prefix of the step, and a prefix of a Transformer's step reads like
a smaller model. Each check knows what a whole phase ends with, whatever kernel the cut lands after:

- forward: whole layers, one attention each, then the final norm and the LM head (a GEMM that
  repeats no layer GEMM), then at most the loss, and nothing after the loss;
- backward (when the range shows it: autograd's own thread is outside a thread's NVTX range):
  every layer's attention backward, then the embedding's gradient, and a data and a weight
  gradient GEMM for each forward GEMM;
- fused AdamW: one step counter per parameter tensor, at most 36 tensors and 320 chunks per
  update launch, every launch but the last one full, and at least the blocks and one embedding
  updated;
- generate: every step the same number of GEMMs ending at the same LM head, and the range ends
  with the sampling after the last one, before any work of a next step.

A `Gap` names what is missing and the fields that rest on it; infer leaves those undetermined.
"""

from __future__ import annotations

from lmperf.analysis.kernels import (
    ATTENTION,
    COPY,
    ELEMENTWISE,
    EMBEDDING,
    LOSS,
    MATMUL,
    MATMUL_AUX,
    NORM,
    REDUCTION,
    SOFTMAX,
)
from lmperf.analysis.tiles import ceil_div
from lmperf.pmc.attention_shape import stores_row_statistics
from lmperf.pmc.kernels import category, is_generated
from lmperf.pmc import gemms as g
from lmperf.pmc.parse import Capture, KernelRecord
from lmperf.pmc.result import FIELDS, Gap

# PyTorch's multi_tensor_apply (MultiTensorApply.cuh): a fused AdamW launch (tensor lists of
# depth 4) takes at most 36 tensors and 320 chunks of 65536 elements, and launches when either
# fills up; a single-element step counter per tensor is incremented first, one block each.
ADAM_TENSORS_PER_LAUNCH = 36
ADAM_CHUNKS_PER_LAUNCH = 320

# What a forward cut short leaves unsupported: all but the dtype (the GEMMs' pipe stays readable).
FORWARD_FIELDS = (*(name for name in FIELDS if name != "dtype"), "prompt_len")


def counter_gaps(capture: Capture) -> list[Gap]:
    """Counter columns the file lacks (a tensor pipe's): every reading but the mode rests on
    them."""
    return [Gap("counters", why, tuple(name for name in FIELDS if name != "mode")) for why in capture.problems]


def attention_groups(kernels: list[KernelRecord]) -> int:
    """How many layers' attention the kernels hold: attention and softmax kernels count as one
    layer's until a GEMM separates them (cuDNN's backward launches helpers beside its kernel). A
    softmax's statistics alone are no layer's attention: the kernel applying them counts."""
    groups, open_group = 0, False
    for k in kernels:
        cls = category(k)
        if cls in (ATTENTION, SOFTMAX) and not stores_row_statistics(k):
            groups += not open_group
            open_group = True
        elif cls == MATMUL:
            open_group = False
    return groups


def _is_norm(kernel: KernelRecord) -> bool:
    """A LayerNorm kernel, or an RMSNorm's mean of squares (a row reduction)."""
    return category(kernel) in (NORM, REDUCTION)


def forward_gaps(phases: g.Phases, layers: g.Layers | None, whole_layer: bool) -> list[Gap]:
    """Why the forward pass ends before its step's LM head, or (with no backward in the range)
    why the step went on past its loss; nothing when it is whole."""
    why = _forward_cut(phases, layers, whole_layer)
    if why:
        return [Gap("forward", why, FORWARD_FIELDS)]
    losses = [k.index for k in phases.forward if category(k) == LOSS]
    went_on = losses and phases.forward[-1].index > losses[-1]
    if layers and not (losses or phases.backward or phases.optimizer):
        after_head = [k for k in phases.forward if k.index > layers.lm_head.index]
        if any(category(k) == REDUCTION for k in after_head):
            return [
                Gap(
                    "forward",
                    "a reduction runs after the LM head and no loss: the range went on into "
                    "sampling (a generate cut after its prefill), not a forward pass alone",
                    ("mode",),
                )
            ]
    if went_on and not (phases.backward or phases.optimizer):
        return [
            Gap(
                "forward",
                f"{phases.forward[-1].index - losses[-1]} kernel(s) run after the "
                "loss and no gradient kernel: the step went on (a backward on autograd's "
                "thread, an optimizer) past the range's end",
                ("mode",),
            )
        ]
    return []


def _forward_cut(phases: g.Phases, layers: g.Layers | None, whole_layer: bool) -> str | None:
    forward = phases.forward
    # cuBLAS prepares some GEMMs with kernels of no work of their own (an fp32 sgemm_largek's
    # scal_kernel scaling C): a range ending there ends with what ran before them
    working = [k for k in forward if not (category(k) in (MATMUL, MATMUL_AUX) and not g.macs(k))]
    last = category(working[-1]) if working else None
    if last in (NORM, ATTENTION) and not (phases.backward or phases.optimizer):
        return (
            f"the range ends with a {last} kernel, which no forward pass ends with (an output "
            "projection or the LM head follows)"
        )
    if layers is None:
        return None  # no layer structure: infer reports it, and reads no shape from it
    if not whole_layer:
        return (
            "the repeating GEMMs hold no whole Transformer layer (projections, attention, "
            "output projection, MLP): the range may end inside the first layer"
        )
    head = layers.lm_head
    body = [k for k in g.forward_gemms(forward) if k.index < head.index]
    largest = all(g.macs(head) > g.macs(k) for k in body)
    if any(g.same_layer_gemm(head, k, loose=not largest) for k in body):
        return (
            f"the last forward GEMM ({head.name[:40]}...) repeats a layer GEMM's kernel and "
            "work: it is a layer's, not an LM head, so the range ends inside a layer"
        )
    if not any(_is_norm(k) for k in forward if body[-1].index < k.index < head.index):
        return (
            "no norm runs between the last layer GEMM and the last GEMM: a whole forward ends "
            "with the final norm, then the LM head"
        )
    groups = attention_groups([k for k in forward if k.index < head.index])
    if groups != layers.n_layers:
        return (
            f"the GEMMs repeat {layers.n_layers} time(s) but the forward runs {groups} layers' "
            "attention: the layer counts disagree"
        )
    return None


def backward_gaps(phases: g.Phases, n_layers: int | None) -> list[Gap]:
    """Why the backward pass in the range is not whole, or nothing (also when it is not shown)."""
    backward = phases.backward
    if not backward:
        return []
    why = None
    # torch.compile zero-fills the embedding's gradient before the layers' backward and adds the
    # rows into it after them: only a lookup's gradient after the last attention backward counts
    attention = [i for i, k in enumerate(backward) if category(k) in (ATTENTION, SOFTMAX)]
    if not any(_embedding_gradient(k) for k in backward[(attention[-1] if attention else 0) :]):
        why = "the backward pass never reaches the embedding's gradient, its last layer"
    elif n_layers and attention_groups(backward) < n_layers:
        why = (
            f"the backward pass shows {attention_groups(backward)} layers' attention backward "
            f"for {n_layers} forward layers"
        )
    elif (gradients := _gradient_gemms(backward)) < 2 * (forward := len(g.forward_gemms(phases.forward))):
        # the first layer's weight gradients may follow the embedding's: each forward GEMM has a
        # data and a weight gradient, which a cut leaves out
        why = f"the backward pass runs {gradients} GEMMs for the forward's {forward}, two each"
    if why is None:
        return []
    return [
        Gap("backward", why + ": the range ends inside the backward (the optimizer and the mode unknown)", ("mode",))
    ]


def _gradient_gemms(backward: list[KernelRecord]) -> int:
    """The backward's GEMMs of a layer's size, by the forward's rule: an fp32 GEMM's K remainder
    runs as a second, tiny launch that is no gradient of its own."""
    return len(g.forward_gemms(backward))


def _embedding_gradient(kernel: KernelRecord) -> bool:
    """A lookup's gradient, also where inductor fuses it into the first layer's norm or dropout
    backward and the kernel's category goes by the norm it names first."""
    return category(kernel) == EMBEDDING or (is_generated(kernel.name) and "embedding_dense_backward" in kernel.name)


def optimizer_gaps(phases: g.Phases, trained: int | None, least_params: int | None) -> list[Gap]:
    """Why the fused AdamW part of the range is not whole, or nothing. `trained`: the parameters
    its update launches count; `least_params`: the fewest the forward's shapes allow (blocks plus
    one embedding), None when unknown."""
    optimizer = phases.optimizer
    adam = [k for k in optimizer if "adam" in k.name.lower()]
    counters = [k for k in optimizer if not adam or k.index < adam[0].index]
    # the step counters: one element each, so one block and one FADD per parameter tensor
    tensors = (
        sum(k.blocks for k in counters) if counters and all(k.metric(g.FADD) == k.blocks for k in counters) else None
    )
    why = None
    if tensors and not adam:
        why = f"the step counters of {tensors} parameter tensors ran, but no AdamW update"
    elif tensors and len(adam) < ceil_div(tensors, ADAM_TENSORS_PER_LAUNCH):
        why = (
            f"{len(adam)} AdamW launch(es) of at most {ADAM_TENSORS_PER_LAUNCH} tensors cannot "
            f"update the {tensors} parameter tensors the step counters count"
        )
    elif adam and adam[-1].blocks == ADAM_CHUNKS_PER_LAUNCH:
        why = (
            f"the last AdamW launch is a full one ({ADAM_CHUNKS_PER_LAUNCH} chunks): the launches after it are missing"
        )
    elif trained and least_params and trained < least_params:
        why = (
            f"the AdamW launches update {trained:,} parameters, fewer than the forward's layers "
            f"and one embedding hold ({least_params:,})"
        )
    return [Gap("optimizer", why + ": the range ends inside the optimizer", ("params_total",))] if why else []


def generate_gaps(steps: list[list[KernelRecord]], tail: list[KernelRecord]) -> list[Gap]:
    """Why a generate range does not end after the sampling of its last step, or nothing.
    `steps`: the kernels up to each LM head; `tail`: those after the last one."""
    work = [k for k in tail if category(k) in (MATMUL, NORM, ATTENTION)]
    why = None
    if work:
        why = f"a next step had begun ({work[0].name[:40]}... after the last LM head)"
    elif not tail:
        why = "nothing follows the last LM head: a whole generate samples its last token"
    elif not _whole_sampling(tail, steps[-1], after_prefill=len(steps) == 2):
        why = (
            f"the {len(tail)} kernels after the last LM head are not the sampling that follows "
            "the other steps' LM heads"
        )
    return [Gap("generate", why + ": the range ends inside a decode step", ("decode_steps",))] if why else []


def _whole_sampling(tail: list[KernelRecord], step: list[KernelRecord], after_prefill: bool) -> bool:
    """Whether `tail` is a whole sampling like the one `step` (the last step) opens with, compared
    by category: the same op runs as a vectorized or an unrolled kernel as alignment allows. Where
    the only step before is the prefill (one decode step), its sampling is the prefill's, which
    runs other elementwise kernels around the same copies and reductions (a static cache's first
    token): those copies and reductions alone are compared."""
    previous, seen = [category(k) for k in step], [category(k) for k in tail]
    start = forward_start(step)
    if after_prefill and start is not None:
        previous = [c for c in previous[:start] if c != ELEMENTWISE]
        seen, start = [c for c in seen if c != ELEMENTWISE], len(previous)
    return seen == previous[: len(seen)] and (not start or _sampling_ends(previous, len(seen), start))


def _sampling_ends(previous: list[str], tail: int, start: int) -> bool:
    """Whether a tail of `tail` kernels is a whole sampling, given the categories of the step
    before and where its forward began (`start`): all of it, or all but the copies that prepare
    the next step's inputs (a cache position or attention mask copied or built before the lookup)."""
    # The next step's input preparation copies (a cache position, a mask) or, with a static
    # cache, builds its mask anew elementwise; sampling ends with reductions (the argmax, the
    # stopping criteria's any/max), so a cut inside it leaves one of them before the lookup.
    return tail <= start and all(category in (COPY, ELEMENTWISE) for category in previous[tail:start])


def forward_start(step: list[KernelRecord]) -> int | None:
    """Where a decode step's own forward begins after the previous step's sampling: the start of
    the last run of embedding lookups before its first norm or GEMM (None without one)."""
    first_work = next((i for i, k in enumerate(step) if category(k) in (MATMUL, NORM)), len(step))
    lookups = [i for i in range(first_work) if is_lookup(step[i])]
    if not lookups:
        return None
    start = lookups[-1]
    while start - 1 in lookups:
        start -= 1
    return start


def lookups_before_first_gemm(kernels: list[KernelRecord]) -> list[KernelRecord]:
    """Embedding lookups before the first GEMM, in launch order: the token embedding's first in
    every forward pass, then a learned position table's or a kernel named after a lookup it
    fuses; none in a layer."""
    first_gemm = next((i for i, k in enumerate(kernels) if category(k) == MATMUL), len(kernels))
    return [k for k in kernels[:first_gemm] if is_lookup(k)]


def is_lookup(kernel: KernelRecord) -> bool:
    """An embedding lookup (an index_select or gather kernel): every forward pass starts so."""
    name = kernel.name.lower()
    return category(kernel) == EMBEDDING or "gather" in name or "index_select" in name
