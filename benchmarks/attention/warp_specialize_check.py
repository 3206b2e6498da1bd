"""Does Triton apply `tl.range(..., warp_specialize=True)` to the attention kernels on sm90?

`python benchmarks/attention/warp_specialize_check.py 2>/dev/null` (with the device's Triton,
3.6: see sm90_report.py; stderr gets MLIR's reproducer of the configs that fail) compiles flash_triton's forward for an H100 with FWD_WARP_SPECIALIZE off and on,
for every forward tile of TILES at head_dim 64 and 128, causal and not, and prints whether the
TTGIR holds a `ttg.warp_specialize` op and whether the two SASS fingerprints are equal. Equal
fingerprints mean the switch compiled to the same instructions: nothing was specialised.
The dK/dV kernel has no such switch: a copy of flash_triton.py with warp_specialize=True on its
query-tile loop is compiled for its TILES (both dQ modes of its tables) and checked for the op.
"""

import importlib.util
import tempfile
from pathlib import Path

from sass_fingerprint import fingerprint
from sm90_report import compile_sm90, constexprs_for

from lmperf.attention import flash_triton as ft


def main() -> None:
    print(f"triton {ft.triton.__version__}: forward, warp_specialize off vs on")
    for head_dim in (64, 128):
        for causal in (False, True):
            for config in ft.TILES["fwd"][head_dim > 64]:
                base = constexprs_for("fwd", head_dim, causal)
                on = dict(base, WARP_SPECIALIZE=True)
                try:
                    specialised = "ttg.warp_specialize" in compile_sm90(ft._fwd_kernel, config, on).asm["ttgir"]
                except Exception as error:  # 4-warp tiles: the NVGPUWarpSpecialization pass fails
                    print(f"d{head_dim} {'causal' if causal else 'full'} {config}: fails with warp_specialize ({str(error).splitlines()[-1][:60]})")
                    continue
                off_print, on_print = fingerprint(ft._fwd_kernel, config, base), fingerprint(ft._fwd_kernel, config, on)
                same = "same SASS" if off_print == on_print else "different SASS"
                print(f"d{head_dim} {'causal' if causal else 'full'} {config}: warp_specialize op {specialised}, {same} ({on_print})")


QUERY_LOOP = "    for start_m in range(lo, hi, BLOCK_M):"


def backward_loop() -> None:
    source = Path(ft.__file__).read_text()
    assert source.count(QUERY_LOOP) == 1, "the dK/dV kernel's query loop moved: update QUERY_LOOP"
    patched = source.replace(QUERY_LOOP, "    for start_m in tl.range(lo, hi, BLOCK_M, warp_specialize=True):")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flash_triton_ws.py"  # a file: triton.jit reads the kernels' source
        path.write_text(patched)
        spec = importlib.util.spec_from_file_location("flash_triton_ws", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"triton {ft.triton.__version__}: dK/dV kernel, warp_specialize on its query loop")
        for table in ("dkdv", "dkdv_dq"):
            for head_dim in (64, 128):
                for config in ft.TILES[table][head_dim > 64]:
                    constexprs = constexprs_for(table, head_dim, True)
                    try:
                        specialised = "ttg.warp_specialize" in compile_sm90(module._bwd_dkdv_kernel, config, constexprs).asm["ttgir"]
                    except Exception as error:
                        print(f"{table} d{head_dim} causal {config}: fails ({str(error).splitlines()[-1][:60]})")
                        continue
                    print(f"{table} d{head_dim} causal {config}: warp_specialize op {specialised}")


if __name__ == "__main__":
    main()
    backward_loop()
