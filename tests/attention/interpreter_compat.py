"""Triton 3.6's interpreter under NumPy >= 2.4: imported by the interpreted case files.

The interpreter holds a scalar argument as a one-element array and turns it into a Python int
with int(array), which NumPy 2.4 refuses for arrays of one dimension: every loop over a range
with run-time bounds then fails under the interpreter, in kernels that compile fine. Later
Tritons squeeze the array first; here the interpreter's tensor gets the same `__index__`,
only where NumPy refuses (a test-environment fix, no kernel changes).
"""

import numpy as np
from triton.runtime import interpreter


def _needs_squeeze() -> bool:
    try:
        int(np.array([1]))
    except TypeError:
        return True
    return False


if _needs_squeeze() and hasattr(interpreter, "_patch_lang_tensor"):
    _patch_lang_tensor = interpreter._patch_lang_tensor

    def _patch_with_squeeze(tensor, scope):
        _patch_lang_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = _patch_with_squeeze
