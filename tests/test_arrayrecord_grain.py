"""grain on ArrayRecord: a Dataset of an .array_record file (or of a TFDS folder prepared as
ArrayRecord) is grain's random-access data source, in worker processes too; what it gives
equals what grain's own path gives: grain.ArrayRecordDataSource's records parsed by
tf.io.parse_example, and TFDS's builder.as_data_source, batch for batch under one sampler."""

from __future__ import annotations

import numpy as np
import protowire as pw
import pytest
from absl import flags

import tfrecnp as tn

grain = pytest.importorskip("grain.python")
arm = pytest.importorskip("array_record.python.array_record_module")
tf = pytest.importorskip("tensorflow")

N = 500


def example(i: int) -> bytes:
    x = np.random.default_rng(i).standard_normal(4).astype(np.float32)
    return pw.simple_example(
        {
            "label": (pw.INT64, [i]),
            "x": (pw.FLOAT, x.tolist()),
            "tokens": (pw.INT64, list(range(i % 4))),
            "name": (pw.BYTES, [f"rec-{i}".encode()]),
        }
    )


SPEC = {
    "label": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((4,), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.FixedLen((), "bytes"),
}


def parse(records: list[bytes]) -> dict:
    """array-record's side: serialized Examples through tf.io.parse_example."""
    parsed = tf.io.parse_example(
        tf.constant(records),
        {
            "label": tf.io.FixedLenFeature([], tf.int64),
            "x": tf.io.FixedLenFeature([4], tf.float32),
            "tokens": tf.io.RaggedFeature(tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string),
        },
    )
    return {
        "label": parsed["label"].numpy(),
        "x": parsed["x"].numpy(),
        "tokens": [row.tolist() for row in parsed["tokens"].numpy()],
        "name": parsed["name"].numpy().tolist(),
    }


@pytest.fixture(scope="module", params=["group_size:1", "group_size:65536"])
def path(request, tmp_path_factory):
    """An ArrayRecord file written by array-record's own writer."""
    path = tmp_path_factory.mktemp("grain") / "data.array_record"
    w = arm.ArrayRecordWriter(str(path), request.param)
    for i in range(N):
        w.write(example(i))
    w.close()
    return str(path)


def sampler(n: int, seed: int = 0):
    return grain.IndexSampler(
        n, shard_options=grain.NoSharding(), shuffle=True, num_epochs=1, seed=seed
    )


def test_dataloader_with_workers_equals_grains_array_record_source(path):
    flags.FLAGS.mark_as_parsed()  # grain's workers read absl flags; outside absl.app, say so
    ours = grain.DataLoader(  # (grain's Batch stacks arrays: the ragged tokens left out)
        data_source=tn.open(path, SPEC).select(["label", "x", "name"]),
        sampler=sampler(N),
        operations=[grain.Batch(32)],
        worker_count=2,
    )
    theirs = grain.DataLoader(
        data_source=grain.ArrayRecordDataSource([path]),
        sampler=sampler(N),
        operations=[grain.Batch(32)],
        worker_count=2,  # as ours: records go to the workers in turn
    )
    seen = []
    for got, records in zip(ours, theirs, strict=True):
        want = parse(list(records))
        np.testing.assert_array_equal(got["label"], want["label"])
        np.testing.assert_array_equal(got["x"], want["x"])
        assert [bytes(n) for n in got["name"]] == want["name"]
        seen += got["label"].tolist()
    assert sorted(seen) == list(range(N))
    assert seen != sorted(seen)


def test_map_dataset_reads_by_position_and_in_batches(path):
    want = parse([example(i) for i in range(N)])
    data = grain.MapDataset.source(tn.open(path, SPEC)).shuffle(seed=3)
    order = [data[i]["label"] for i in range(N)]
    assert sorted(int(i) for i in order) == list(range(N))
    for k in (0, 17, N - 1):
        record = data[k]
        i = int(record["label"])
        np.testing.assert_array_equal(record["x"], want["x"][i])
        assert list(record["tokens"]) == want["tokens"][i]
    batches = grain.MapDataset.source(tn.open(path, SPEC).select(["label", "x"])).batch(64)
    first = batches[1]
    np.testing.assert_array_equal(first["label"], want["label"][64:128])
    np.testing.assert_array_equal(first["x"], want["x"][64:128])


def test_tfds_array_record_folder_through_grain_equals_as_data_source(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.testing.DummyMnist(data_dir=str(tmp_path))
    builder.download_and_prepare(file_format="array_record")
    source = builder.as_data_source("train")
    ds = tn.open(builder.data_dir, split="train")
    n = len(source)
    assert len(ds) == n
    flags.FLAGS.mark_as_parsed()
    ours = grain.DataLoader(
        data_source=ds, sampler=sampler(n, 5), operations=[grain.Batch(4)], worker_count=2
    )
    theirs = grain.DataLoader(
        data_source=source, sampler=sampler(n, 5), operations=[grain.Batch(4)], worker_count=2
    )
    count = 0
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(got["image"], want["image"])
        np.testing.assert_array_equal(got["label"], want["label"])
        count += len(got["label"])
    assert count == n
