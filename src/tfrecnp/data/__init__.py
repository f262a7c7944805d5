"""The Dataset: files and positioned reads, gathering batches, shuffling, padding, the
background pipeline, `tn.open`, `tn.read` and `tn.convert`."""
