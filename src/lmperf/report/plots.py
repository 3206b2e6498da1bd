"""matplotlib for files: every plot is written to a PNG, never shown, so no display is needed."""

from __future__ import annotations


def pyplot():
    """matplotlib.pyplot on the Agg (file-only) backend, imported late: plotting is optional work
    and matplotlib costs a second to import."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
