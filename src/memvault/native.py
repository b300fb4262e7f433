"""Load the C++ runtime shared by the process's native libraries before usearch's module.

usearch's compiled module links libstdc++ statically and exports its GNU-unique symbols (the
locale facets' ids among them: ``nm -D`` lists 107). A unique symbol has one definition per
process, the first loaded, so when usearch loads before PyTorch or ONNX Runtime, their
libstdc++ binds to usearch's copies: importing ``onnxruntime`` after ``usearch.compiled``
crashes the process (a segmentation fault), and PyTorch's TorchScript tracer spins forever
(the class of pytorch/pytorch#109923). Loading the system's ``libstdc++.so.6`` first, with
``RTLD_GLOBAL``, makes its definitions the process's, and every later library, usearch
included, binds to them (checked here: both then work, in either import order after this).

``import memvault`` calls :func:`load_shared_cxx_runtime` (one ``dlopen`` of a library most
processes hold already), and so does :class:`~memvault.vectors.AnnIndex` before it imports
usearch. A program that imports usearch itself before memvault is too late for it:
:func:`cxx_runtime_shared` then says so, and the ONNX embedder refuses to load rather than crash.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

_loaded = False
_shared = True
_lock = threading.Lock()


def load_shared_cxx_runtime() -> None:
    """Load the system's libstdc++ into the process's global namespace, once; a no-op off
    Linux, when no libstdc++ is found, or when usearch is already loaded (too late to help)."""
    global _loaded, _shared
    with _lock:
        if _loaded or not sys.platform.startswith("linux"):
            _loaded = True
            return
        _loaded = True
        if "usearch.compiled" in sys.modules:
            _shared = False
            return
        # the soname: one dlopen (about 1.6 ms); find_library, only if that fails, imports
        # subprocess and runs ldconfig (about 30 ms)
        if not _open_global("libstdc++.so.6"):
            from ctypes.util import find_library

            _open_global(find_library("stdc++"))


def _open_global(name: str | None) -> bool:
    """``dlopen(name, RTLD_GLOBAL)``; whether it loaded."""
    if name is None:
        return False
    try:
        ctypes.CDLL(name, mode=os.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def cxx_runtime_shared() -> bool:
    """Whether libraries loaded from now on can use the process's C++ runtime safely: ``False``
    only on Linux when usearch's module was loaded before :func:`load_shared_cxx_runtime` ran."""
    load_shared_cxx_runtime()
    return _shared
