"""What the records hold, without a spec: every feature of every record with its kind and
value count, for schema inference (`infer_spec`) and `tfrecnp inspect`.

The compiled core walks the payloads (`_core.decode.survey`) into a table of one row per
(record, section, feature); this module names the features and keeps, of duplicate keys,
the last, as decoding does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .._core import decode as _core
from ..format.payloads import RecordBatch
from .decode_errors import corrupt, malformed_reason
from .decode_plan import NAME_ENCODING, as_batch

__all__ = ["Survey", "survey"]


@dataclass(frozen=True)
class Survey:
    """Every feature of every record of a batch, one entry per (record, section, name)
    (the last of duplicate keys, as decoding sees it).

    names[name[i]] is entry i's feature name; section 0 = Example features or
    SequenceExample context, 1 = feature lists; kind 0 none (Feature without a list),
    1 bytes_list, 2 float_list, 3 int64_list, 4 mixed (feature lists only); count =
    values (all steps), nbytes = bytes of bytes values, steps/step_min/step_max for
    feature lists (-1 elsewhere); first = the first bytes value's leading bytes (up to 16)
    or b"".
    """

    names: list[str]
    records: int
    record: np.ndarray
    section: np.ndarray
    name: np.ndarray
    kind: np.ndarray
    count: np.ndarray
    nbytes: np.ndarray
    steps: np.ndarray
    step_min: np.ndarray
    step_max: np.ndarray
    first: list[bytes]

    def __len__(self) -> int:
        return len(self.record)


def survey(batch: RecordBatch | Iterable[bytes], *, first_bytes: int = 16) -> Survey:
    """List each record's features (name, kind, value count, ...) without a spec, for
    schema inference and `tfrecnp inspect`. Malformed records raise CorruptRecordError."""
    batch = as_batch(batch).packed()
    data, offsets = batch.data, batch.offsets
    n = len(batch)
    cap = max(64, n * 8)
    parts = []
    r = 0
    while r < n:
        out = np.empty((cap, _core.SURVEY_FIELDS), np.int64)
        status, nxt, count, detail = _core.survey(data, offsets, r, n, out)
        parts.append(out[:count])
        if status == _core.MALFORMED:
            offset, code, where, a, b = detail
            path, record = batch.where(nxt)
            reason = malformed_reason(code, where, a, b)
            raise corrupt(f"malformed record: {reason}", path, record, offset)
        if status == _core.BAD_OFFSETS:
            raise ValueError("the batch's offsets do not fit its data")
        if status == _core.FULL and nxt == r and count == 0:
            cap *= 4  # one record holds more entries than fit
        r = nxt
    table = np.concatenate(parts) if parts else np.empty((0, _core.SURVEY_FIELDS), np.int64)
    keys = [data[s : s + k].tobytes() for s, k in table[:, 2:4].tolist()]
    ids: dict[bytes, int] = {}
    name = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int64, count=len(keys))
    # the last entry of each (record, section, name) wins
    key = (table[:, 0] * 2 + table[:, 1]) * max(len(ids), 1) + name
    _, last_rev = np.unique(key[::-1], return_index=True)
    keep = np.sort(len(key) - 1 - last_rev)
    table, name = table[keep], name[keep]
    first = [
        data[s : s + min(k, first_bytes)].tobytes() if s >= 0 else b""
        for s, k in table[:, 10:12].tolist()
    ]
    return Survey(
        names=[k.decode(*NAME_ENCODING) for k in ids],
        records=n,
        record=table[:, 0].copy(),
        section=table[:, 1].copy(),
        name=name,
        kind=table[:, 4].copy(),
        count=table[:, 5].copy(),
        nbytes=table[:, 6].copy(),
        steps=np.where(table[:, 1] == 1, table[:, 7], -1),
        step_min=table[:, 8].copy(),
        step_max=table[:, 9].copy(),
        first=first,
    )
