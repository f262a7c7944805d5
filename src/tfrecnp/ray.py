"""`tfrecnp.ray`: TFRecord files as a Ray Data dataset and back.

    import tfrecnp.ray
    ds = tfrecnp.ray.read("s3://bucket/train-*.tfrecord")     # a ray.data.Dataset
    tfrecnp.ray.write(ds.map_batches(fn), "out/data.tfrecord", num_shards=8)

Needs Ray Data (pip install 'tfrecnp[ray]'); `import tfrecnp` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["read", "write"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ._util.optional import require

        require("ray.data", "ray")
        from .adapters import ray as adapter

        return getattr(adapter, name)
    raise AttributeError(f"module 'tfrecnp.ray' has no attribute {name!r}")


if TYPE_CHECKING:
    from .adapters.ray import read, write
