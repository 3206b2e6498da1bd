"""Launch a Triton or Gluon kernel without `JITFunction.run`'s per-call binding once the same
specialisation has been compiled.

`kernel[grid](*args)` binds and specialises every argument, builds a cache key and checks the
kernel's globals on every call: for a short attention call, host time comparable to the GPU's.
`CachedLaunch` keeps, per kernel, the compiled kernel of each key of what Triton compiles
differently for (`specialisation`), and on a repeat hands the arguments straight to that
compiled kernel's launcher, as `JITFunction.run` itself does after its bookkeeping. A key's
first call goes through `kernel[grid]`, compiling if needed; under Triton's interpreter (no
compiled kernel comes back) and while torch.compile traces every call does.

With Triton 3.6's CUDA launcher (`DirectLaunch`) a repeat skips two more layers: the compiled
kernel's Python runner and launcher (device and stream lookups, launch hooks' metadata, scratch
checks, the argument loop that turns each tensor descriptor into a CUtensorMap) go, and the
launcher's C function gets the expanded arguments, each descriptor's CUtensorMap made once per
(address, shape, strides) and reused. Another Triton's launcher is not recognised
(`DirectLaunch.of` is None) and repeats go through the compiled kernel's runner.
"""

from __future__ import annotations

import torch


def _int_specialisation(value: int) -> tuple:
    width = "i32" if -(2**31) <= value < 2**31 else "u64" if value >= 2**63 else "i64"
    return int, value == 1, value % 16 == 0, width


def _tensor_specialisation(value: torch.Tensor) -> tuple:
    return torch.Tensor, value.dtype, value.data_ptr() % 16 == 0


# The common argument types by exact type: a key is made on every launch, and the isinstance chain
# below costs about a microsecond an argument, with 13 to 30 arguments a launch.
_BY_TYPE = {bool: type, type(None): type, float: type, int: _int_specialisation, torch.Tensor: _tensor_specialisation}


def specialisation(value) -> object:
    """What Triton (3.6's native_specialize_impl) compiles a non-constexpr argument differently
    for: an int by whether it is 1 (a constexpr then), divisible by 16, and its 32/64-bit range;
    a tensor by dtype and 16-byte alignment; a tensor descriptor by dtype, box and shared layout
    (shape and strides are run-time values); a bool, float or None by type alone."""
    rule = _BY_TYPE.get(type(value))
    if rule is not None:
        return rule(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return type(value)
    if isinstance(value, int):
        return _int_specialisation(value)
    if isinstance(value, torch.Tensor):
        return _tensor_specialisation(value)
    if hasattr(value, "block_shape") and hasattr(value, "layout"):  # a host TensorDescriptor
        return type(value), value.base.dtype, tuple(value.block_shape), value.layout
    raise TypeError(f"no specialisation rule for a {type(value).__name__} argument")


try:  # Triton 3.6's CUDA launcher, whose layout DirectLaunch knows; another Triton: None
    from triton.backends.nvidia import driver as _cuda_driver
except ImportError:  # pragma: no cover - a Triton without the NVIDIA backend
    _cuda_driver = None
_LAUNCHER_ARGS = "iiiKKppOOOOOO"  # grid, stream, function, cooperative, PDL, two scratch buffers, metadata, hooks
_MAX_TENSOR_MAPS = 4096  # CUtensorMaps kept per compiled kernel before the cache starts over


def _c_launch(compiled):
    """(the C launch function, {argument position: tensor-descriptor metadata}) of a compiled
    kernel whose launcher has Triton 3.6's layout, or None: another Triton, a stand-in, a kernel
    that needs scratch memory, or descriptors lowered without TMA (their expansion would hold
    the tensor itself)."""
    run = getattr(compiled, "run", None)
    launch = getattr(run, "launch", None)
    if (
        launch is None
        or _cuda_driver is None
        or getattr(_cuda_driver, "_BASE_ARGS_FORMAT", None) != _LAUNCHER_ARGS
        or not all(hasattr(compiled, name) for name in ("function", "packed_metadata"))
        or not all(hasattr(run, name) for name in ("launch_cooperative_grid", "launch_pdl"))
        or getattr(run, "global_scratch_size", 1)
        or getattr(run, "profile_scratch_size", 1)
    ):
        return None
    if getattr(launch, "__name__", None) != "inner":  # the C function itself: no tensor-descriptor arguments
        return launch, {}
    # wrap_handle_tensordesc's `inner`, which expands each descriptor argument before the C call
    code = launch.__code__
    cells = dict(zip(code.co_freevars, (cell.cell_contents for cell in launch.__closure__ or ())))
    if set(cells) != {"launcher", "tensordesc_indices", "tensordesc_meta"}:
        return None
    positions, metas = sorted(cells["tensordesc_indices"]), cells["tensordesc_meta"]
    if not metas or len(metas) != len(positions) or any(meta is None for meta in metas):
        return None
    return cells["launcher"], dict(zip(positions, metas))


def _hooked(hook) -> bool:
    """Whether a launch hook would do anything: Triton 3.6 keeps each as a HookChain, empty unless
    a profiler added to it (its launcher calls the chain, and builds the launch metadata the
    hooks take, on every launch all the same)."""
    return hook is not None and bool(getattr(hook, "calls", True))


class DirectLaunch:
    """A compiled kernel's C launch function, called with the arguments Triton 3.6's Python
    layers would have built: `DirectLaunch.of(compiled)` is None where `_c_launch` does not
    recognise the launcher. While a launch hook is set (a profiler such as proton), every call
    goes through the compiled kernel, which calls the hook."""

    def __init__(self, compiled, c_launch, descriptors: dict):
        import triton

        self.compiled, self.c_launch, self.descriptors = compiled, c_launch, descriptors
        self.hooks = triton.knobs.runtime
        active = triton.runtime.driver.active
        self.current_device, self.current_stream = active.get_current_device, active.get_current_stream
        run = compiled.run
        self.head = (
            compiled.function,
            run.launch_cooperative_grid,
            run.launch_pdl,
            None,
            None,
            compiled.packed_metadata,
            None,
            None,
            None,
        )
        self.tensor_maps: dict = {}

    @classmethod
    def of(cls, compiled):
        found = _c_launch(compiled)
        return None if found is None else cls(compiled, *found)

    def expand(self, values: list) -> list:
        """The C function's kernel arguments: each tensor descriptor as its CUtensorMap, shape
        and strides (Triton's make_tensordesc_arg, made once per address, shape and strides: a
        CUtensorMap holds nothing else that varies for one compiled kernel), the rest as given."""
        args, start = [], 0
        for position, meta in self.descriptors.items():
            args += values[start:position]
            desc = values[position]
            key = (position, desc.base.data_ptr(), tuple(desc.shape), tuple(desc.strides), desc.padding)
            expanded = self.tensor_maps.get(key)
            if expanded is None:
                if len(self.tensor_maps) >= _MAX_TENSOR_MAPS:
                    self.tensor_maps.clear()
                expanded = self.tensor_maps[key] = _cuda_driver.make_tensordesc_arg(desc, meta)
            args += expanded
            start = position + 1
        args += values[start:]
        return args

    def __call__(self, grid: tuple, values: list) -> None:
        if _hooked(self.hooks.launch_enter_hook) or _hooked(self.hooks.launch_exit_hook):
            self.compiled[grid](*values)
            return
        stream = self.current_stream(self.current_device())
        self.c_launch(grid[0], grid[1], grid[2], stream, *self.head, *self.expand(values))


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
        by_type = _BY_TYPE
        return (
            torch.cuda.current_device() if torch.cuda.is_available() else None,
            tuple(
                value if constexpr else (by_type.get(type(value)) or specialisation)(value)
                for value, constexpr in zip(values, self.constexpr)
            ),
            tuple(sorted(options.items())) if options else (),
        )

    def __call__(self, grid: tuple, *args, **kwargs):
        # While torch.compile traces, Dynamo must see `kernel[grid](...)` (it traces that launch as a
        # Triton kernel, not the compiled kernel's launcher), and the interpreter has no compiled kernel.
        if self.names is None or torch.compiler.is_compiling():
            self.kernel[grid](*args, **kwargs)
            return
        values = list(args) + [kwargs[name] for name in self.names[len(args) :]]
        options = {name: value for name, value in kwargs.items() if name not in self.names}
        key = self.key(values, options)
        launch = self.compiled.get(key)
        if launch is not None:
            launch(tuple(grid) + (1,) * (3 - len(grid)), values)
            return
        compiled = self.kernel[grid](*args, **kwargs)
        if hasattr(compiled, "result"):  # an asynchronous compile's future
            compiled = compiled.result()
        if hasattr(compiled, "run") and hasattr(compiled, "function"):  # a CompiledKernel (not the interpreter)
            self.compiled[key] = DirectLaunch.of(compiled) or (lambda grid, values: compiled[grid](*values))
