"""TFX / TF Metadata schemas (``schema.pbtxt``) as specs, and specs as schemas.

TFX, TFDV and tf.Transform describe Example data with a TF Metadata ``Schema`` in protobuf
text format. `spec_of_schema` reads one with the rules of tensorflow-transform's
``schema_as_feature_spec`` (tfx_bsl's tensor representations):

==========================================  =============================================
schema                                      spec (TensorFlow's feature)
==========================================  =============================================
feature with ``shape`` (always present)     FixedLen(shape) (FixedLenFeature)
feature without ``shape``                   VarLen (VarLenFeature; ragged the same here)
legacy (``generate_legacy_feature_spec``)   value_count min == max == k >= 1: FixedLen(()
                                            or (k,)), default -1 / "" / -1.0 when not
                                            always present; else VarLen
``sparse_feature`` (index, value, size)     its values: VarLen(dtype, key=value feature)
                                            under its name; each index feature:
                                            VarLen("int64") under its own name
``tensor_representation_group[""]``:
  dense_tensor (shape, default_value)       FixedLen(shape, default=[default] * size)
  varlen_sparse_tensor                      VarLen
  ragged_tensor (row_length, uniform)       VarLen(key=..., partitions=[RowLengths,
                                            UniformRowLength])
lifecycle DEPRECATED, DISABLED, PLANNED,    skipped (``deprecated: true`` too)
ALPHA, DEBUG_ONLY, VALIDATION_DERIVED
==========================================  =============================================

INT reads int64, FLOAT float32, BYTES bytes (as TensorFlow's tf.string; say tn.Text() in a
spec of your own for str). A sparse feature's (index, value) pairs come in the records'
order (TensorFlow sorts them by index unless the schema says is_sorted); ``dense[idx] =
values`` makes TensorFlow's dense vector. STRUCT features (SequenceExample schemas) are
refused by name.

The text format is parsed here (`parse_text`: a small reader of protobuf text into nested
dicts), not by protobuf: tensorflow-metadata would add protobuf (2.4 MB), absl and
googleapis-common-protos, 37 ms of imports, and pins protobuf ranges that have fought
TensorFlow's; a schema is a few KiB of a plain grammar. `schema_text` writes text that
TF Metadata's own parser (``text_format.Parse`` into ``schema_pb2.Schema``) reads back.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..example.spec import Feature, FixedLen, Raw, RowLengths, Sequence, UniformRowLength, VarLen

__all__ = [
    "is_schema",
    "parse_text",
    "schema_text",
    "spec_from_schema",
    "spec_of_schema",
    "spec_to_schema",
]

SCHEMA_SUFFIXES = (".pbtxt", ".textproto", ".prototxt")
SKIPPED_STAGES = ("DEPRECATED", "DISABLED", "PLANNED", "ALPHA", "DEBUG_ONLY", "VALIDATION_DERIVED")
DTYPES = {"INT": "int64", "FLOAT": "float32", "BYTES": "bytes"}
LEGACY_DEFAULTS = {"INT": -1, "FLOAT": -1.0, "BYTES": b""}
_FIRST_FIELDS = re.compile(
    r"^\s*(?:#[^\n]*\n\s*)*(feature|sparse_feature|string_domain|tensor_representation_group|"
    r"generate_legacy_feature_spec|default_environment|dataset_constraints|"
    r"represent_variable_length_as_ragged|weighted_feature|float_domain|int_domain)\s*[:{<]"
)


# --- protobuf text format -> nested dicts ---------------------------------------------------

_TOKEN = re.compile(
    r"""\s+|\#[^\n]*
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<name>\[[^\]]*\]|[A-Za-z_][\w.]*)
    |(?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?
        |[-+]?(?:inf|infinity|nan)\b)
    |(?P<punct>[{}<>:;,\[\]-])""",
    re.VERBOSE | re.IGNORECASE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a"}
_ESCAPES |= {"b": "\b", "f": "\f", "v": "\v", "?": "?"}


class _Text:
    """Tokens of protobuf text, with where each starts (line numbers for errors)."""

    def __init__(self, text: str, where: str):
        self.text, self.where, self.tokens, self.at = text, where, [], 0
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(pos, f"unexpected {text[pos]!r}")
            if m.lastgroup:
                self.tokens.append((m.lastgroup, m.group(m.lastgroup), pos))
            pos = m.end()

    def fail(self, pos: int, what: str) -> None:
        line = self.text.count("\n", 0, pos) + 1
        raise SchemaError(
            f"{self.where} line {line}: {what}; expected TF Metadata's Schema in protobuf text "
            "format (schema.pbtxt, as TFDV and TFX write it)"
        )

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            self.fail(len(self.text), "the text ends early")
        self.at += 1
        return token  # type: ignore[return-value]


def parse_text(text: str, where: str = "schema") -> dict[str, list]:
    """Protobuf text format as nested dicts: every field name -> a list of its values (str
    for strings and enum names, int / float for numbers, bool for true / false, dict for a
    message), as the text holds them; no schema is needed to read it."""
    tokens = _Text(text, where)
    out = _message(tokens, None)
    return out


def _message(t: _Text, close: str | None) -> dict[str, list]:
    fields: dict[str, list] = {}
    while True:
        token = t.peek()
        if token is None:
            if close is not None:
                t.fail(len(t.text), f"a message is not closed with {close!r}")
            return fields
        kind, value, pos = t.take()
        if kind == "punct" and value == close:
            return fields
        if kind == "punct" and value in ";,":
            continue
        if kind != "name":
            t.fail(pos, f"expected a field name, found {value!r}")
        nxt = t.peek()
        if nxt is not None and nxt[1] == ":":
            t.take()
            nxt = t.peek()
        if nxt is not None and nxt[1] in ("{", "<"):
            t.take()
            values = [_message(t, "}" if nxt[1] == "{" else ">")]
        elif nxt is not None and nxt[1] == "[":  # a list of scalars (or messages)
            t.take()
            values = []
            while t.peek() is not None and t.peek()[1] != "]":  # type: ignore[index]
                if t.peek()[1] == ",":  # type: ignore[index]
                    t.take()
                    continue
                values.append(_scalar(t))
            t.take()
        else:
            values = [_scalar(t)]
        fields.setdefault(value, []).extend(values)


def _scalar(t: _Text) -> Any:
    kind, value, pos = t.take()
    if kind == "punct" and value in ("{", "<"):
        return _message(t, "}" if value == "{" else ">")
    if kind == "punct" and value == "-":  # "- 5", "-inf"
        following = _scalar(t)
        return -following
    if kind == "string":
        parts = [_unquote(value)]
        while t.peek() is not None and t.peek()[0] == "string":  # type: ignore[index]
            parts.append(_unquote(t.take()[1]))  # adjacent strings join, as in C
        return b"".join(parts)
    if kind == "number":
        return _number(value)
    if kind == "name":
        low = value.lower()
        if low in ("true", "t"):
            return True
        if low in ("false", "f"):
            return False
        if low in ("inf", "infinity", "nan"):
            return float(low)
        return value  # an enum's name
    t.fail(pos, f"expected a value, found {value!r}")
    return None


def _number(text: str) -> int | float:
    body = text.rstrip("fF") if not text.lower().startswith(("0x", "-0x", "+0x")) else text
    low = body.lower()
    if low.lstrip("+-") in ("inf", "infinity", "nan"):
        return float(low)
    if re.fullmatch(r"[-+]?0[xX][0-9a-fA-F]+", body):
        return int(body, 16)
    if re.fullmatch(r"[-+]?0[0-7]+", body):
        return int(body, 8)
    if re.fullmatch(r"[-+]?\d+", body):
        return int(body)
    return float(body)


def _unquote(token: str) -> bytes:
    """A quoted string's bytes (protobuf strings are bytes; escapes as C's)."""
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in _ESCAPES:
            out += _ESCAPES[e].encode()
            i += 2
        elif e in "xX":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :]).group()  # type: ignore[union-attr]
            out.append(int(digits, 16))
            i += 2 + len(digits)
        elif e in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :]).group()  # type: ignore[union-attr]
            out.append(int(digits, 8) & 0xFF)
            i += 1 + len(digits)
        else:
            out += e.encode("utf-8")
            i += 2
    return bytes(out)


# --- a parsed schema -> a spec ---------------------------------------------------------------


def _one(msg: Mapping[str, list], field: str, default: Any = None) -> Any:
    values = msg.get(field)
    return values[-1] if values else default  # the last of a repeated singular field wins


def _name(msg: Mapping[str, list], field: str = "name") -> str:
    value = _one(msg, field, b"")
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _included(msg: Mapping[str, list]) -> bool:
    return not (_one(msg, "deprecated", False) or _one(msg, "lifecycle_stage") in SKIPPED_STAGES)


def _dtype(feature: Mapping[str, list], where: str) -> str:
    kind = _one(feature, "type", "TYPE_UNKNOWN")
    if kind == "STRUCT":
        raise SchemaError(
            f"{where}: feature {_name(feature)!r} is a STRUCT (a SequenceExample schema); "
            "tfrecnp reads Example schemas: give the spec as tn.Sequence(...) instead"
        )
    if kind not in DTYPES:
        raise SchemaError(
            f"{where}: feature {_name(feature)!r} has type {kind}; a feature's type must be "
            "INT, FLOAT or BYTES"
        )
    return DTYPES[kind]


def _dims(shape: Mapping[str, list] | None) -> tuple[int, ...]:
    return tuple(int(_one(d, "size", 0)) for d in (shape or {}).get("dim", []))


def spec_of_schema(schema: Mapping[str, list] | str, where: str = "schema") -> dict:
    """The spec a TF Metadata Schema (parsed by `parse_text`, or its text) describes, by
    tensorflow-transform's ``schema_as_feature_spec`` (module docstring)."""
    if isinstance(schema, str):
        schema = parse_text(schema, where)
    features = {_name(f): f for f in schema.get("feature", [])}
    spec: dict[str, Feature] = {}
    for f in features.values():  # STRUCT and unknown types are named first
        if _included(f):
            _dtype(f, where)
    groups = {
        _name(g, "key"): _one(g, "value", {}) for g in schema.get("tensor_representation_group", [])
    }
    given = {
        _name(r, "key"): _one(r, "value", {})
        for r in groups.get("", {}).get("tensor_representation", [])
    }
    used: set[str] = set()
    for rep in given.values():
        used.update(_rep_columns(rep))
    # the features' own representations (tfx_bsl infers them for all, then drops the
    # ones an explicit representation reads)
    inferred, consumed = {}, set()
    for sparse in schema.get("sparse_feature", []):
        if not _included(sparse):
            continue
        inferred.update(_sparse(sparse, features, where, consumed))
    legacy = bool(_one(schema, "generate_legacy_feature_spec", False))
    for name, f in features.items():
        if name in consumed or not _included(f):
            continue
        inferred[name] = _legacy(f, where) if legacy else _plain(f, where)
    for name, rep in given.items():
        spec[name] = _representation(name, rep, features, where)
    for name, feature in inferred.items():
        if name not in used and name not in spec:
            spec[name] = feature
    return spec


def _rep_columns(rep: Mapping[str, list]) -> list[str]:
    if "dense_tensor" in rep:
        return [_name(_one(rep, "dense_tensor"), "column_name")]
    if "varlen_sparse_tensor" in rep:
        return [_name(_one(rep, "varlen_sparse_tensor"), "column_name")]
    if "sparse_tensor" in rep:
        s = _one(rep, "sparse_tensor")
        return [_text(v) for v in s.get("index_column_names", [])] + [_name(s, "value_column_name")]
    if "ragged_tensor" in rep:
        r = _one(rep, "ragged_tensor")
        steps = [_text(s) for s in _one(r, "feature_path", {}).get("step", [])]
        rows = [_name(p, "row_length") for p in r.get("partition", []) if "row_length" in p]
        return steps[:1] + rows
    return []


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _plain(f: Mapping[str, list], where: str) -> Feature:
    dtype = _dtype(f, where)
    if "shape" in f:
        fraction = _one(_one(f, "presence", {}), "min_fraction", 0)
        if fraction != 1:
            raise SchemaError(
                f"{where}: feature {_name(f)!r} has a shape but presence.min_fraction "
                f"{fraction} (not 1); a fixed shape needs the feature in every record "
                "(tensorflow-transform refuses it too): use value_count, or a "
                "tensor_representation with a default_value"
            )
        return FixedLen(_dims(_one(f, "shape")), dtype)
    return VarLen(dtype)


def _legacy(f: Mapping[str, list], where: str) -> Feature:
    dtype = _dtype(f, where)
    count = _one(f, "value_count", {})
    lo, hi = int(_one(count, "min", 0)), int(_one(count, "max", 0))
    if lo < 0 or hi < 0:
        raise SchemaError(f"{where}: feature {_name(f)!r} has a negative value_count")
    if lo != hi or lo < 1:
        return VarLen(dtype)
    fraction = _one(_one(f, "presence", {}), "min_fraction", 0)
    default = None if fraction >= 1 else [LEGACY_DEFAULTS[_one(f, "type")]] * lo
    return FixedLen(() if lo == 1 else (lo,), dtype, default)


def _sparse(sparse: Mapping[str, list], features: dict, where: str, consumed: set) -> dict:
    name = _name(sparse)
    keys = [_name(i) for i in sparse.get("index_feature", [])]
    value = _name(_one(sparse, "value_feature", {}))
    for key in [*keys, value]:
        if key not in features or key in consumed:
            raise SchemaError(
                f"{where}: sparse_feature {name!r} reads feature {key!r}, which the schema "
                "does not hold (or another sparse feature reads already)"
            )
        consumed.add(key)
    out: dict[str, Feature] = {name: VarLen(_dtype(features[value], where), key=_key(value, name))}
    for key in keys:
        if _dtype(features[key], where) != "int64":
            raise SchemaError(f"{where}: sparse_feature {name!r}: index {key!r} is not INT")
        out[key] = VarLen("int64")
    return out


def _key(key: str, name: str) -> str | None:
    return None if key == name else key


def _representation(name: str, rep: Mapping[str, list], features: dict, where: str) -> Feature:
    def source(column: str) -> Mapping[str, list]:
        if column not in features:
            raise SchemaError(
                f"{where}: tensor_representation {name!r} reads feature {column!r}, which "
                "the schema does not hold"
            )
        return features[column]

    if "dense_tensor" in rep:
        d = _one(rep, "dense_tensor")
        column = _name(d, "column_name")
        dtype = _dtype(source(column), where)
        shape = _dims(_one(d, "shape"))
        default = None
        if "default_value" in d:
            ((kind, values),) = _one(d, "default_value").items()
            want = {"int_value": "int64", "uint_value": "int64", "float_value": "float32"}
            if want.get(kind, "bytes") != dtype:
                raise SchemaError(
                    f"{where}: tensor_representation {name!r}: default {kind} does not fit "
                    f"feature {column!r} of {dtype}"
                )
            default = [values[-1]] * math.prod(shape)
        if column != name:
            raise SchemaError(
                f"{where}: tensor_representation {name!r} is a dense tensor of feature "
                f"{column!r}; tfrecnp names a column by the feature it reads: name it {column!r}"
            )
        return FixedLen(shape, dtype, default)
    if "varlen_sparse_tensor" in rep:
        column = _name(_one(rep, "varlen_sparse_tensor"), "column_name")
        return VarLen(_dtype(source(column), where), key=_key(column, name))
    if "ragged_tensor" in rep:
        r = _one(rep, "ragged_tensor")
        steps = [_text(s) for s in _one(r, "feature_path", {}).get("step", [])]
        if len(steps) != 1:
            raise SchemaError(
                f"{where}: ragged tensor {name!r} has feature_path {steps}; one step (a "
                "feature of the Example) is read, as tensorflow-transform reads it"
            )
        parts = []
        for p in r.get("partition", []):
            if "uniform_row_length" in p:
                parts.append(UniformRowLength(int(_one(p, "uniform_row_length"))))
            else:
                length = _name(p, "row_length")
                source(length)
                parts.append(RowLengths(length))
        return VarLen(_dtype(source(steps[0]), where), partitions=parts, key=_key(steps[0], name))
    if "sparse_tensor" in rep:
        raise SchemaError(
            f"{where}: tensor_representation {name!r} is a sparse_tensor; list it as a "
            "sparse_feature (read as its values and index columns), or read those features "
            "as tn.VarLen"
        )
    raise SchemaError(f"{where}: tensor_representation {name!r} has no kind tfrecnp reads")


# --- files and detection ---------------------------------------------------------------------


def is_schema(spec: Any) -> bool:
    """Whether spec is a schema: a path to a .pbtxt / .textproto file, the text of one, or a
    ``schema_pb2.Schema`` message (read by its text; protobuf is never imported here)."""
    if _is_schema_message(spec) or (isinstance(spec, str) and _FIRST_FIELDS.match(spec)):
        return True
    return isinstance(spec, (str, os.PathLike)) and _is_path(spec)


def _is_path(spec: Any) -> bool:
    """A path to a schema file (by its suffix), not schema text."""
    if isinstance(spec, str) and ("\n" in spec or _FIRST_FIELDS.match(spec)):
        return False
    return os.fspath(spec).lower().endswith(SCHEMA_SUFFIXES)


def _is_schema_message(obj: Any) -> bool:
    kind = type(obj)
    return kind.__name__ == "Schema" and (kind.__module__ or "").startswith("tensorflow_metadata")


def spec_from_schema(spec: Any) -> dict:
    """The spec a TFX / TF Metadata schema describes: a ``schema.pbtxt`` path, its text, or
    a ``schema_pb2.Schema`` message; by tensorflow-transform's ``schema_as_feature_spec``
    (see the module docstring). tn.open / tn.read / ``--spec`` take the same as spec=."""
    if _is_schema_message(spec):
        return spec_of_schema(str(spec), "the Schema message")
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and _is_path(spec)):
        from .._util import fs

        path = os.fspath(spec)
        try:
            text = fs.read_text(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"no such schema file: {path}") from None
        return spec_of_schema(text, path)
    return spec_of_schema(spec, "schema text")


# --- a spec -> schema text -------------------------------------------------------------------

_KINDS = {"int64": "INT", "float32": "FLOAT", "bytes": "BYTES"}


def schema_text(spec: Any) -> str:
    """TF Metadata Schema text (``schema.pbtxt``) for a spec, which TF Metadata parses and
    `spec_of_schema` reads back as the same features (dtypes widened to the wire's:
    int64, float32, bytes; tn.Image, tn.Raw and tn.Text as the BYTES they are stored as).
    Raises SchemaError naming a feature no schema can say (a VarLen default, partitions
    other than row lengths and uniform ones, a default that is not one value repeated)."""
    from ..example.spec import as_spec

    spec = as_spec(spec)
    if isinstance(spec, Sequence):
        raise SchemaError(
            "a SequenceExample spec (tn.Sequence) has no TF Metadata schema here; TFX "
            "describes those with STRUCT features, which tfrecnp does not write"
        )
    lines: list[str] = []
    reps: list[str] = []
    for name, f in spec.items():
        base = f.decode_as() if not isinstance(f, (FixedLen, VarLen, Raw)) else None
        f = base or f
        if isinstance(f, Raw):
            f = FixedLen((), "bytes")
        kind = _KINDS[f.dtype if f.dtype == "bytes" else _wire(f.dtype)]
        if isinstance(f, FixedLen) and f.default is None:
            dims = "".join(f" dim {{ size: {d} }}" for d in f.shape)
            lines.append(
                f"feature {{ name: {_quote(name)} type: {kind} presence {{ min_fraction: 1.0 }} "
                f"shape {{{dims} }} }}"
            )
        elif isinstance(f, FixedLen):
            flat = f.default.reshape(-1)
            if flat.size and not all(v == flat[0] for v in flat):
                raise SchemaError(
                    f"feature {name!r}: a schema's default_value is one value for every "
                    f"element, not {f.default.tolist()!r}"
                )
            count = math.prod(f.shape)
            lines.append(
                f"feature {{ name: {_quote(name)} type: {kind} "
                f"value_count {{ min: {count} max: {count} }} }}"
            )
            dims = "".join(f" dim {{ size: {d} }}" for d in f.shape)
            value = _default(kind, flat[0] if flat.size else None)
            reps.append(
                f"tensor_representation {{ key: {_quote(name)} value {{ dense_tensor {{ "
                f"column_name: {_quote(name)} shape {{{dims} }}{value} }} }} }}"
            )
        else:
            lines.extend(_varlen(name, f, kind, spec, reps))
    if reps:
        lines.append('tensor_representation_group { key: "" value { ' + " ".join(reps) + " } }")
    return "\n".join(lines) + "\n"


def _wire(dtype: str) -> str:
    return "float32" if np.dtype(dtype).kind == "f" else "int64"


def _default(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind == "BYTES":
        return f" default_value {{ bytes_value: {_quote(bytes(value))} }}"
    if kind == "FLOAT":
        return f" default_value {{ float_value: {float(value)!r} }}"
    return f" default_value {{ int_value: {int(value)} }}"


def _varlen(name: str, f: VarLen, kind: str, spec: dict, reps: list[str]) -> list[str]:
    if f.default is not None:
        raise SchemaError(
            f"feature {name!r}: a VarLen default (padding) has no TF Metadata schema field"
        )
    key = f.key or name
    own = [] if key != name and key in spec else [f"feature {{ name: {_quote(key)} type: {kind} }}"]
    if not f.partitions and not f.inner_shape and key == name:
        return own
    parts = []
    for p in f.partitions:
        if not isinstance(p, RowLengths):
            raise SchemaError(
                f"feature {name!r}: partition {p.spell()} has no TF Metadata schema form; "
                "schemas say row lengths and uniform row lengths"
            )
        parts.append(f"partition {{ row_length: {_quote(p.key)} }}")
        if p.key not in spec:
            own.append(f"feature {{ name: {_quote(p.key)} type: INT }}")
    parts += [f"partition {{ uniform_row_length: {d} }}" for d in f.inner_shape]
    reps.append(
        f"tensor_representation {{ key: {_quote(name)} value {{ ragged_tensor {{ "
        f"feature_path {{ step: {_quote(key)} }} {' '.join(parts)} }} }} }}"
    )
    return own


def _quote(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    out = []
    for b in raw:
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def spec_to_schema(spec: Any, path: str | os.PathLike | None = None) -> str:
    """A spec as TF Metadata Schema text (``schema.pbtxt``: `schema_text`), which TF
    Metadata parses and tfrecnp reads back (``spec="schema.pbtxt"``) as the same features;
    with path, also written there (whole or not at all)."""
    text = schema_text(spec)
    if path is not None:
        from .._util.atomic import hidden_sibling

        path = os.fspath(path)
        temp = hidden_sibling(path)
        try:
            with open(temp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temp, path)
        finally:
            if os.path.exists(temp):
                os.remove(temp)
    return text
