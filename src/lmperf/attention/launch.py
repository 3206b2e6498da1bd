"""Launch a Triton or Gluon kernel without `JITFunction.run`'s per-call binding once the same
specialisation has been compiled.

`kernel[grid](*args)` binds and specialises every argument, builds a cache key and checks the
kernel's globals on every call. For the attention kernels that was a large share of a short call's
host time: cProfile put the binder, key and checks at about a fifth of a d=128 forward + backward's
CPU time, which at 1-2k keys is as long as the GPU's (benchmarks/attention/host-fwd-bwd-h100-57ee77c,
model-h100-42c284b/host-profile.txt). `CachedLaunch` keeps, per kernel, the compiled kernel of
each key of what Triton compiles differently for (`specialisation`), and on a repeat hands the
arguments straight to that compiled kernel's launcher, as `JITFunction.run` itself does after its
bookkeeping. A key's first call goes through `kernel[grid]`, compiling if needed; under Triton's
interpreter (no compiled kernel comes back) and while torch.compile traces every call does.
"""

from __future__ import annotations

import torch


def specialisation(value) -> object:
    """What Triton (3.6's native_specialize_impl) compiles a non-constexpr argument differently
    for: an int by whether it is 1 (a constexpr then), divisible by 16, and its 32/64-bit range;
    a tensor by dtype and 16-byte alignment; a tensor descriptor by dtype, box and shared layout
    (shape and strides are run-time values); a bool, float or None by type alone."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return type(value)
    if isinstance(value, int):
        width = "i32" if -2**31 <= value < 2**31 else "u64" if value >= 2**63 else "i64"
        return int, value == 1, value % 16 == 0, width
    if isinstance(value, torch.Tensor):
        return torch.Tensor, value.dtype, value.data_ptr() % 16 == 0
    if hasattr(value, "block_shape") and hasattr(value, "layout"):  # a host TensorDescriptor
        return type(value), value.base.dtype, tuple(value.block_shape), value.layout
    raise TypeError(f"no specialisation rule for a {type(value).__name__} argument")


class CachedLaunch:
    """`CachedLaunch(kernel)(grid, *args, **kwargs)` launches as `kernel[grid](*args, **kwargs)`
    does. Every parameter must be given (no defaults); keyword arguments that are not parameters
    (launch options such as num_warps where the kernel does not declare it) enter the key."""

    def __init__(self, kernel):
        self.kernel = kernel
        # Triton's interpreter (TRITON_INTERPRET=1) wraps kernels as InterpretedFunctions, which
        # have no params: every call then goes through kernel[grid].
        params = getattr(kernel, "params", None)
        self.names = None if params is None else [param.name for param in params]
        self.constexpr = None if params is None else [param.is_constexpr for param in params]
        self.compiled: dict = {}

    def key(self, values: list, options: dict) -> tuple:
        """The device, each parameter's value (constexprs) or `specialisation`, and the options."""
        return (
            torch.cuda.current_device() if torch.cuda.is_available() else None,
            tuple(value if constexpr else specialisation(value) for value, constexpr in zip(values, self.constexpr)),
            tuple(sorted(options.items())),
        )

    def __call__(self, grid: tuple, *args, **kwargs):
        # While torch.compile traces, Dynamo must see `kernel[grid](...)` (it traces that launch as a
        # Triton kernel, not the compiled kernel's launcher), and the interpreter has no compiled kernel.
        if self.names is None or torch.compiler.is_compiling():
            self.kernel[grid](*args, **kwargs)
            return
        values = list(args) + [kwargs[name] for name in self.names[len(args):]]
        options = {name: value for name, value in kwargs.items() if name not in self.names}
        key = self.key(values, options)
        compiled = self.compiled.get(key)
        if compiled is not None:
            compiled[tuple(grid) + (1,) * (3 - len(grid))](*values)
            return
        compiled = self.kernel[grid](*args, **kwargs)
        if hasattr(compiled, "result"):  # an asynchronous compile's future
            compiled = compiled.result()
        if hasattr(compiled, "run") and hasattr(compiled, "function"):  # a CompiledKernel (not the interpreter)
            self.compiled[key] = compiled
