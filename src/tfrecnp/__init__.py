"""tfrecnp: TFRecord <-> NumPy, streaming, in bounded memory, TensorFlow optional.

A TFRecord file is a stream of framed records; tfrecnp reads them in batches (one buffer
plus offsets), checks every CRC in a compiled core with the GIL released, and writes them
back atomically. `import tfrecnp` needs only NumPy.
"""

from .columns import BytesColumn, Ragged
from .dataset import Dataset, RandomAccessError, convert, open
from .decode import Decoder, decode, read
from .errors import (
    CorruptRecordError,
    CorruptRecordWarning,
    MemoryBudgetError,
    SchemaError,
    TFRecordError,
)
from .infer import infer_spec
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
from .sinks import Arrays, load
from .spec import (
    Bytes,
    FixedLen,
    Raw,
    Sequence,
    VarLen,
    spec_from_json,
    spec_from_tf,
    spec_to_json,
)
from .writer import Writer, WriteResult, write

__version__ = "0.1.0"

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
