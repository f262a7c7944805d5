"""The tf.train.Example world: specs, columns (Ragged, BytesColumn), decoding, encoding and
writing, schema inference. Built on `format`; knows nothing of Datasets or array files."""
