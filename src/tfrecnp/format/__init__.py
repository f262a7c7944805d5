"""TFRecord framing: paths, compression, reading records in batches, `.idx` sidecars,
writing frames. Knows nothing of tf.train.Example."""
