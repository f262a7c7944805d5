"""The compiled core: buffers in, buffers out, GIL released. See each module's docstring."""
