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
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    storage = torch.empty(4096, dtype=torch.bfloat16)
    values = [
        0, 1, 2, 15, 16, 17, 32, 48, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16, 2**40 + 3, 2**63, 2**64 - 16,
        0.5, 1.0, None, True, False,
        storage[:64], storage[1:65], storage[8:72], torch.empty(8), torch.empty(8, dtype=torch.int32),
        flash_gluon.descriptor(torch.empty(2, 4, 300, 128, dtype=torch.bfloat16), 64),
        flash_gluon.descriptor(torch.empty(2, 4, 301, 128, dtype=torch.bfloat16), 64),  # another shape, one kernel
        flash_gluon.descriptor(torch.empty(2, 4, 300, 128, dtype=torch.float16), 64),
        flash_gluon.block_descriptors(torch.empty(2, 4, 300, 80, dtype=torch.bfloat16), 64)[1],  # the 16-column tail
        flash_gluon.descriptor(torch.empty(2, 4, 300, 64, dtype=torch.bfloat16), 128),
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
        self.params = [SimpleNamespace(name="x", is_constexpr=False), SimpleNamespace(name="n", is_constexpr=False),
                       SimpleNamespace(name="BLOCK", is_constexpr=True)]
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
