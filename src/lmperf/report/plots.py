"""matplotlib for files: every plot is written to a PNG, never shown, so no display is needed."""

from __future__ import annotations

from pathlib import Path

from lmperf.report.files import replace_whole


def pyplot():
    """matplotlib.pyplot on the Agg (file-only) backend, imported late: plotting is optional work
    and matplotlib costs a second to import."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path) -> Path:
    """`fig` written whole to `path` (a PNG), then closed, also when the write fails."""
    try:
        return replace_whole(path, lambda temporary: fig.savefig(temporary, dpi=120))
    finally:
        pyplot().close(fig)
