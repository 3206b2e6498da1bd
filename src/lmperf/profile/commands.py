"""CLI commands of lmperf.profile, registered on the main app by lmperf.cli."""

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to `app` (none yet)."""
