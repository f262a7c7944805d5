"""Framework adapters (tf.data, PyTorch, grain / JAX, Ray Data): thin modules that turn a
Dataset's batches into a framework's objects. They hang off the Dataset; nothing below this
layer imports them."""
