"""What every fuzz target shares: atheris set up over this checkout's tfrecnp, the errors
that count as a proper answer, scratch files in memory, and the limits that turn a hang or
an allocation blow-up into a finding.

A target imports tfrecnp inside `instrumented()`, so atheris sees the branches of its Python
layer. The compiled core is plain C to atheris; `make fuzz-core` builds a copy instrumented
for libFuzzer (clang -fsanitize=fuzzer-no-link) under build/fuzz/, and with
TFRECNP_FUZZ_NATIVE=build/fuzz the targets load that copy (its edges then count as
coverage too) and the libFuzzer runtime it needs, built from clang's own archive.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import os
import pkgutil
import resource
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # fuzz this checkout, whatever the venv points at

NATIVE = os.environ.get("TFRECNP_FUZZ_NATIVE")
if NATIVE and (Path(NATIVE) / "libfuzzer.so").exists():
    # libFuzzer's symbols must be global before atheris picks its core and before the
    # instrumented extension modules are loaded (they call __sanitizer_cov_* when loaded).
    # (A core built otherwise, for gcov by `make fuzz-coverage`, comes without one.)
    ctypes.CDLL(str(Path(NATIVE) / "libfuzzer.so"), mode=os.RTLD_GLOBAL)

import atheris  # noqa: E402

# How much address space a target may take beyond what it holds once set up: a larger
# allocation fails with a plain MemoryError, which is a finding (MemoryBudgetError, the
# typed refusal, is not). Images may legitimately claim Pillow's limit of 179 M pixels.
EXTRA_ADDRESS_SPACE = 3 << 30
SKIPPED = (
    "tfrecnp.cli",
    "tfrecnp.__main__",
    "tfrecnp.ray",
    "tfrecnp.adapters.ray",
    "tfrecnp.adapters.torch",
)
# (the command line and the framework adapters are no target; they import their frameworks)
FD_SLACK = 32  # descriptors a target may open beyond those open at its 256th input
# libFuzzer's RSS is getrusage's peak, which Linux carries over from the process that
# started this one (pytest with TensorFlow loaded holds ~1.7 GB): the limit counts from it.
STARTED_AT_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
DEFAULT_FLAGS = ["-timeout=20", f"-rss_limit_mb={STARTED_AT_MB + 3072}"]


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Import tfrecnp modules inside this block so atheris traces their Python code. Every
    module of the package is imported here: the public names load their modules lazily,
    and a module first imported after the block would run uninstrumented."""
    with contextlib.redirect_stderr(io.StringIO()), atheris.instrument_imports(include=["tfrecnp"]):
        import tfrecnp._core

        if NATIVE:
            tfrecnp._core.__path__.insert(0, str(Path(NATIVE) / "core"))
        for module in pkgutil.walk_packages(tfrecnp.__path__, "tfrecnp."):
            if not module.name.startswith(SKIPPED):
                importlib.import_module(module.name)
        yield
    if NATIVE:
        from tfrecnp._core import framing

        assert str(Path(NATIVE)) in framing.__file__, framing.__file__


def typed_errors() -> tuple[type[BaseException], ...]:
    """What tfrecnp may raise about bad data: its own typed errors."""
    from tfrecnp.errors import TFRecordError

    return (TFRecordError,)


class Scratch:
    """A folder in memory (/dev/shm when there is one) for the files a target writes."""

    def __init__(self) -> None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.path = Path(tempfile.mkdtemp(prefix="tfrecnp-fuzz-", dir=base))

    def file(self, name: str, data: bytes) -> str:
        p = self.path / name
        p.write_bytes(data)
        return str(p)

    def fresh(self, name: str) -> Path:
        """An empty folder `name` inside the scratch folder."""
        p = self.path / name
        shutil.rmtree(p, ignore_errors=True)
        p.mkdir()
        return p

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _limit_memory() -> None:
    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))
    limit = size + EXTRA_ADDRESS_SPACE
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def main(test_one_input: Callable[[bytes], None]) -> None:
    """Run libFuzzer over test_one_input with this project's default limits (any flag
    given on the command line wins)."""
    warnings.simplefilter("ignore")  # CorruptRecordWarning and the like are answers too
    given = {a.split("=")[0] for a in sys.argv[1:] if a.startswith("-")}
    argv = [sys.argv[0], *(f for f in DEFAULT_FLAGS if f.split("=")[0] not in given)]
    argv += sys.argv[1:]
    _limit_memory()
    runs, fds = 0, -1

    def one(data: bytes) -> None:
        # A typed error keeps its traceback's frames (and their buffers) in a reference
        # cycle; collecting every few hundred inputs keeps RSS flat, so -rss_limit_mb
        # catches real leaks rather than garbage waiting for the collector.
        nonlocal runs, fds
        runs += 1
        if runs % 256 == 0:
            gc.collect()
            open_now = len(os.listdir("/proc/self/fd"))
            if fds < 0:
                fds = open_now
            elif open_now > fds + FD_SLACK:
                raise AssertionError(f"file descriptors leak: {fds} open, then {open_now}")
        test_one_input(data)

    atheris.Setup(argv, one)
    atheris.Fuzz()


def same(a, b) -> bool:
    """Columns equal in kind, shape, dtype and bytes (NaN equals NaN bit for bit)."""
    import numpy as np

    from tfrecnp.example.columns import BytesColumn, Ragged

    if isinstance(a, Ragged) or isinstance(b, Ragged):
        return (
            isinstance(a, Ragged)
            and isinstance(b, Ragged)
            and np.array_equal(a.row_splits - a.row_splits[0], b.row_splits - b.row_splits[0])
            and same(a.values, b.values)
        )
    if isinstance(a, BytesColumn) or isinstance(b, BytesColumn):
        return (
            isinstance(b, BytesColumn)
            and isinstance(a, BytesColumn)
            and (a.to_list() == b.to_list())
        )
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == object:
        return all(same(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def row_slice(column, a: int, b: int):
    """Rows a..b of any column kind."""
    return column.rows(a, b) if hasattr(column, "rows") else column[a:b]
