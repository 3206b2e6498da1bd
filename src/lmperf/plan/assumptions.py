"""What each predicted figure rests on, in words, for the rows and the report. The sentences
do not depend on the GPU count, only on whether it spans nodes, so a report lists each once."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmperf.plan.predict import PlanInputs


def _lines(inputs: "PlanInputs") -> str:
    lines = inputs.network.links.lines
    return "; ".join(f"{op} {line.alpha_s * 1e6:.1f} us + {line.busbw / 1e9:.1f} GB/s" for op, line in lines.items())


def inside_node(inputs: "PlanInputs") -> str:
    links = inputs.network.links
    measured = " and ".join(str(count) for count in links.nproc)
    return (
        f"Inside a node (up to {inputs.network.gpus_per_node} GPUs): a ring, alpha + bus factor x size / bus "
        f"bandwidth per collective, fitted to {links.source} on {measured} x {links.device} ({_lines(inputs)}); "
        f"taken unchanged at every GPU count of a node"
    )


def between_nodes(inputs: "PlanInputs") -> str:
    network = inputs.network
    return (
        f"Across nodes (above {network.gpus_per_node} GPUs): hierarchical, the ring inside each node, then a "
        f"ring across the nodes per local rank carrying 1/{network.gpus_per_node} of each buffer at "
        f"{network.inter_node_gbps:g} GB/s per GPU (given by --inter-node-gbps, not measured) with the fitted alpha"
    )


def assumptions(inputs: "PlanInputs", n: int) -> list[str]:
    step = inputs.step
    found = [
        f"Weak scaling: {step.batch} sequence(s) of {step.seq_len} tokens per GPU at every GPU count, so each "
        f"GPU computes one GPU's step",
        f"Compute: {inputs.compute.source}",
        inside_node(inputs),
    ]
    if inputs.network.nodes(n) > 1:
        found.append(between_nodes(inputs))
    if inputs.peak_tflops:
        found.append(
            f"MFU: the step's matmul FLOPs per GPU (lmperf's FLOP model) over the predicted step, against "
            f"{inputs.peak_tflops:,.1f} TFLOP/s, the dense {step.precision} peak of {inputs.network.links.device}"
        )
    found += [
        f"Overlap {inputs.overlap.fraction:.0%}: {inputs.overlap.source}. The step pays the most of: the "
        f"collectives no compute runs beside, comm - the compute beside it, (1 - overlap) x comm",
        "Memory per rank: lmperf's analytic model (lmperf.analysis.memory and .sharding), without the "
        "allocator's rounding, fragmentation or workspaces",
    ]
    return found
