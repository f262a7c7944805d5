#!/usr/bin/env python3
"""Fuzz target: the image decoder entry (tn.Image's finish on a bytes column), through
simplejpeg and through Pillow.

Input: byte 0 options (bits 0-1 channels None / 1 / 3 / 4, bit 2 Pillow only (as without
simplejpeg), bit 3 resize to byte 1's (h, w) of 1..8 each, bits 4-5 the resize method,
bit 6 float32, bit 7 two images: the rest is split at byte 1's share of it), byte 1, then
the image bytes.

Checks: a batch of [n, h, w, c] (or the documented object array of differing sizes, without
size=) whose shape agrees with the spec, or a typed error (ImageDecodeError naming the
record, SchemaError for channels that disagree); never a Pillow / NumPy / simplejpeg
exception, and never an allocation beyond Pillow's pixel limit.
"""

from __future__ import annotations

from _harness import Scratch, instrumented, main, typed_errors

with instrumented():
    import numpy as np
    import PIL.Image

    import tfrecnp as tn
    from tfrecnp.example import image as image_module
    from tfrecnp.example.columns import BytesColumn
    from tfrecnp.images import codecs as image_codecs

# Pixel caps scaled down from tfrecnp's (Pillow's 179 M) and Pillow's own: the same
# refusals are reached, but a header just under the cap costs 16 MiB and milliseconds, not
# 700 MiB and seconds, so the fuzzer keeps its pace.
image_codecs.MAX_IMAGE_PIXELS = 1 << 22
PIL.Image.MAX_IMAGE_PIXELS = 1 << 21
TYPED = typed_errors()
SCRATCH = Scratch()
CHANNELS = (None, 1, 3, 4)
SIMPLEJPEG = image_codecs._sj()


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    flags, b1, body = data[0], data[1], data[2:]
    size = (1 + b1 % 8, 1 + (b1 >> 3) % 8) if flags & 8 else None
    spec = tn.Image(
        CHANNELS[flags & 3],
        size,
        resize=image_module.RESIZE_METHODS[(flags >> 4 & 3) % 3],
        dtype="float32" if flags & 64 else "uint8",
    )
    if flags & 128:
        cut = len(body) * b1 // 256
        blobs = [body[:cut], body[cut:]]
    else:
        blobs = [body]
    image_codecs._simplejpeg = False if flags & 4 else SIMPLEJPEG
    try:
        out = spec.finish(BytesColumn.from_list(blobs), name="img")
    except TYPED as e:
        if isinstance(e, image_module.ImageDecodeError):
            assert e.rows and e.feature == "img", (e.rows, e.feature)
        return
    finally:
        image_codecs._simplejpeg = SIMPLEJPEG
    assert len(out) == len(blobs)
    if out.dtype == object:  # images of differing sizes, without size=
        assert size is None
        images = list(out)
    else:
        assert out.dtype == np.dtype(spec.dtype), out.dtype
        images = list(out)
    for img in images:
        assert img.ndim == 3 and img.shape[2] in (1, 2, 3, 4), img.shape
        if spec.channels is not None:
            assert img.shape[2] == spec.channels, (img.shape, spec.channels)
        if size is not None:
            assert img.shape[:2] == size, (img.shape, size)


if __name__ == "__main__":
    main(test_one_input)
