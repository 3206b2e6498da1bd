"""The structural constants of the sm90 kernels: the kernels are written around them, so they are
not tuning fields (lmperf.attention.sm90.tuning holds those)."""

HEAD_DIMS = (64, 80, 128)  # head dims whose tiles are fitted to the registers and shared memory
ROWS = 64  # query rows of a consumer warp group: one wgmma's M
CONSUMERS = 2  # consumer warp groups of a forward program, which holds CONSUMERS x ROWS query rows
BACKWARD_KEYS = 64  # keys of a backward consumer warp group; a program holds two of them (128 keys)
DQ_COLUMNS = 64  # dQ_i columns a backward warp group makes: 64 x 128 fp32 would not fit beside dK, dV
COMBINE_ELEMENTS = 8192  # values the split-keys merge loads at once: 64 fp32 registers a thread of four warps
