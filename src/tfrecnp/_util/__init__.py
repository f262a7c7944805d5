"""What several layers share: atomic output, where bytes live (local paths and fsspec
URLs), text formatting, progress lines, threads, memory, reusable buffers, optional
imports. Imports nothing of tfrecnp: only the standard library, NumPy and, lazily, the
optional packages."""
