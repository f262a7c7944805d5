"""Images as bytes and pixels: JPEG / PNG decoding and encoding (codecs), PNG read without
a library (png), resizing (resize). Nothing here knows records or specs: `tn.Image`, the
spec form that decodes a feature with these, lives with the other spec forms in example/."""
