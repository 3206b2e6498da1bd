"""The one error type that means "the user asked for something impossible".

Library code raises `UsageError` for bad input; the CLI turns it into one line on stderr and
exit status 2. Everything else is a bug and keeps its traceback.
"""


class UsageError(ValueError):
    """Bad input from the user: unknown preset, impossible sizes, missing CUDA or tools."""
