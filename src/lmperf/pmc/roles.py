"""Which GEMM of a layer is which: the Q/K/V projections, a naive attention's QK^T and P V, the
output projection and the MLP's up- and down-projections, read from the first layer's kernels
around its attention kernel."""

from __future__ import annotations

import re

from lmperf.pmc import gemms as g
from lmperf.analysis.kernels import MATMUL
from lmperf.pmc.kernels import category, is_generated
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.counts import is_compiled

ACTIVATION = re.compile(r"gelu|silu|relu|tanh|sigmoid")


def layer_roles(layer: g.Layers) -> dict | None:
    """Which GEMM of the first layer is which: qkv projections, (naive attention's QK^T, PV), out, MLP."""
    marker = g.attention_marker(layer.first_layer)
    if marker is None:
        return None
    kind, at = marker
    before = [k for k in layer.layer_gemms if k.index < at.index]
    after = [k for k in layer.layer_gemms if k.index > at.index]
    roles = dict(kind=kind, marker=at, qk=None, pv=None, first_layer=layer.first_layer)
    compiled = is_compiled(layer.first_layer)
    if kind == "softmax":
        # QK^T and PV are the matmuls either side of the softmax, whatever their size: in a
        # decode step they are GEMVs too small to count among the layer GEMMs
        matmuls = [k for k in layer.first_layer if category(k) == MATMUL]
        qk = next((k for k in reversed(matmuls) if k.index < at.index), None)
        pv = next((k for k in matmuls if k.index > at.index), None)
        if qk is None or pv is None:
            return None
        if compiled and g.macs(qk) > 0:
            # torch.compile may run the V projection after the softmax, which only P V needs: P V
            # is the matmul after the softmax with QK^T's work (B·H·T²·hd both), and a projection
            # before it belongs with Q and K. One that repeats a projection's kernel and work from
            # before the softmax is the V projection (the K projection's twin), even where its
            # padded work happens to equal QK^T's. QK^T is no projection: P V repeats its kernel
            # and work where the two products have one shape (T = head_dim, or padded tiles).
            seen = {(k.name, g.macs(k)) for k in before if k is not qk}
            later = [k for k in matmuls if k.index > at.index]
            later = [k for k in later if (k.name, g.macs(k)) not in seen] or later
            pv = min(later, key=lambda k: abs(g.macs(k) - g.macs(qk)))
            before = before + [k for k in after if k.index < pv.index]
            after = [k for k in after if k.index > pv.index]
        roles.update(qk=qk, pv=pv)
        before, after = [k for k in before if k is not qk], [k for k in after if k is not pv]
    if compiled and len(after) < 2:
        before, after = _mlp_before_attention(layer.first_layer, before, after)
    if not before or len(after) < 2:
        return None
    out = after[0]
    if compiled:
        # torch.compile may schedule the output projection after an MLP that does not depend on
        # it (GPT-NeoX's parallel residual); it is the least work there: N·d·d against N·d·d_ff
        out = min(after, key=g.macs)
    rest = [k for k in after if k is not out]
    roles.update(qkv=before, out=out, ups=rest[:-1], down=rest[-1] if rest else out)
    return roles


def _mlp_before_attention(
    first_layer: list[KernelRecord], before: list[KernelRecord], after: list[KernelRecord]
) -> tuple[list[KernelRecord], list[KernelRecord]]:
    """A parallel-residual layer (GPT-NeoX) compiled may run its MLP before its attention: the
    GEMMs right before the activation kernel (two of equal work: gate and up) and the one right
    after it (down) move from `before` to `after`, behind the output projection."""
    act = next((k for k in first_layer if is_generated(k.name) and ACTIVATION.search(k.name)), None)
    if act is None or not before or act.index > before[-1].index:
        return before, after
    ups = [k for k in before if k.index < act.index][-2:]
    if len(ups) == 2 and g.macs(ups[0]) != g.macs(ups[1]):
        ups = ups[1:]
    down = next((k for k in before if k.index > act.index), None)
    if down is None or len(ups) == len([k for k in before if k.index < act.index]):
        return before, after  # no projection would be left before the attention
    mlp = [*ups, down]
    return [k for k in before if k not in mlp], [*after, *mlp]


def before_attention(roles: dict, after: KernelRecord, scores: bool = False) -> list[KernelRecord]:
    """The first layer's kernels after `after` and before its attention kernel, or with `scores`
    before the naive attention's QK^T matmul where there is one."""
    end = (roles["qk"] or roles["marker"]) if scores else roles["marker"]
    return [k for k in roles["first_layer"] if after.index < k.index < end.index]
