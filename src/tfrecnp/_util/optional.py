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
        return importlib.import_module(module)
    except ImportError:
        raise install_hint(module.split(".")[0], extra) from None
    except RuntimeError as e:  # Python 3.11 wraps a Ctrl-C that lands while the module
        if isinstance(e.__cause__, KeyboardInterrupt):  # makes a class (in __set_name__)
            raise e.__cause__ from None
        raise
