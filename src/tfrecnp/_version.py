__version__ = "0.1.0"
"""The version of tfrecnp, as `tfrecnp --version` prints it (pyproject.toml holds the same)."""
