"""tfrecnp: TFRecord <-> NumPy, streaming, in bounded memory, TensorFlow optional.

A TFRecord file is a stream of framed records; tfrecnp reads them in batches (one buffer
plus offsets), checks every CRC in a compiled core with the GIL released, and writes them
back atomically. `import tfrecnp` needs only NumPy.

This module is the one public face. Each name is imported from its layer on first use, so
`import tfrecnp` (and `tfrecnp count`) stays fast and loads no more than it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> the module (relative to this package) that defines it
_HOMES = {
    "torch_collate": "adapters.torch",
    "Arrays": "arrays.load",
    "load": "arrays.load",
    "convert": "data.convert",
    "Dataset": "data.dataset",
    "RandomAccessError": "data.files",
    "open": "data.opener",
    "read": "data.read",
    "CorruptRecordError": "errors",
    "CorruptRecordWarning": "errors",
    "MemoryBudgetError": "errors",
    "SchemaError": "errors",
    "TFRecordError": "errors",
    "BytesColumn": "example.columns",
    "Ragged": "example.columns",
    "Decoder": "example.decode",
    "decode": "example.decode",
    "Image": "example.image",
    "infer_spec": "example.infer",
    "Bytes": "example.spec",
    "FixedLen": "example.spec",
    "Raw": "example.spec",
    "Sequence": "example.spec",
    "VarLen": "example.spec",
    "spec_from_json": "example.spec",
    "spec_from_tf": "example.spec",
    "spec_to_json": "example.spec",
    "WriteResult": "example.write",
    "Writer": "example.write",
    "write": "example.write",
    "RecordIndex": "format.index",
    "read_index": "format.index",
    "write_index": "format.index",
    "expand_paths": "format.paths",
    "FrameBatch": "format.reader",
    "RecordBatch": "format.reader",
    "RecordReader": "format.reader",
    "count_records": "format.reader",
    "iter_records": "format.reader",
    "scan_file": "format.reader",
    "RecordWriter": "format.writer",
}

__all__ = [
    "Arrays",
    "Bytes",
    "BytesColumn",
    "CorruptRecordError",
    "CorruptRecordWarning",
    "Dataset",
    "Decoder",
    "FixedLen",
    "FrameBatch",
    "Image",
    "MemoryBudgetError",
    "Ragged",
    "RandomAccessError",
    "Raw",
    "RecordBatch",
    "RecordIndex",
    "RecordReader",
    "RecordWriter",
    "SchemaError",
    "Sequence",
    "TFRecordError",
    "VarLen",
    "WriteResult",
    "Writer",
    "__version__",
    "convert",
    "count_records",
    "decode",
    "expand_paths",
    "infer_spec",
    "iter_records",
    "load",
    "open",
    "read",
    "read_index",
    "scan_file",
    "spec_from_json",
    "spec_from_tf",
    "spec_to_json",
    "torch_collate",
    "write",
    "write_index",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tfrecnp' has no attribute {name!r}")
    from ._util.optional import import_module  # (a Ctrl-C here stays KeyboardInterrupt)

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


if TYPE_CHECKING:  # what editors and type checkers see
    from .adapters.torch import torch_collate
    from .arrays.load import Arrays, load
    from .data.convert import convert
    from .data.dataset import Dataset
    from .data.files import RandomAccessError
    from .data.opener import open
    from .data.read import read
    from .errors import (
        CorruptRecordError,
        CorruptRecordWarning,
        MemoryBudgetError,
        SchemaError,
        TFRecordError,
    )
    from .example.columns import BytesColumn, Ragged
    from .example.decode import Decoder, decode
    from .example.image import Image
    from .example.infer import infer_spec
    from .example.spec import (
        Bytes,
        FixedLen,
        Raw,
        Sequence,
        VarLen,
        spec_from_json,
        spec_from_tf,
        spec_to_json,
    )
    from .example.write import Writer, WriteResult, write
    from .format.index import RecordIndex, read_index, write_index
    from .format.paths import expand_paths
    from .format.reader import (
        FrameBatch,
        RecordBatch,
        RecordReader,
        count_records,
        iter_records,
        scan_file,
    )
    from .format.writer import RecordWriter
