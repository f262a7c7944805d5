"""`tfrecnp.framing`: TFRecord files as frames of bytes, below tf.train.Example.

A TFRecord file is a run of frames: the payload's length (uint64, little-endian), a masked
CRC32C of those 8 bytes, the payload, a masked CRC32C of the payload (docs/FORMAT.md). These
names read and write frames, scan their headers and keep `.idx` sidecars, for tools that
treat records as bytes. The top level keeps what most readers need: `tfrecnp.RecordReader`,
`RecordWriter`, `count_records` and `iter_records` (the same objects as here).

    from tfrecnp import framing
    index = framing.scan_file("train.tfrecord")   # offsets and lengths, from headers only
    framing.write_index(index)                    # train.tfrecord.idx, as DALI reads it
    for batch in framing.RecordReader("train.tfrecord").batches(256):  # a RecordBatch
        ...

Each name is imported from format/ on first use, like the top level's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# public name -> the module (relative to this package) that defines it
_HOMES = {
    "RecordIndex": "format.index",
    "read_index": "format.index",
    "write_index": "format.index",
    "expand_paths": "format.paths",
    "RecordBatch": "format.payloads",
    "RecordReader": "format.reader",
    "count_records": "format.reader",
    "iter_records": "format.reader",
    "scan_file": "format.reader",
    "RecordWriter": "format.writer",
}

# old name -> the name that replaced it, kept one release with a DeprecationWarning
_RENAMED = {"FrameBatch": "RecordBatch"}  # records in their frames are a RecordBatch too

__all__ = [
    "RecordBatch",
    "RecordIndex",
    "RecordReader",
    "RecordWriter",
    "count_records",
    "expand_paths",
    "iter_records",
    "read_index",
    "scan_file",
    "write_index",
]


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        import warnings

        new = _RENAMED[name]
        warnings.warn(
            f"tfrecnp.framing.{name} is now tfrecnp.framing.{new} (one type for every batch "
            "of payloads); the old name will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(new)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tfrecnp.framing' has no attribute {name!r}")
    from ._util.optional import import_module

    value = getattr(import_module(f"tfrecnp.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


if TYPE_CHECKING:  # what editors and type checkers see
    from .format.index import RecordIndex, read_index, write_index
    from .format.paths import expand_paths
    from .format.payloads import RecordBatch
    from .format.reader import RecordReader, count_records, iter_records, scan_file
    from .format.writer import RecordWriter
