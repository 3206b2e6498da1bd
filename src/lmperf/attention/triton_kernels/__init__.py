"""The portable FlashAttention-2 kernels in Triton (any GPU Triton supports, and its interpreter).

    common    pieces both directions share: key ranges, row masks and loads, the grid
    forward   the forward kernel
    backward  the preprocess, dK/dV (with dQ shares) and dQ kernels
    tiles     their tile sizes (autotuned, fixed, interpreted) and head_dim's column blocks

lmperf.attention.flash_triton launches them behind an autograd Function.
"""
