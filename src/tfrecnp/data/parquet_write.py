"""Parquet written on every core: row groups encoded side by side, appended as one file.

pyarrow's ParquetWriter encodes one row group at a time, on one core (its write releases
the GIL, but a writer takes its groups in turn). `encode` gives each row group a
ParquetWriter of its own, writing into memory: a complete Parquet file of that one group.
Several are encoded at once (`save_parquet` runs them through `ordered_map`: one worker
gathers the next group's decoded blocks while the others encode), and `Stitched` appends
them to the output in order: the column chunks of each, one after another, then one footer
holding every group's metadata, its byte offsets moved to where its chunks now lie. The
footer is Parquet's Thrift FileMetaData (compact protocol), read and written whole here
(`_read_struct` / `_write_struct`, fields this module does not know kept as they are), so
only the offsets, the rows and the groups' ordinals change: the file is, byte for byte, the
one a single ParquetWriter writes from the same groups with the same options.

`column_options` chooses each column's encoding and codec from the first row group: of
the encodings every common reader decodes (Spark's vectorized reader among them, so not
BYTE_STREAM_SPLIT), the cheapest to write whose output is within SIZE_SLACK of the smallest
one's on those values: delta-packed integers (row ids, token ids of a large vocabulary),
a dictionary where values repeat (labels, tags), zstd only where it pays (not on random
floats or JPEG bytes). Encoding the tokens of the benchmark with a dictionary and zstd took
twice the CPU of delta-packing them, for 5% fewer bytes.
"""

from __future__ import annotations

from typing import Any

from ..interop.arrow import pyarrow

__all__ = [
    "AUTO",
    "Encoded",
    "Stitched",
    "choose_encoding",
    "column_options",
    "encode",
    "fixed_codec",
]

MAGIC = b"PAR1"
# A column's encodings are tried on (up to) this many leaf values of the first row group ...
SAMPLE_VALUES = 1 << 20
SAMPLE_BYTES = 8 << 20
# ... and the cheapest to write is taken whose output is at most this much over the
# smallest's (a file a tenth larger for a column that costs a third of the time or less).
SIZE_SLACK = 1.10
# (encoding, codec), cheapest to write first (ns per value: `bench_arrow.py --encodings`);
# "dictionary" is pyarrow's (plain values when its page would pass 1 MiB).
DELTA, PLAIN = "DELTA_BINARY_PACKED", "PLAIN"
LADDER = (
    (DELTA, "none"),
    (PLAIN, "none"),
    (DELTA, "zstd"),
    (PLAIN, "zstd"),
    ("dictionary", "none"),
    ("dictionary", "zstd"),
)
AUTO = "auto"  # save_parquet's compression: chosen per column, of none and zstd


def fixed_codec(compression: str | None) -> str | None:
    """The one codec for columns whose values cannot be tried: zstd under "auto", else
    the codec given."""
    return "zstd" if compression == AUTO else compression


# --- choosing encodings -----------------------------------------------------------------------


def leaf_paths(schema: Any) -> list[str]:
    """The Parquet leaf column paths ("x.list.element") of an Arrow schema, as pyarrow's
    writer names them in its per-column options."""
    pa = pyarrow()
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.ParquetWriter(sink, schema).close()  # (not schema.empty_table(): it imports pandas)
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return [meta.schema.column(i).path for i in range(meta.num_columns)]


def _leaf_values(column: Any) -> Any:
    """The first values of a column's leaf (list items, flattened): up to SAMPLE_VALUES,
    and SAMPLE_BYTES of them."""
    pa = pyarrow()
    out, have, size = [], 0, 0
    for chunk in column.chunks:
        while pa.types.is_nested(chunk.type):
            chunk = chunk.flatten()
        if len(chunk):
            per_value = max(chunk.nbytes / len(chunk), 1.0)
            most = min(SAMPLE_VALUES - have, max(1, int((SAMPLE_BYTES - size) / per_value)))
            out.append(chunk.slice(0, most))
            have, size = have + len(out[-1]), size + out[-1].nbytes
        if have >= SAMPLE_VALUES or size >= SAMPLE_BYTES:
            break
    return pa.chunked_array(out, out[0].type) if out else None


def _encoded_size(values: Any, encoding: str, codec: str) -> int:
    """The bytes these values take as one Parquet column chunk so encoded."""
    pa = pyarrow()
    import pyarrow.parquet as pq

    dictionary = encoding == "dictionary"
    sink = pa.BufferOutputStream()
    pq.write_table(
        pa.table({"v": values}),
        sink,
        row_group_size=max(len(values), 1),
        compression=codec,
        use_dictionary=dictionary,
        column_encoding=None if dictionary else {"v": encoding},
        write_statistics=False,
        memory_pool=pa.system_memory_pool(),  # (freed, not kept: see `encode`)
    )
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return meta.row_group(0).column(0).total_compressed_size


def choose_encoding(values: Any, codec: str = AUTO) -> tuple[str, str]:
    """(encoding, codec) for a column of these values: the cheapest in LADDER whose size
    is within SIZE_SLACK of the smallest (a codec given: of the encodings, with it)."""
    pa = pyarrow()
    integers = pa.types.is_integer(values.type)
    tried: dict[tuple[str, str], int] = {}
    for encoding, ladder_codec in LADDER:
        if encoding == (PLAIN if integers else DELTA):
            continue  # (delta packs integers only, and never worse than plain)
        pair = (encoding, ladder_codec if codec == AUTO else codec)
        if pair not in tried:
            tried[pair] = _encoded_size(values, *pair)
    smallest = min(tried.values())
    return next(pair for pair, size in tried.items() if size <= SIZE_SLACK * smallest)


def column_options(table: Any, compression: str | None = AUTO) -> dict[str, Any]:
    """ParquetWriter options for the columns of `table` (the first row group): each leaf
    column's encoding and codec (`choose_encoding`); compression other than "auto": that
    codec for every column. Statistics (min / max, which readers skip row groups by) for
    columns of one value per row, not for lists' items: on token lists they took a sixth
    of the encoding's time (`bench_arrow.py --encodings`)."""
    pa = pyarrow()
    compression = "none" if compression is None else compression  # (pyarrow's None)
    paths = leaf_paths(table.schema)
    if len(paths) != table.num_columns:  # (a column of several leaves: pyarrow's default)
        return {"use_dictionary": True, "compression": fixed_codec(compression)}
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    dictionary, encodings, codecs, statistics = [], {}, {}, []
    for path, column in zip(paths, table.columns, strict=True):
        if not _is_list(column.type):
            statistics.append(path)
        values = _leaf_values(column)
        if values is None:  # no values to try: pyarrow's defaults
            encoding, codec = "dictionary", fixed_codec(compression)
        else:
            encoding, codec = choose_encoding(values, compression)
        if encoding == "dictionary":
            dictionary.append(path)
        else:
            encodings[path] = encoding
        codecs[path] = codec
    return {
        "use_dictionary": dictionary,
        "column_encoding": encodings,
        "compression": codecs,
        "write_statistics": statistics,
    }


def _is_list(type_: Any) -> bool:
    pa = pyarrow()
    return (
        pa.types.is_list(type_)
        or pa.types.is_large_list(type_)
        or pa.types.is_fixed_size_list(type_)
    )


# --- encoding a row group ---------------------------------------------------------------------


class _Pieces:
    """A binary sink keeping what is written as the pieces written (pyarrow hands each
    page as a bytes object): memory for the bytes written and no more, where a growing
    buffer holds up to twice that, and three times while it grows."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.closed = False

    def write(self, data: Any) -> int:
        piece = bytes(data)  # (a bytes object already: no copy)
        self.pieces.append(piece)
        self.size += len(piece)
        return len(piece)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Encoded:
    """One row group encoded as a Parquet file in memory: its column chunks (`pieces`, the
    bytes between the leading magic and the footer) and its footer, read."""

    def __init__(self, pieces: list[bytes], rows: int, nbytes: int):
        tail = bytearray()
        k = len(pieces)
        while len(tail) < 8 and k:  # the footer's size and the magic
            k -= 1
            tail[:0] = pieces[k]
        size = int.from_bytes(tail[-8:-4], "little") if len(tail) >= 8 else -1
        while len(tail) < size + 8 and k:
            k -= 1
            tail[:0] = pieces[k]
        total = sum(map(len, pieces))
        head = pieces[0][:4] if pieces else b""
        if head != MAGIC or bytes(tail[-4:]) != MAGIC or size < 0 or size + 12 > total:
            raise ValueError("pyarrow wrote a Parquet file this module cannot read")
        self.meta, _ = _read_struct(memoryview(tail)[len(tail) - 8 - size : len(tail) - 8], 0)
        # the pieces of bytes 4 .. total - 8 - size
        self.chunks: list[memoryview] = []
        at, end = 0, total - 8 - size
        for piece in pieces:
            a, b = max(4, at), min(end, at + len(piece))
            if a < b:
                self.chunks.append(memoryview(piece)[a - at : b - at])
            at += len(piece)
        self.size = end - 4
        self.num_rows = rows
        self.nbytes = nbytes  # the decoded (Arrow) bytes the group was made of


def encode(table: Any, schema: Any, options: dict[str, Any]) -> Encoded:
    """A table as one Parquet row group, encoded in memory (pyarrow releases the GIL but
    for the writes of its pages). The encoder's working memory comes from the C library's
    allocator and is given back after each group (malloc_trim): kept, each encoding thread
    holds its peak while it gathers its next group (pyarrow's mimalloc keeps what a thread
    freed for that thread; the C library's arenas, what is freed at their top), and a
    conversion's peak RSS reached 297-304 MiB (benchmarks/CONSTANTS.md)."""
    import pyarrow.parquet as pq

    sink = _Pieces()
    pool = pyarrow().system_memory_pool()
    writer = pq.ParquetWriter(sink, schema, memory_pool=pool, **options)
    try:
        writer.write_table(table, row_group_size=max(table.num_rows, 1))
    finally:
        writer.close()
        pool.release_unused()
    return Encoded(sink.pieces, table.num_rows, table.nbytes)


class Stitched:
    """One Parquet file made of encoded row groups, appended in order to a binary file
    object (`add`), its footer written by `close`."""

    def __init__(self, sink: Any):
        self.sink = sink
        self.at = len(MAGIC)
        self.first: list | None = None  # the first group's FileMetaData fields
        self.groups: list[list] = []
        self.rows = 0
        sink.write(MAGIC)

    def add(self, group: Encoded) -> None:
        if self.first is None:
            self.first = group.meta
        shift = self.at - len(MAGIC)  # its chunks began after the magic of its own file
        for row_group in _get(group.meta, _ROW_GROUPS)[1]:
            _move(row_group, shift, len(self.groups))
            self.groups.append(row_group)
        for piece in group.chunks:
            self.sink.write(piece)
        self.at += group.size
        self.rows += group.num_rows

    def close(self) -> None:
        """Write the footer (the sink stays open: its owner closes it)."""
        if self.first is None:
            raise ValueError("a Parquet file needs a row group or a schema's empty file")
        meta = [list(f) for f in self.first]
        _set(meta, _NUM_ROWS, _I64, self.rows)
        _set(meta, _ROW_GROUPS, _LIST, (_STRUCT, self.groups))
        footer = _write_struct(meta)
        self.sink.write(footer)
        self.sink.write(len(footer).to_bytes(4, "little") + MAGIC)


# --- the footer: Thrift's compact protocol ----------------------------------------------------
# A struct is a list of [field id, type, value]; a list / set value (element type, items);
# a map (key type, value type, [(key, value)]); a bool field's value is in its type.

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY = range(9)
_LIST, _SET, _MAP, _STRUCT = 9, 10, 11, 12

# FileMetaData 3: num_rows, 4: row_groups; RowGroup 1: columns, 5: file_offset,
# 7: ordinal; ColumnChunk 2: file_offset, 3: meta_data, 4: offset_index_offset,
# 6: column_index_offset; ColumnMetaData 9: data_page_offset, 10: index_page_offset,
# 11: dictionary_page_offset, 14: bloom_filter_offset.
_NUM_ROWS, _ROW_GROUPS = 3, 4
_GROUP_COLUMNS, _GROUP_OFFSETS, _GROUP_ORDINAL = 1, (5,), 7
_CHUNK_META, _CHUNK_OFFSETS = 3, (2, 4, 6)
_META_OFFSETS = (9, 10, 11, 14)


def _get(fields: list, fid: int) -> Any:
    for f in fields:
        if f[0] == fid:
            return f[2]
    raise ValueError(f"Parquet footer field {fid} missing")


def _set(fields: list, fid: int, kind: int, value: Any) -> None:
    for f in fields:
        if f[0] == fid:
            f[1], f[2] = kind, value
            return
    fields.append([fid, kind, value])
    fields.sort(key=lambda f: f[0])


def _shift(fields: list, fids: tuple[int, ...], shift: int) -> None:
    for f in fields:
        if f[0] in fids and f[2]:  # (an offset of 0: not written, left so)
            f[2] += shift


def _move(row_group: list, shift: int, ordinal: int) -> None:
    """A row group's metadata with its byte offsets moved by `shift`, numbered `ordinal`."""
    _shift(row_group, _GROUP_OFFSETS, shift)
    for chunk in _get(row_group, _GROUP_COLUMNS)[1]:
        _shift(chunk, _CHUNK_OFFSETS, shift)
        for f in chunk:
            if f[0] == _CHUNK_META:
                _shift(f[2], _META_OFFSETS, shift)
    for f in row_group:  # (pyarrow writes one only when it encrypts)
        if f[0] == _GROUP_ORDINAL:
            f[2] = ordinal if ordinal < 1 << 15 else -1


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, pos
        shift += 7


def _put_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _read_value(buf: Any, pos: int, kind: int) -> tuple[Any, int]:
    if kind in (_TRUE, _FALSE, _BYTE):  # (a bool in a list or map: one byte)
        return buf[pos], pos + 1
    if kind in (_I16, _I32, _I64):
        n, pos = _varint(buf, pos)
        return (n >> 1) ^ -(n & 1), pos
    if kind == _DOUBLE:
        return bytes(buf[pos : pos + 8]), pos + 8
    if kind == _BINARY:
        n, pos = _varint(buf, pos)
        return bytes(buf[pos : pos + n]), pos + n
    if kind in (_LIST, _SET):
        head = buf[pos]
        pos += 1
        n, inner = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(buf, pos)
        items = []
        for _ in range(n):
            item, pos = _read_value(buf, pos, inner)
            items.append(item)
        return (inner, items), pos
    if kind == _MAP:
        n, pos = _varint(buf, pos)
        if not n:
            return (0, 0, []), pos
        key_kind, value_kind = buf[pos] >> 4, buf[pos] & 0x0F
        pos += 1
        pairs = []
        for _ in range(n):
            key, pos = _read_value(buf, pos, key_kind)
            value, pos = _read_value(buf, pos, value_kind)
            pairs.append((key, value))
        return (key_kind, value_kind, pairs), pos
    if kind == _STRUCT:
        return _read_struct(buf, pos)
    raise ValueError(f"Parquet footer: Thrift type {kind} unknown")


def _read_struct(buf: Any, pos: int) -> tuple[list, int]:
    fields: list = []
    last = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == _STOP:
            return fields, pos
        kind, delta = head & 0x0F, head >> 4
        if delta:
            fid = last + delta
        else:
            n, pos = _varint(buf, pos)
            fid = (n >> 1) ^ -(n & 1)
        value = None
        if kind not in (_TRUE, _FALSE):  # a bool field's value is its type
            value, pos = _read_value(buf, pos, kind)
        fields.append([fid, kind, value])
        last = fid


def _write_value(out: bytearray, kind: int, value: Any) -> None:
    if kind in (_TRUE, _FALSE, _BYTE):
        out.append(value & 0xFF)
    elif kind in (_I16, _I32, _I64):
        _put_varint(out, (value << 1) ^ (value >> 63))
    elif kind == _DOUBLE:
        out += value
    elif kind == _BINARY:
        _put_varint(out, len(value))
        out += value
    elif kind in (_LIST, _SET):
        inner, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | inner)
        else:
            out.append(0xF0 | inner)
            _put_varint(out, len(items))
        for item in items:
            _write_value(out, inner, item)
    elif kind == _MAP:
        key_kind, value_kind, pairs = value
        _put_varint(out, len(pairs))
        if pairs:
            out.append(key_kind << 4 | value_kind)
            for key, item in pairs:
                _write_value(out, key_kind, key)
                _write_value(out, value_kind, item)
    elif kind == _STRUCT:
        _write_fields(out, value)
    else:
        raise ValueError(f"Parquet footer: Thrift type {kind} unknown")


def _write_fields(out: bytearray, fields: list) -> None:
    last = 0
    for fid, kind, value in fields:
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | kind)
        else:
            out.append(kind)
            _put_varint(out, (fid << 1) ^ (fid >> 63))
        if kind not in (_TRUE, _FALSE):
            _write_value(out, kind, value)
        last = fid
    out.append(_STOP)


def _write_struct(fields: list) -> bytes:
    out = bytearray()
    _write_fields(out, fields)
    return bytes(out)
