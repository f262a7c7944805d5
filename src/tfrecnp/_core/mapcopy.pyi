"""Copies out of memory maps of files that may be cut while they are read (.npy, HDF5),
under a SIGBUS guard: a fault inside the copied bytes is a return value, not a signal."""

import numpy as np
from numpy.typing import NDArray

def copy_runs(
    src: NDArray[np.uint8] | memoryview,
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out: NDArray[np.uint8],
) -> int: ...
