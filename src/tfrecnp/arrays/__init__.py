"""Array files (.npy, .npz, HDF5, Zarr, folders of .npy) as sources of columns and as sinks
for them, and `tn.load` of what `Dataset.save` wrote."""
