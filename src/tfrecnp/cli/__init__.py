"""The `tfrecnp` command: a thin shell over the public API (`main(argv) -> exit status`)."""

from .main import main

__all__ = ["main"]
