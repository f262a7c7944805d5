"""`tfrecnp.ray`: TFRecord files as a Ray Data dataset and back.

    import tfrecnp.ray
    ds = tfrecnp.ray.read("s3://bucket/train-*.tfrecord")     # a ray.data.Dataset
    tfrecnp.ray.write(ds.map_batches(fn), "out/data.tfrecord", num_shards=8)

Needs Ray Data (pip install 'tfrecnp[ray]'); `import tfrecnp` never loads it. The
datasource and datasink live in `tfrecnp.adapters.ray`; this layer, above the Dataset,
hands the read tasks the Dataset's block reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["read", "write"]


def read(paths: Any, spec: Any = None, **options: Any) -> Any:
    """TFRecord files of tf.train.Example as a ray.data.Dataset, one row per record
    (options and columns: `tfrecnp.adapters.ray.read`, whose docstring says each)."""
    adapter = _adapter()
    from .data.record_dataset import read_blocks

    return adapter.read(paths, spec, read_part=read_blocks, **options)


def __getattr__(name: str) -> Any:
    if name == "write":
        return _adapter().write
    raise AttributeError(f"module 'tfrecnp.ray' has no attribute {name!r}")


def _adapter() -> Any:
    from ._util.optional import require

    require("ray.data", "ray")
    from .adapters import ray as adapter

    return adapter


if TYPE_CHECKING:
    from .adapters.ray import write
