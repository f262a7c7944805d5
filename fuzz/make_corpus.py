"""Writes the seed corpus of every fuzz target into tests/fuzz_corpus/<target>/ (run from
the repository root: `python fuzz/make_corpus.py`). Records and image bytes come from
TensorFlow and Pillow (independent writers), hostile files from tests/attacks/; each seed
starts with the option bytes its target reads (see each target's docstring). Regression
inputs (files named regress-*) are kept as they are, and so are the inputs named by their
SHA-1: those `-merge=1` kept from the hour-long runs, each adding coverage the others lack
(`fuzz/fuzz_x.py -merge=1 tests/fuzz_corpus/fuzz_x LONG_RUN_CORPUS`; merge re-runs the
target as a program, so put the venv's bin first on PATH).
"""

from __future__ import annotations

import gzip
import io
import struct
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "tests" / "fuzz_corpus"
ATTACKS = ROOT / "tests" / "attacks"
sys.path.insert(0, str(ROOT / "tests"))
from conftest import crc32c_ref, mask_ref  # noqa: E402


def put(target: str, name: str, data: bytes) -> None:
    folder = OUT / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def header(length: int) -> bytes:
    h = struct.pack("<Q", length)
    return h + struct.pack("<I", mask_ref(crc32c_ref(h)))


def unframe(data: bytes) -> bytes:
    """The payload of a file's first record (attack files hold one)."""
    n = struct.unpack("<Q", data[:8])[0]
    return data[12 : 12 + n]


def tf_examples(tf) -> dict[str, bytes]:
    f = tf.train

    def ints(v):
        return f.Feature(int64_list=f.Int64List(value=v))

    def floats(v):
        return f.Feature(float_list=f.FloatList(value=v))

    def blobs(v):
        return f.Feature(bytes_list=f.BytesList(value=v))

    def example(**features):
        return f.Example(features=f.Features(feature=features)).SerializeToString()

    raw = np.arange(4, dtype="<f4").tobytes()
    seq = f.SequenceExample(
        context=f.Features(feature={"a": ints([7])}),
        feature_lists=f.FeatureLists(
            feature_list={"b": f.FeatureList(feature=[floats([1.0, 2.0]), floats([3.0, -0.5])])}
        ),
    ).SerializeToString()
    return {
        "abc": example(a=ints([1, 2, 3]), b=floats([1.5, 2.5]), c=blobs([b"xy"])),
        "abc2": example(a=ints([-1]), b=floats([0.0, float("nan")]), c=blobs([b""])),
        "raw": example(d=blobs([raw])),
        "empty": example(),
        "seq": seq,
    }


def framing(tf, examples: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for compression in ("", "GZIP", "ZLIB"):
            path = f"{tmp}/f{compression}"
            with tf.io.TFRecordWriter(path, options=compression or None) as w:
                for payload in examples.values():
                    w.write(payload)
            put(
                "fuzz_framing",
                f"tf{compression.lower() or '_plain'}",
                b"\x00\x03" + Path(path).read_bytes(),
            )
    plain = (OUT / "fuzz_framing" / "tf_plain").read_bytes()[2:]
    put("fuzz_framing", "wrap_gzip", b"\x01\x00" + plain)
    put("fuzz_framing", "wrap_zlib", b"\x02\x01" + plain)
    put("fuzz_framing", "skip_crc", b"\x10\x07" + plain)
    put("fuzz_framing", "small_limit", b"\x20\x02" + plain)
    put("fuzz_framing", "truncated", b"\x00\x00" + plain[:-5])
    flipped = bytearray(plain)
    flipped[20] ^= 4
    put("fuzz_framing", "flipped", b"\x00\x01" + bytes(flipped))
    put("fuzz_framing", "empty", b"\x00\x00")
    for name in ("length_2_60", "length_2_64_minus_1", "varint_11_bytes", "packed_overrun"):
        put(
            "fuzz_framing",
            f"attack_{name}",
            b"\x00\x00" + (ATTACKS / f"{name}.tfrecord").read_bytes(),
        )
    # a small decompression bomb: a header claiming 2^40 bytes over 1 MiB of zeros
    bomb = gzip.compress(header(2**40) + bytes(1 << 20), compresslevel=9, mtime=0)
    put("fuzz_framing", "attack_small_gzip_bomb", b"\x00\x00" + bomb)


def records(*payloads: bytes) -> bytes:
    return b"".join(struct.pack("<H", len(p)) + p for p in payloads)


def decode(examples: dict[str, bytes]) -> None:
    abc = records(examples["abc"], examples["abc2"], examples["empty"])
    # (kind | name << 3, dtype index, shape byte): see fuzz_decode.feature
    put(
        "fuzz_decode", "varlen_fixed_bytes", bytes([2, 0x02, 0, 0, 0x08, 1, 0x09, 0x17, 2, 0]) + abc
    )
    put("fuzz_decode", "defaults", bytes([2, 0x01, 0, 0, 0x09, 1, 0x09, 0x11, 2, 0]) + abc)
    put("fuzz_decode", "varlen_inner", bytes([1, 0x03, 0, 0x05, 0x0A, 1, 0]) + abc)
    put("fuzz_decode", "raw_fixed", bytes([0, 0x1C, 1, 0x2A]) + records(examples["raw"]))
    put("fuzz_decode", "raw_ragged", bytes([0, 0x1D, 1, 0x05]) + records(examples["raw"]) * 2)
    put("fuzz_decode", "raw_any", bytes([0, 0x1E, 1, 0x8A]) + records(examples["raw"]))
    put(
        "fuzz_decode",
        "sequence",
        bytes([0x81, 0x00, 0, 0, 0x28, 1, 0x09]) + records(examples["seq"]),
    )
    put(
        "fuzz_decode",
        "sequence_var",
        bytes([0x81, 0x02, 0, 0, 0x2A, 1, 0]) + records(examples["seq"]),
    )
    for name in ("varint_11_bytes", "packed_overrun"):
        payload = unframe((ATTACKS / f"{name}.tfrecord").read_bytes())
        put("fuzz_decode", f"attack_{name}", bytes([1, 0x02, 0, 0, 0x0A, 1, 0]) + records(payload))


def roundtrip() -> None:
    values = bytes(range(256))
    # options, columns - 1, then (kind | dtype << 3, shape) per column; see fuzz_roundtrip
    put(
        "fuzz_roundtrip",
        "dense_raw_ragged_bytes",
        bytes([0x03, 3, 0x00, 0x41, 0x09, 0x40, 0x02, 0x40, 0x03, 0]) + values,
    )
    put(
        "fuzz_roundtrip",
        "floats_gzip",
        bytes([0x0D, 2, 0x28, 0x42, 0x30, 0x00, 0x2A, 0x40]) + values,
    )
    put("fuzz_roundtrip", "strings_shards_index", bytes([0x65, 1, 0x04, 0, 0x05, 0]) + values)
    put("fuzz_roundtrip", "uint64_zlib_verify", bytes([0x97, 1, 0x50, 0x40, 0x51, 0x40]) + values)
    put("fuzz_roundtrip", "empty", bytes([0x00, 0, 0x00, 0]))


def sidecar() -> None:
    sys.argv = sys.argv[:1]
    sys.path.insert(0, str(HERE))
    import fuzz_sidecar as target

    put("fuzz_sidecar", "idx", b"\x00" + Path(target.DATA + ".idx").read_bytes())
    put("fuzz_sidecar", "idx_stale", b"\x00" + b"0 40\n40 28\n")
    put(
        "fuzz_sidecar",
        "manifest_npy",
        b"\x01" + (Path(target.FOLDER) / "tfrecnp.json").read_bytes(),
    )
    with zipfile.ZipFile(target.NPZ) as z:
        put("fuzz_sidecar", "manifest_npz", b"\x02" + z.read("tfrecnp.json"))
    for i, name in enumerate(target.MEMBERS):
        put(
            "fuzz_sidecar", f"npy_{name}", bytes([3, i]) + (Path(target.FOLDER) / name).read_bytes()
        )
    put(
        "fuzz_sidecar",
        "attack_manifest_dotdot",
        b"\x01" + (ATTACKS / "manifest_dotdot" / "tfrecnp.json").read_bytes(),
    )
    put(
        "fuzz_sidecar",
        "attack_npy_2_60_elements",
        b"\x03\x04" + (ATTACKS / "npy_2_60_elements.npy").read_bytes(),
    )


def images(tf) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)

    def pil(name: str, im, fmt: str, flags: int, b1: int = 0, **kw) -> None:
        buf = io.BytesIO()
        im.save(buf, fmt, **kw)
        put("fuzz_image", name, bytes([flags, b1]) + buf.getvalue())

    rgb = Image.fromarray(pixels)
    put("fuzz_image", "tf_jpeg", bytes([2, 0]) + tf.io.encode_jpeg(pixels, quality=90).numpy())
    put("fuzz_image", "tf_png", bytes([0x0B, 0x1B]) + tf.io.encode_png(pixels).numpy())
    put(
        "fuzz_image",
        "tf_png_grey_float",
        bytes([0x41, 0]) + tf.io.encode_png(pixels[:, :, :1]).numpy(),
    )
    pil("jpeg_grey", rgb.convert("L"), "JPEG", 1)
    pil("jpeg_cmyk", rgb.convert("CMYK"), "JPEG", 0x06)
    pil("jpeg_progressive", rgb, "JPEG", 0x1A, 0x09, progressive=True)
    pil("png_rgba", rgb.convert("RGBA"), "PNG", 0)
    pil("png_palette_alpha", rgb.convert("P"), "PNG", 0x2B, 0x12, transparency=0)
    pil("png_la", rgb.convert("LA"), "PNG", 0)
    pil("png_16bit", Image.fromarray(pixels[:, :, 0].astype(np.uint16) * 257), "PNG", 0x01)
    pil("gif", rgb.convert("P"), "GIF", 0x03)
    pil("bmp", rgb, "BMP", 0x06)
    jpeg, png = tf.io.encode_jpeg(pixels).numpy(), tf.io.encode_png(pixels[:4]).numpy()
    share = -(-len(jpeg) * 256 // (len(jpeg) + len(png)))  # the cut lands near the seam
    put("fuzz_image", "two_images", bytes([0x80 | 0x02, share]) + jpeg + png)


def main() -> None:
    import tensorflow as tf

    examples = tf_examples(tf)
    framing(tf, examples)
    decode(examples)
    roundtrip()
    sidecar()
    images(tf)


if __name__ == "__main__":
    main()
