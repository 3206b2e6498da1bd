"""launch.CachedLaunch on the CPU: its key against Triton's own specialisation, and what it calls."""

import itertools
from types import SimpleNamespace

import pytest
import torch

launch = pytest.importorskip("lmperf.attention.launch")


def _triton_specialisation():
    """Triton's own per-argument specialisation (what JITFunction.run keys its compiled kernels on)."""
    libtriton = pytest.importorskip("triton._C.libtriton")
    backend = pytest.importorskip("triton.backends.compiler").BaseBackend
    if not hasattr(libtriton, "native_specialize_impl"):
        pytest.skip("this Triton has no native_specialize_impl")
    return lambda value: libtriton.native_specialize_impl(backend, value, False, True, True)


def test_the_key_separates_whatever_triton_compiles_apart():
    """Two arguments with one key must get one specialisation from Triton; a key coarser than
    Triton's would launch a kernel compiled for other values (an int that is 1 is a constexpr,
    one divisible by 16 carries tt.divisibility, a misaligned pointer must not take the aligned
    kernel). Finer is allowed (a recompile at worst)."""
    triton_key = _triton_specialisation()
    descriptors = pytest.importorskip("lmperf.attention.sm90.descriptors")
    storage = torch.empty(4096, dtype=torch.bfloat16)
    values = [
        0,
        1,
        2,
        15,
        16,
        17,
        32,
        48,
        -1,
        -16,
        2**31 - 16,
        2**31 - 1,
        2**31,
        2**31 + 16,
        2**40 + 3,
        2**63,
        2**64 - 16,
        0.5,
        1.0,
        None,
        True,
        False,
        storage[:64],
        storage[1:65],
        storage[8:72],
        torch.empty(8),
        torch.empty(8, dtype=torch.int32),
        descriptors.descriptor(torch.empty(2, 4, 300, 128, dtype=torch.bfloat16), 64),
        descriptors.descriptor(torch.empty(2, 4, 301, 128, dtype=torch.bfloat16), 64),  # another shape, one kernel
        descriptors.descriptor(torch.empty(2, 4, 300, 128, dtype=torch.float16), 64),
        descriptors.block_descriptors(torch.empty(2, 4, 300, 80, dtype=torch.bfloat16), 64)[1],  # the 16-column tail
        descriptors.descriptor(torch.empty(2, 4, 300, 64, dtype=torch.bfloat16), 128),
    ]
    for a, b in itertools.combinations(values, 2):
        if launch.specialisation(a) == launch.specialisation(b):
            assert triton_key(a) == triton_key(b), (a, b)
    # and it is not coarse in a way that hides anything Triton tells apart among these
    assert len({repr(triton_key(v)) for v in values}) <= len({repr(launch.specialisation(v)) for v in values})


def test_an_argument_without_a_rule_is_refused():
    with pytest.raises(TypeError):
        launch.specialisation(object())


class _Compiled:
    """A stand-in CompiledKernel: `[grid](*args)` records the launch."""

    def __init__(self, log):
        self.log, self.run, self.function = log, object(), object()

    def __getitem__(self, grid):
        return lambda *args: self.log.append(("cached", grid, args))


class _Kernel:
    """A stand-in JITFunction of parameters (x, n, BLOCK: constexpr): `[grid](...)` "compiles" and
    returns a compiled kernel, as JITFunction.run does; `interpreted` returns None instead."""

    def __init__(self, interpreted=False):
        self.params = [
            SimpleNamespace(name="x", is_constexpr=False),
            SimpleNamespace(name="n", is_constexpr=False),
            SimpleNamespace(name="BLOCK", is_constexpr=True),
        ]
        self.log, self.interpreted = [], interpreted

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.log.append(("run", grid, args, kwargs))
            return None if self.interpreted else _Compiled(self.log)

        return run


def test_a_repeat_goes_to_the_compiled_kernel_with_every_argument_in_order():
    kernel = _Kernel()
    cached = launch.CachedLaunch(kernel)
    x = torch.empty(32)
    cached((4,), x, 32, BLOCK=64)
    cached((8, 2), x, 48, BLOCK=64)  # n: another value, the same specialisation (% 16, not 1)
    assert kernel.log == [("run", (4,), (x, 32), {"BLOCK": 64}), ("cached", (8, 2, 1), (x, 48, 64))]


def test_a_new_specialisation_or_constexpr_goes_through_the_kernel_again():
    kernel = _Kernel()
    cached = launch.CachedLaunch(kernel)
    x = torch.empty(64)
    cached((1,), x, 32, BLOCK=64)
    cached((1,), x, 33, BLOCK=64)  # n no longer divisible by 16
    cached((1,), x, 1, BLOCK=64)  # n == 1: a constexpr to Triton
    cached((1,), x, 32, BLOCK=128)  # another constexpr value
    cached((1,), x[1:], 32, BLOCK=64)  # a pointer off 16-byte alignment
    cached((1,), x.to(torch.float16), 32, BLOCK=64)  # another dtype
    cached((1,), x, 32, BLOCK=64, num_stages=2)  # a launch option
    assert [entry[0] for entry in kernel.log] == ["run"] * 7
    cached((1,), x, 64, BLOCK=64)
    assert kernel.log[-1][0] == "cached"


def test_under_the_interpreter_every_call_goes_through_the_kernel():
    kernel = _Kernel(interpreted=True)
    cached = launch.CachedLaunch(kernel)
    for _ in range(3):
        cached((1,), torch.empty(16), 16, BLOCK=16)
    assert [entry[0] for entry in kernel.log] == ["run"] * 3 and not cached.compiled
    # the interpreter's InterpretedFunction has no params: no key is made, every call runs it
    del kernel.params
    cached = launch.CachedLaunch(kernel)
    cached((2,), object(), 16, BLOCK=16)  # an argument without a specialisation rule: no key was asked
    assert kernel.log[-1][:2] == ("run", (2,))


def test_while_torch_compile_traces_every_call_goes_through_the_kernel(monkeypatch):
    """Dynamo traces `kernel[grid](...)` as a Triton kernel launch; a compiled kernel's launcher
    taken from the cache would be opaque to it. So while tracing nothing is served or stored."""
    kernel = _Kernel()
    cached = launch.CachedLaunch(kernel)
    x = torch.empty(32)
    cached((1,), x, 32, BLOCK=64)  # compiled and stored outside tracing
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    cached((1,), x, 32, BLOCK=64)
    cached((1,), x, 48, BLOCK=64)
    assert [entry[0] for entry in kernel.log] == ["run"] * 3 and len(cached.compiled) == 1


class _Descriptor:
    """A host tensor descriptor stand-in: what DirectLaunch reads of one."""

    def __init__(self, base, shape, strides):
        self.base, self.shape, self.strides, self.padding = base, shape, strides, "zero"


def _triton36_compiled(log, positions, metas, scratch=0):
    """A CompiledKernel stand-in whose launcher has Triton 3.6's layout: `run.launch` is a closure
    named `inner` over the C function and the descriptors' positions and metadata."""

    def c_function(*args):
        log.append(("c", args))

    def make_inner(launcher, tensordesc_indices, tensordesc_meta):
        def inner(*args):
            return launcher, tensordesc_indices, tensordesc_meta

        return inner

    c_function.__name__ = "launch"  # as the compiled C module's function is named
    launch_fn = make_inner(c_function, set(positions), metas) if positions else c_function
    run = SimpleNamespace(
        launch=launch_fn,
        launch_cooperative_grid=False,
        launch_pdl=True,
        global_scratch_size=scratch,
        profile_scratch_size=0,
    )
    compiled = _Compiled(log)
    compiled.run, compiled.function, compiled.packed_metadata = run, "function", ("metadata",)
    return compiled


@pytest.fixture
def triton36(monkeypatch):
    """launch's view of the CUDA driver: Triton 3.6's argument layout, a make_tensordesc_arg that
    logs each call and returns a recognisable expansion, a fixed device and stream."""
    made = []

    def make_tensordesc_arg(desc, meta):
        made.append(desc)
        return [("map", desc.base.data_ptr(), meta), *desc.shape, *desc.strides]

    monkeypatch.setattr(
        launch,
        "_cuda_driver",
        SimpleNamespace(_BASE_ARGS_FORMAT="iiiKKppOOOOOO", make_tensordesc_arg=make_tensordesc_arg),
    )
    active = SimpleNamespace(get_current_device=lambda: 3, get_current_stream=lambda device: 1000 + device)
    triton = pytest.importorskip("triton")
    monkeypatch.setattr(triton.runtime.driver, "_active", active, raising=False)
    monkeypatch.setattr(type(triton.runtime.driver), "active", property(lambda self: active), raising=False)
    return made


def test_direct_launch_expands_descriptors_in_place_and_reuses_their_maps(triton36):
    log = []
    direct = launch.DirectLaunch.of(_triton36_compiled(log, positions=[1, 3], metas=["m1", "m3"]))
    assert isinstance(direct, launch.DirectLaunch)
    x, y = torch.empty(64), torch.empty(64)
    first, second = _Descriptor(x, (2, 8), (8, 1)), _Descriptor(y, (4, 4), (4, 1))
    direct((5, 1, 1), ["a", first, 7, second, None])
    head = (5, 1, 1, 1003, "function", False, True, None, None, ("metadata",), None, None, None)
    expected = ["a", ("map", x.data_ptr(), "m1"), 2, 8, 8, 1, 7, ("map", y.data_ptr(), "m3"), 4, 4, 4, 1, None]
    assert log == [("c", head + tuple(expected))]
    # the same address, shape and strides again (a new descriptor object): no new map
    direct((5, 1, 1), ["a", _Descriptor(x, (2, 8), (8, 1)), 7, second, None])
    assert log[-1] == log[0] and len(triton36) == 2
    # another shape at the same address: a new map for that position only
    direct((6, 1, 1), ["b", _Descriptor(x, (3, 8), (8, 1)), 7, second, None])
    assert len(triton36) == 3 and log[-1][1][13:15] == ("b", ("map", x.data_ptr(), "m1"))
    assert log[-1][1][15:19] == (3, 8, 8, 1)


def test_direct_launch_leaves_hooks_scratch_and_other_launchers_to_triton(triton36, monkeypatch):
    log = []
    assert launch.DirectLaunch.of(_triton36_compiled(log, [0], ["m"], scratch=128)) is None  # needs scratch memory
    assert launch.DirectLaunch.of(_triton36_compiled(log, [0], [None])) is None  # descriptors without TMA
    assert launch.DirectLaunch.of(_Compiled(log)) is None  # no launcher with that layout
    monkeypatch.setattr(launch._cuda_driver, "_BASE_ARGS_FORMAT", "iiiKKppOOOOOOO")  # another Triton's layout
    assert launch.DirectLaunch.of(_triton36_compiled(log, [0], ["m"])) is None
    monkeypatch.setattr(launch._cuda_driver, "_BASE_ARGS_FORMAT", "iiiKKppOOOOOO")
    direct = launch.DirectLaunch.of(_triton36_compiled(log, [0], ["m"]))
    triton = pytest.importorskip("triton")
    if hasattr(triton.knobs, "HookChain"):  # Triton's own empty chain, as every launch finds it: direct
        monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", triton.knobs.HookChain())
        direct((1, 1, 1), [_Descriptor(torch.empty(8), (8,), (1,))])
        assert log[-1][0] == "c"
        chain = triton.knobs.HookChain()
        chain.add(lambda metadata: None)  # a profiler's hook
        monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", chain)
        direct((1, 1, 1), [_Descriptor(torch.empty(8), (8,), (1,))])
        assert log[-1][0] == "cached"  # through compiled[grid], which calls the hook
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: None)
    direct((1, 1, 1), [_Descriptor(torch.empty(8), (8,), (1,))])
    assert log[-1][0] == "cached" and len(triton36) <= 1


def test_a_cached_launch_goes_direct_where_the_launcher_is_known(triton36):
    log = []

    class Kernel(_Kernel):
        def __getitem__(self, grid):
            def run(*args, **kwargs):
                self.log.append(("run", grid, args, kwargs))
                return _triton36_compiled(log, positions=[], metas=[])

            return run

    kernel = Kernel()
    cached = launch.CachedLaunch(kernel)
    x = torch.empty(32)
    cached((4,), x, 32, BLOCK=64)
    cached((8, 2), x, 48, BLOCK=64)
    assert kernel.log == [("run", (4,), (x, 32), {"BLOCK": 64})]
    assert log == [
        ("c", (8, 2, 1, 1003, "function", False, True, None, None, ("metadata",), None, None, None, x, 48, 64))
    ]
