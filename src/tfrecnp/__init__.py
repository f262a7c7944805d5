"""tfrecnp: TFRecord <-> NumPy, streaming, in bounded memory, TensorFlow optional.

A TFRecord file is a stream of framed records; tfrecnp reads them in batches (one buffer
plus offsets), checks every CRC in a compiled core with the GIL released, and writes them
back atomically. `import tfrecnp` needs only NumPy.

This module is the public face: what a user calls. Frame-level names (scans, sidecars,
batches of raw records) live in `tfrecnp.framing`. Each name is imported from its layer on
first use, so `import tfrecnp` (and `tfrecnp count`) stays fast and loads no more than it
needs.
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
    "mix": "data.mix",
    "open": "data.opener",
    "read": "data.read",
    "CorruptRecordError": "errors",
    "CorruptRecordWarning": "errors",
    "FileChangedError": "errors",
    "MemoryBudgetError": "errors",
    "RandomAccessError": "errors",
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
    "spec_from_tf": "interop.tf_spec",
    "spec_from_schema": "interop.tfx_schema",
    "spec_to_schema": "interop.tfx_schema",
    "spec_to_json": "example.spec",
    "Text": "example.text",
    "WriteResult": "example.write",
    "Writer": "example.write",
    "write": "example.write",
    "RecordReader": "format.reader",
    "count_records": "format.reader",
    "iter_records": "format.reader",
    "verify": "format.verify",
    "RecordWriter": "format.writer",
}

# names that left the top level -> their public module; for one release they still work
# here, with a DeprecationWarning that names the new home
_MOVED = {
    "FrameBatch": "framing",
    "RecordBatch": "framing",
    "RecordIndex": "framing",
    "expand_paths": "framing",
    "read_index": "framing",
    "scan_file": "framing",
    "write_index": "framing",
}

__all__ = [
    "Arrays",
    "Bytes",
    "BytesColumn",
    "CorruptRecordError",
    "CorruptRecordWarning",
    "Dataset",
    "Decoder",
    "FileChangedError",
    "FixedLen",
    "Image",
    "MemoryBudgetError",
    "Ragged",
    "RandomAccessError",
    "Raw",
    "RecordReader",
    "RecordWriter",
    "SchemaError",
    "Sequence",
    "TFRecordError",
    "Text",
    "VarLen",
    "WriteResult",
    "Writer",
    "__version__",
    "convert",
    "count_records",
    "decode",
    "infer_spec",
    "iter_records",
    "load",
    "mix",
    "open",
    "read",
    "spec_from_json",
    "spec_from_schema",
    "spec_from_tf",
    "spec_to_json",
    "spec_to_schema",
    "torch_collate",
    "verify",
    "write",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None and name == "framing":  # the public submodule, as tn.framing
        from ._util.optional import import_module

        return import_module(".framing", __name__)  # (the import binds it here)
    if home is None:
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f"module 'tfrecnp' has no attribute {name!r}")
        import warnings

        warnings.warn(
            f"tfrecnp.{name} is now tfrecnp.{moved}.{name}; "
            f"the top-level name will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        home = moved  # not cached: each use warns
        from ._util.optional import import_module

        return getattr(import_module(f".{home}", __name__), name)
    from ._util.optional import import_module  # (a Ctrl-C here stays KeyboardInterrupt)

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES, "framing"})


if TYPE_CHECKING:  # what editors and type checkers see
    from .adapters.torch import torch_collate
    from .arrays.load import Arrays, load
    from .data.convert import convert
    from .data.dataset import Dataset
    from .data.mix import mix
    from .data.opener import open
    from .data.read import read
    from .errors import (
        CorruptRecordError,
        CorruptRecordWarning,
        FileChangedError,
        MemoryBudgetError,
        RandomAccessError,
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
        spec_to_json,
    )
    from .example.text import Text
    from .example.write import Writer, WriteResult, write
    from .format.reader import RecordReader, count_records, iter_records
    from .format.verify import verify
    from .format.writer import RecordWriter
    from .interop.tf_spec import spec_from_tf
    from .interop.tfx_schema import spec_from_schema, spec_to_schema
