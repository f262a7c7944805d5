# cython: boundscheck=False, wraparound=False
"""Copies out of memory maps of files that may be cut while they are read (.npy, HDF5).

A read of a mapped page past a truncated file's end raises SIGBUS and would end the
process; `copy_runs` copies under a guard that turns such a fault into a return value (see
mapguard.h), so the caller raises a typed error instead. Buffers in, buffers out, without
the GIL."""

from libc.stdint cimport int64_t, uint8_t


cdef extern from "mapguard.h" nogil:
    int64_t tfrecnp_guarded_runs(
        const uint8_t *src, size_t src_len, const int64_t *starts, const int64_t *sizes,
        int64_t n, uint8_t *dst
    )


def copy_runs(
    const uint8_t[::1] src,
    const int64_t[::1] starts,
    const int64_t[::1] sizes,
    uint8_t[::1] out,
) -> int:
    """Copies src[starts[i]:starts[i] + sizes[i]], one after another, into out. Returns -1
    when all were copied, else the index of the run whose bytes the mapped file no longer
    holds (out is then partly written). Every run is checked against src and out first."""
    cdef Py_ssize_t n = starts.shape[0], i
    cdef int64_t total = 0, got
    if sizes.shape[0] != n:
        raise ValueError("starts and sizes differ in length")
    for i in range(n):
        if starts[i] < 0 or sizes[i] < 0 or starts[i] > src.shape[0] - sizes[i]:
            raise ValueError(f"run {i} ({starts[i]}, {sizes[i]}) lies outside the source")
        total += sizes[i]
        if total > out.shape[0]:
            raise ValueError(f"the runs hold more than the {out.shape[0]} bytes of out")
    if n == 0:
        return -1
    with nogil:
        got = tfrecnp_guarded_runs(
            &src[0], <size_t>src.shape[0], &starts[0], &sizes[0], n, &out[0] if total else NULL
        )
    if got == -2:
        raise OSError("the SIGBUS guard could not be installed")
    return got
