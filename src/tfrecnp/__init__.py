"""tfrecnp: TFRecord <-> NumPy, streaming, in bounded memory, TensorFlow optional.

A TFRecord file is a stream of framed records; tfrecnp reads them in batches (one buffer
plus offsets), checks every CRC in a compiled core with the GIL released, and writes them
back atomically. `import tfrecnp` needs only NumPy.
"""

from .errors import (
    CorruptRecordError,
    CorruptRecordWarning,
    MemoryBudgetError,
    SchemaError,
    TFRecordError,
)
from .records import (
    RecordBatch,
    RecordIndex,
    RecordReader,
    RecordWriter,
    count_records,
    expand_paths,
    iter_records,
    read_index,
    scan_file,
    write_index,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptRecordError",
    "CorruptRecordWarning",
    "MemoryBudgetError",
    "RecordBatch",
    "RecordIndex",
    "RecordReader",
    "RecordWriter",
    "SchemaError",
    "TFRecordError",
    "count_records",
    "expand_paths",
    "iter_records",
    "read_index",
    "scan_file",
    "write_index",
]
