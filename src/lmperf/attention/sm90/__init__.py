"""Attention kernels for Hopper (sm90) in Gluon, split by concern as FlashAttention-3's hopper/ is.

    tuning       every tuning choice, each with its reason; `variant` to run an alternative
    resources    the shared memory and registers a tuning asks of an SM
    tma          what TMA can address; head_dim's column blocks (plain torch)
    descriptors  host TMA descriptors and their shared-memory layouts
    schedule     which query tiles each persistent program takes, host and kernel side
    pipeline     the producer/consumer ring and the warp specialisation both kernels use
    forward      the forward kernel and its host launch
    combine      the merge of a split forward's runs over keys
    backward     the backward kernel (dK, dV, dQ) and its host launch
    shape        the structural constants the kernels are written around

lmperf.attention.dispatch decides where these run; lmperf::flash_attention (flash_triton) is the
one PyTorch operator over them and the portable kernels. lmperf.attention.flash_triton imports them only
with the Triton they are written for (dispatch.GLUON_TRITON: they use its internals), so that
another Triton never fails an import.
"""
