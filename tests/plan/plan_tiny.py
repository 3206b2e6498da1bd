"""The tiny model the plan's tests count by hand."""

from lmperf.model import ModelConfig

# d 8, d_ff 16, 2 layers, 2 heads of 4, vocabulary 10. One block: norms 2*8, qkv 8*24, out 8*8,
# SwiGLU 3 * 8*16 = 16 + 192 + 64 + 384 = 656; root: embedding 80 + final norm 8 + LM head 80 = 168.
TINY = ModelConfig(d_model=8, d_ff=16, n_layers=2, n_heads=2, vocab_size=10, max_seq_len=16)
BLOCK, ROOT = 656, 168
