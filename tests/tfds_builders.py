"""Small tensorflow-datasets builders, written by TFDS's own writer: the independent source of
the TFDS folders tfrecnp reads (tests/test_tfds.py, tests/test_sources.py), and TFDS's own
reader (`tfds.as_numpy`) as the oracle of what those folders hold."""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds
from source_contract import record

N_TRAIN, N_TEST = 70, 9  # train: 3 shards of 23-24 records, past tf.data's interleave block


class Kinds(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Every kind of feature TFDS writes into TFRecords."""

    VERSION = tfds.core.Version("1.2.0")

    def _info(self):
        f = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            features=f.FeaturesDict(
                {
                    "image": f.Image(shape=(None, None, 3), encoding_format="png"),
                    "jpeg": f.Image(shape=(8, 8, 3), encoding_format="jpeg"),
                    "gray": f.Image(shape=(6, 5, 1)),
                    "deep": f.Image(shape=(5, 4, 3), dtype=np.uint16, encoding_format="png"),
                    "label": f.ClassLabel(names=["cat", "dog", "bird"]),
                    "text": f.Text(),
                    "scalar": f.Scalar(np.float32),
                    "flag": np.bool_,
                    "small": np.uint8,
                    "big": np.float64,
                    "vec": f.Tensor(shape=(3,), dtype=np.int32),
                    "raw": f.Tensor(shape=(2, 3), dtype=np.float32, encoding="bytes"),
                    "raw_rows": f.Tensor(shape=(None, 2), dtype=np.int16, encoding="bytes"),
                    "zipped": f.Tensor(shape=(4,), dtype=np.int16, encoding="zlib"),
                    "zipped_rows": f.Tensor(shape=(None, 3), dtype=np.float32, encoding="zlib"),
                    "dyn": f.Tensor(shape=(None, None), dtype=np.uint8, encoding="zlib"),
                    "varlen": f.Tensor(shape=(None,), dtype=np.int64),
                    "bbox": f.BBoxFeature(),
                    "objects": f.Sequence(
                        {
                            "bbox": f.BBoxFeature(),
                            "label": f.ClassLabel(names=["a", "b", "c", "d"]),
                            "name": f.Text(),
                        }
                    ),
                    "tokens": f.Sequence(f.Sequence(np.int64)),
                    "phrases": f.Sequence(f.Sequence(f.Text())),
                    "boxes": f.Sequence(f.Sequence(f.BBoxFeature())),
                    "words": f.Sequence(f.Text()),
                    "pair": f.Sequence(np.float32, length=2),
                    "nested": {"a": np.int64, "b": {"c": f.Text()}},
                    "audio": f.Audio(),
                    "video": f.Video(shape=(None, 4, 4, 3)),
                    "translation": f.Translation(languages=["en", "fr"]),
                    "tvl": f.TranslationVariableLanguages(languages=["de", "en"]),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        return {
            "train": self._generate_examples("train", N_TRAIN),
            "test": self._generate_examples("test", N_TEST),
        }

    def _generate_examples(self, split, n):
        rng = np.random.default_rng(len(split))
        for i in range(n):
            k = int(rng.integers(0, 4))
            h, w = (int(d) for d in rng.integers(2, 9, 2))
            yield (
                i,
                {
                    "image": rng.integers(0, 255, (h, w, 3), dtype=np.uint8),
                    "jpeg": rng.integers(0, 255, (8, 8, 3), dtype=np.uint8),
                    "gray": rng.integers(0, 255, (6, 5, 1), dtype=np.uint8),
                    "deep": rng.integers(0, 65535, (5, 4, 3), dtype=np.uint16),
                    "label": i % 3,
                    "text": f"{split} héllo {i}",
                    "scalar": i / 3,
                    "flag": bool(i % 2),
                    "small": i,
                    "big": i / 7,
                    "vec": np.arange(3, dtype=np.int32) * i,
                    "raw": rng.standard_normal((2, 3)).astype(np.float32),
                    "raw_rows": rng.integers(-9, 9, (k, 2), dtype=np.int16),
                    "zipped": np.arange(4, dtype=np.int16) - i,
                    "zipped_rows": rng.standard_normal((k, 3)).astype(np.float32),
                    "dyn": rng.integers(0, 255, (k + 1, 4 - k), dtype=np.uint8),
                    "varlen": np.arange(i % 4),
                    "bbox": np.array([0.1, 0.2, 0.5, 0.6 + i / 1000]),
                    "objects": {
                        "bbox": [np.sort(rng.uniform(0, 1, 4)) for _ in range(k)],
                        "label": [j % 4 for j in range(k)],
                        "name": [f"o{j}" for j in range(k)],
                    },
                    "tokens": [list(range(j)) for j in range(k)],
                    "phrases": [[f"p{j}{m}" for m in range(j % 3)] for j in range(k)],
                    "boxes": [[np.sort(rng.uniform(0, 1, 4)) for _ in range(j)] for j in range(k)],
                    "words": [f"w{j}" for j in range(k)],
                    "pair": [i, -i / 2],
                    "nested": {"a": i, "b": {"c": f"c{i}"}},
                    "audio": rng.integers(-100, 100, int(rng.integers(0, 10))),
                    "video": rng.integers(0, 255, (k, 4, 4, 3), dtype=np.uint8),
                    "translation": {"en": f"one {i}", "fr": f"un {i}"},
                    "tvl": {"de": f"eins {i}", "en": [f"one {i}", "uno"]},
                },
            )


class Contract(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """The source contract's records (tests/source_contract.record): id, x, tokens, name."""

    VERSION = tfds.core.Version("1.0.0")
    ORDERED = True
    RECORDS = 300

    def _info(self):
        f = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            features=f.FeaturesDict(
                {
                    "id": np.int64,
                    "x": f.Tensor(shape=(3,), dtype=np.float32),
                    "tokens": f.Tensor(shape=(None,), dtype=np.int64),
                    "name": f.Text(),
                }
            ),
            disable_shuffling=self.ORDERED,
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for i in range(self.RECORDS):
            r = record(i)
            yield i, {**r, "tokens": np.array(r["tokens"], np.int64), "name": r["name"].decode()}


class Shuffled(Contract, skip_registration=True):
    """The same records, shuffled by TFDS's writer and read back interleaved."""

    ORDERED = False


def build(cls, data_dir, shards: int | None = None):
    """The builder after TFDS prepared it under data_dir (as TFRecord shards)."""
    builder = cls(data_dir=str(data_dir))
    config = tfds.download.DownloadConfig(num_shards=shards) if shards else None
    builder.download_and_prepare(file_format="tfrecord", download_config=config)
    return builder


def flat(d: dict, prefix: str = "") -> dict:
    """A nested dict as TFDS flattens it: "objects/bbox"."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}/"))
        else:
            out[prefix + k] = v
    return out


def tfds_records(builder, split: str) -> list[dict]:
    """Every record of the split as tfds.as_numpy gives it (files in order), flattened."""
    ds = builder.as_dataset(split=split, shuffle_files=False)
    return [flat(r) for r in tfds.as_numpy(ds)]
