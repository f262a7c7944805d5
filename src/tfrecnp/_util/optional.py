"""Optional dependencies (h5py, zarr, Pillow, TensorFlow, PyTorch, ...) are imported where
used, never by `import tfrecnp`; a missing one says which extra installs it."""

from __future__ import annotations

import importlib
from types import ModuleType


def install_hint(module: str, extra: str) -> ImportError:
    return ImportError(
        f"this needs {module}: pip install 'tfrecnp[{extra}]' (or pip install {module})"
    )


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise ImportError with the pip line of the extra that has it."""
    try:
        return import_module(module)
    except ImportError:
        raise install_hint(module.split(".")[0], extra) from None


def import_module(name: str, package: str | None = None) -> ModuleType:
    """importlib.import_module, for imports made late (lazily, on first use): a Ctrl-C
    that lands while the module makes a class stays a KeyboardInterrupt."""
    try:
        return importlib.import_module(name, package)
    except RuntimeError as e:
        interrupt = wrapped_interrupt(e)
        if interrupt is not None:
            raise interrupt from None
        raise


def interop(name: str) -> ModuleType:
    """A module of tfrecnp.interop (the mappings to Arrow, HF, TF's and TFX's specs),
    imported by name when first used: the Example world below it reaches them for what
    users hand it in other tools' terms (TensorFlow's feature objects, Arrow tables) without
    a layer depending on the one above it."""
    return import_module(f"tfrecnp.interop.{name}")


def wrapped_interrupt(error: RuntimeError) -> KeyboardInterrupt | None:
    """The Ctrl-C inside `error`, when Python 3.11 wrapped one that landed while a class
    was being made (in __set_name__, say during a lazy `import zarr`), else None."""
    cause = error.__cause__
    return cause if isinstance(cause, KeyboardInterrupt) else None
