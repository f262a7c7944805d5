"""tfrecnp: TFRecord <-> NumPy, streaming, in bounded memory, TensorFlow optional.

A TFRecord file is a stream of framed records; tfrecnp reads them in batches (one buffer
plus offsets), checks every CRC in a compiled core with the GIL released, and writes them
back atomically. `import tfrecnp` needs only NumPy.
"""

from ._version import __version__
from .arrays.load import Arrays, load
from .data.convert import convert
from .data.dataset import Dataset, RandomAccessError, open
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
from .format.reader import RecordBatch, RecordReader, count_records, iter_records, scan_file
from .format.writer import RecordWriter

__all__ = [
    "Arrays",
    "Bytes",
    "BytesColumn",
    "CorruptRecordError",
    "CorruptRecordWarning",
    "Dataset",
    "Decoder",
    "FixedLen",
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
    "write",
    "write_index",
]
