"""Paths as users give them (a file, a glob, a directory, or a list of those) -> the list of
files to read, in order."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

PathLike = str | os.PathLike
Paths = PathLike | Iterable[PathLike]
INDEX_SUFFIX = ".idx"


def expand_paths(paths: Paths) -> list[str]:
    """A path, a glob, a directory (its non-hidden files) or a list of those -> the list of
    files, in order; .idx sidecars in directories and glob matches are left out. Raises
    FileNotFoundError naming what matched nothing."""
    if isinstance(paths, (str, os.PathLike)):
        path = os.fspath(paths)
        if os.path.isdir(path):
            names = sorted(
                n
                for n in os.listdir(path)
                if not n.startswith(".") and not n.endswith(INDEX_SUFFIX)
            )
            files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
            if not files:
                raise FileNotFoundError(f"directory {path} holds no files")
            return files
        if glob.has_magic(path):
            files = sorted(
                f for f in glob.glob(path) if os.path.isfile(f) and not f.endswith(INDEX_SUFFIX)
            )
            if not files:
                raise FileNotFoundError(f"no files match {path}")
            return files
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such file: {path}")
        return [path]
    files = [f for p in paths for f in expand_paths(p)]
    if not files:
        raise FileNotFoundError("the list of paths is empty")
    return files
