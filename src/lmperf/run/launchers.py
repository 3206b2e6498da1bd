"""Runners that a feature offers to the others without being imported by them.

`lmperf bench --nproc N` runs bench's sweep data-parallel, which the distributed feature knows how
to launch; bench must not import it (features sit side by side). The distributed feature
registers its runner here when its commands are registered, and bench looks it up by name.
"""

from __future__ import annotations

from typing import Callable

from lmperf.errors import UsageError

_RUNNERS: dict[str, Callable] = {}
DATA_PARALLEL = "data-parallel"  # runner(options: SweepOptions, nproc, strategy, given) -> None


def register_runner(name: str, runner: Callable) -> None:
    _RUNNERS[name] = runner


def runner(name: str) -> Callable:
    """The runner registered under `name`; a UsageError when no feature offers it."""
    try:
        return _RUNNERS[name]
    except KeyError:
        raise UsageError(
            f"no {name} runner is registered (lmperf.distributed offers it through the lmperf CLI)"
        ) from None
