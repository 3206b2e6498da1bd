"""Which counter sees an LM head's N·V logits exactly? `F.linear` of (N, d) by (V, d), one NVTX
range per case, for V that are multiples of 16, of 8 only, and odd, on the kernels cuBLAS picks.
Run under ncu by pmc_sweep2_h100.sh; `--summary CSV` prints each counter over N·V·bytes."""

import csv
import sys

CASES = [  # (N rows, V, d, dtype)
    (400, 32000, 896, "bfloat16"), (400, 151936, 896, "bfloat16"), (129, 32008, 1024, "bfloat16"),
    (1000, 50304, 768, "float16"), (254, 8000, 1024, "bfloat16"), (77, 16000, 512, "bfloat16"),
    (333, 50257, 1600, "float16"), (1, 32000, 896, "bfloat16"),
]
COUNTERS = ("sm__sass_data_bytes_mem_global_op_st.sum",
            "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum",
            "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_op_write.sum")
SCALE = {"lts__t_sectors_srcunit_tex_op_write.sum": 32, "lts__t_sectors_op_write.sum": 32}


def run() -> None:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    for n, v, d, dtype in CASES:
        x = torch.randn(n, d, device="cuda", dtype=getattr(torch, dtype))
        w = torch.randn(v, d, device="cuda", dtype=getattr(torch, dtype))
        F.linear(x, w)  # warm-up outside the range
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(f"N{n}_V{v}_{dtype}")
        F.linear(x, w)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def summary(path: str) -> None:
    lines = [line for line in open(path, encoding="utf-8") if line.startswith('"')]
    rows = list(csv.DictReader(lines))[1:]  # the units row after the header
    if len(rows) != len(CASES):  # one kernel per case expected; else the raw values
        print(f"{len(rows)} kernels for {len(CASES)} cases:")
        for row in rows:
            print(row["Kernel Name"][:60], [row.get(name) for name in COUNTERS])
        return
    for (n, v, _, dtype), row in zip(CASES, rows):
        expected = n * v * (4 if dtype == "float32" else 2)
        ratios = []
        for name in COUNTERS:
            value = float((row.get(name) or "nan").replace(",", "") or "nan")
            ratios.append(f"{name.split('__')[1][:34]}={value * SCALE.get(name, 1) / expected:.5f}")
        print(f"N={n} V={v} {dtype} {row['Kernel Name'][:48]} grid={row.get('Grid Size')} "
              + " ".join(ratios))


if __name__ == "__main__":
    summary(sys.argv[2]) if sys.argv[1:2] == ["--summary"] else run()
