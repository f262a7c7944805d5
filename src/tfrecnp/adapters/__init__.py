"""Framework adapters (tf.data, PyTorch, grain / JAX): thin modules that turn batches into
a framework's objects. They sit below `data`: they work on anything with a `spec` and
`batches()` (duck-typed, never the Dataset class), so a Dataset's `to_tf` / `to_torch`
methods can hand themselves over, and no adapter knows where records come from."""
