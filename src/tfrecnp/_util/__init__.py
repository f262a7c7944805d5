"""What several layers share: atomic output, text formatting, progress lines, threads,
memory. Imports nothing of tfrecnp but `errors`."""
