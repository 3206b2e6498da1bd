"""A fingerprint of the sm90 machine code of FlashAttention2Triton's kernels, on a machine without a GPU.

`python benchmarks/attention/sass_fingerprint.py > before.txt`, change the kernels' source, run it
again and diff: where every line is equal, the H100 runs the same instructions as before, so a
clean-up that keeps them needs no device time to show it changed neither results nor speed.

Each line is one compiled variant: kernel, head_dim (64 and 128 as one column block, 80 and 96 as
two, 48 as two small ones), causal or not, the dK/dV kernel's dQ mode and GQA group, and the
first tile config of flash_triton.TILES for that kernel and size (the preprocess kernel, which has
none, as the host launches it): the SASS instruction count and a hash of the instructions
(cuobjdump -sass, addresses and comments dropped). Compiled as sm90_report.py does: Triton
ahead-of-time, bf16, every integer argument divisible by 16.
The Triton here should be the device's (3.6 on the H100: `pip install triton==3.6.0` in a
virtual environment): another version compiles other code, and both sides must use the same.
"""

import hashlib
import re

from sm90_report import compile_sm90, cuobjdump

from lmperf.attention import flash_triton as ft

HEAD_DIMS = (64, 128, 80, 96, 48)
# (tile table name, kernel name in ft._KERNELS, extra constexprs)
VARIANTS = [
    ("fwd", "fwd", dict(WARP_SPECIALIZE=False)),
    ("dkdv", "dkdv", dict(DQ_MODE=0, GROUP=1)),
    ("dkdv", "dkdv", dict(DQ_MODE=0, GROUP=4)),
    ("dkdv_dq", "dkdv_dq", dict(DQ_MODE=1, GROUP=1)),
    ("dkdv_dq", "dkdv_dq", dict(DQ_MODE=1, GROUP=4)),
    ("dkdv_dq", "dkdv_dq", dict(DQ_MODE=2, GROUP=1)),
    ("dq", "dq", {}),
]
_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")


def sass_lines(compiled) -> list[str]:
    """The kernel's instructions, one per line, without addresses, encodings or comments."""
    instructions = []
    for line in cuobjdump(compiled, "-sass").splitlines():
        if _ADDRESS.match(line.strip()):  # "/*0070*/   IMAD ... ;   /* 0x... */"
            instructions.append(_ADDRESS.sub("", line.split(";")[0]).strip())
    return instructions


def sass_summary(compiled) -> str:
    """The instruction count and a hash of the instructions: equal, the same machine code."""
    lines = sass_lines(compiled)
    return f"{len(lines)} instructions, {hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:16]}"


def fingerprint(kernel, config, constexprs) -> str:
    try:
        return sass_summary(compile_sm90(kernel, config, constexprs))
    except Exception as error:  # a variant the compiler rejects is a line, not a crash
        return f"failed: {str(error).splitlines()[-1][:100]}"


def main() -> None:
    print(f"triton {ft.triton.__version__}, sm90 SASS per variant: instructions, sha256 of them")
    for head_dim in HEAD_DIMS:
        for causal in (False, True):
            for table, name, extra in VARIANTS:
                # As triton_backward: the "ordered" dK/dV kernel (DQ_MODE 2) pads the head_dim.
                blocks = ft._column_blocks(head_dim, split=extra.get("DQ_MODE") != 2)
                constexprs = dict(HEAD_DIM=head_dim, **blocks, CAUSAL=causal, PRECISION="tf32", **extra)
                config = ft.TILES[table][head_dim > 64][0]
                report = fingerprint(ft._KERNELS[name], config, constexprs)
                print(f"{name} d{head_dim} {'causal' if causal else 'full'} {extra} {config}: {report}", flush=True)
        preprocess = dict(HEAD_DIM=head_dim, **ft._column_blocks(head_dim), BLOCK_M=64)
        # As triton_backward launches it: BLOCK_M 64, Triton's default 4 warps and 3 stages.
        report = fingerprint(ft._bwd_preprocess_kernel, (64, 0, 4, 3), preprocess)
        print(f"preprocess d{head_dim}: {report}", flush=True)


if __name__ == "__main__":
    main()
