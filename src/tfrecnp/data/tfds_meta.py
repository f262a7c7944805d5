"""Whether a folder's metadata is tensorflow-datasets', judged by what the files hold.

Why by content: ``dataset_info.json`` and ``features.json`` are common names. A folder of
shards some other tool (or a user) wrote may hold both, with its own meaning (``{"name":
"toy", "splits": {"train": 64}}``); it must read as the folder of TFRecord shards it is, not
fail deep in the TFDS reader. TFDS writes the DatasetInfo proto as JSON: ``splits`` is a
list of objects, each with a ``name`` and the ``shardLengths`` its files are found by; and
features.json is a feature connector (``pythonClassName`` and its config). Light: this
module imports only the standard library and `tfrecnp._util.fs` (the CLI asks it before
deciding which reader to load).
"""

from __future__ import annotations

import json
from typing import Any

from .._util import fs

__all__ = ["FEATURES_FILE", "INFO_FILE", "is_tfds_version", "not_tfds", "read_metadata"]

INFO_FILE = "dataset_info.json"
FEATURES_FILE = "features.json"


def read_metadata(folder: Any) -> tuple[Any, Any] | None:
    """(dataset_info.json, features.json) of a folder, parsed; None when either is missing
    or not JSON."""
    try:
        info = json.loads(fs.read_text(fs.join(folder, INFO_FILE)))
        features = json.loads(fs.read_text(fs.join(folder, FEATURES_FILE)))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return info, features


def not_tfds(info: Any, features: Any) -> str | None:
    """Why this metadata is not what tensorflow-datasets writes (a phrase that follows
    "its dataset_info.json" or "its features.json"), or None when it is."""
    if not isinstance(info, dict):
        return f"dataset_info.json is a JSON {type(info).__name__}, not TFDS's DatasetInfo"
    splits = info.get("splits", [])
    if not isinstance(splits, list):
        return (
            f'dataset_info.json has "splits" as a {type(splits).__name__} '
            f"({_short(splits)}), where TFDS writes a list of {{name, shardLengths}}"
        )
    for s in splits:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            return f'dataset_info.json has a split {_short(s)} with no "name"'
        if not isinstance(s.get("shardLengths", []), list):
            return f'dataset_info.json has split {s["name"]!r} with no list of "shardLengths"'
    if not isinstance(features, dict) or not (
        "pythonClassName" in features or "featuresDict" in features
    ):
        return f"features.json ({_short(features)}) is no TFDS feature connector"
    return None


def is_tfds_version(folder: Any) -> bool:
    """Whether folder holds TFDS's metadata (both files, by content)."""
    found = read_metadata(folder)
    return found is not None and not_tfds(*found) is None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
