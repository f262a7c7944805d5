"""Ray Data: tfrecnp.ray.read and write on a local 2-CPU Ray (started once per session)."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecnp as tn
import tfrecnp.ray as tnray
from tfrecnp.adapters.ray import from_arrow

N = 2500


def _columns(n: int = N) -> dict:
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 5, n)
    return {
        "label": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal((n, 3)).astype(np.float32),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 50, int(lengths.sum())), lengths),
        "name": tn.BytesColumn.from_list([f"r{i}".encode() for i in range(n)]),
    }


def _rows_equal(ds, cols: dict) -> None:
    got = from_arrow(ds.take_batch(10**9, batch_format="pyarrow"))
    np.testing.assert_array_equal(got["label"], cols["label"])
    np.testing.assert_array_equal(got["x"], cols["x"])
    np.testing.assert_array_equal(got["tokens"].values, cols["tokens"].values)
    np.testing.assert_array_equal(got["tokens"].row_splits, cols["tokens"].row_splits)
    assert list(got["name"]) == list(cols["name"])


@pytest.fixture
def shards(tmp_path):
    cols = _columns()
    out = tn.write(tmp_path / "in.tfrecord", cols, records_per_shard=1000, progress=False)
    return out, cols


def test_read_gives_the_values_in_order(ray_local, shards):
    out, cols = shards
    ds = tnray.read(out.paths, out.spec)
    assert ds.count() == N
    schema = ds.schema()
    assert "tokens" in schema.names
    _rows_equal(ds, cols)


def test_large_files_split_into_read_tasks_with_exact_counts(ray_local, shards):
    from tfrecnp.adapters.ray import TFRecordDatasource
    from tfrecnp.data.record_dataset import read_blocks

    out, cols = shards
    source = TFRecordDatasource(
        out.paths,
        out.spec,
        compression=None,
        verify_crc=True,
        on_error="raise",
        read_part=read_blocks,
        task_bytes=8000,
    )
    tasks = source.get_read_tasks(4)
    assert len(tasks) > len(out.paths)
    assert sum(t.metadata.num_rows for t in tasks) == N
    _rows_equal(tnray.read(out.paths, out.spec, task_bytes=8000), cols)


def test_round_trip_through_ray_write(ray_local, shards, tmp_path):
    out, cols = shards
    ds = tnray.read(out.paths, out.spec)
    (tmp_path / "back").mkdir()
    wrote = tnray.write(ds, tmp_path / "back" / "data.tfrecord", num_shards=3)
    names = sorted(p.name for p in (tmp_path / "back").iterdir())
    assert names == [f"data-0000{k}-of-00003.tfrecord" for k in range(3)]
    assert wrote.records == N
    back = tn.read(wrote.paths, out.spec)
    np.testing.assert_array_equal(back["label"], cols["label"])
    np.testing.assert_array_equal(back["x"], cols["x"])
    np.testing.assert_array_equal(back["tokens"].values, cols["tokens"].values)
    _rows_equal(tnray.read(wrote.paths), cols)


def test_failed_write_job_removes_what_it_wrote(ray_local, shards, tmp_path):
    out, _ = shards
    (tmp_path / "fail").mkdir()

    def boom(batch):
        if batch["label"][0] >= 1000:
            raise RuntimeError("the job fails")
        return batch

    ds = tnray.read(out.paths, out.spec).map_batches(boom, batch_size=None)
    with pytest.raises(Exception, match="the job fails"):
        tnray.write(ds, tmp_path / "fail" / "data.tfrecord")
    assert list((tmp_path / "fail").iterdir()) == []


def test_damaged_shard_honours_on_error(ray_local, shards):
    out, _ = shards
    path = out.paths[1]
    with open(path, "r+b") as f:
        f.seek(f.seek(0, 2) // 2)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0xFF]))
    with pytest.raises(Exception, match="CRC mismatch"):
        tnray.read(out.paths, out.spec).count()
    rows = tnray.read(out.paths, out.spec, on_error="skip").take_all()
    assert N - 5 < len(rows) < N


def test_read_from_s3_same_as_local(ray_local, shards, s3):
    out, cols = shards
    for p in out.paths:
        s3.fs.put_file(p, s3.url("ray/" + p.rsplit("/", 1)[-1]))
    _rows_equal(tnray.read(s3.url("ray/"), out.spec, storage_options=s3.options), cols)


def test_dataset_to_ray(ray_local, shards):
    out, cols = shards
    ds = tn.open(out.paths, out.spec)
    _rows_equal(ds.to_ray(), cols)
    assert ds.select(["label"]).to_ray().columns() == ["label"]
    with pytest.raises(ValueError, match="whole files"):
        ds.take(10).to_ray()
    with pytest.raises(TypeError, match="from_numpy"):
        tn.open(np.arange(3)).to_ray()


def _boxes_and_matrices(n: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 4, n)
    boxes = rng.standard_normal((int(lengths.sum()), 4)).astype(np.float32)
    cols = {
        "m": rng.standard_normal((n, 2, 2)).astype(np.float32),
        "box": tn.Ragged.from_lengths(boxes, lengths),
    }
    spec = {"m": tn.FixedLen((2, 2), "float32"), "box": tn.VarLen("float32", inner_shape=(4,))}
    return cols, spec


def test_an_empty_shard_reads_as_no_rows(ray_local, tmp_path):
    cols, spec = _boxes_and_matrices(40)
    out = tn.write(tmp_path / "a.tfrecord", cols, progress=False)
    (tmp_path / "empty.tfrecord").write_bytes(b"")  # a task with no records
    ds = tnray.read([out.paths[0], tmp_path / "empty.tfrecord"], spec)
    got = ds.take_batch(1000, batch_format="numpy")
    np.testing.assert_array_equal(got["m"], cols["m"])
    assert ds.count() == 40


def test_varlen_inner_shape_rows_are_arrays_and_write_back(ray_local, tmp_path):
    cols, spec = _boxes_and_matrices(50)
    out = tn.write(tmp_path / "a.tfrecord", cols, records_per_shard=20, progress=False)
    ds = tnray.read(out.paths, spec)
    rows = ds.take_all()
    assert len(rows) == 50
    for i, row in enumerate(rows):  # one (n, 4) float32 array per row, as tn batches give
        assert row["box"].dtype == np.float32 and row["box"].shape == (len(cols["box"][i]), 4)
        np.testing.assert_array_equal(row["box"], cols["box"][i])
    (tmp_path / "back").mkdir()
    wrote = tnray.write(ds, tmp_path / "back" / "b.tfrecord")
    assert wrote.spec["box"] == spec["box"]
    back = tn.read(wrote.paths, spec)
    np.testing.assert_array_equal(back["box"].values, cols["box"].values)
    np.testing.assert_array_equal(back["box"].row_splits, cols["box"].row_splits)
    np.testing.assert_array_equal(back["m"], cols["m"])


def test_inference_skips_a_damaged_sampled_record(ray_local, shards):
    out, cols = shards
    path = out.paths[1]
    index = tn.framing.scan_file(path)
    with open(path, "r+b") as f:  # record 3 of the second shard: in inference's sample
        f.seek(int(index.offsets[3]) + 12 + int(index.lengths[3]) // 2)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0xFF]))
    with pytest.raises(tn.CorruptRecordError, match="record 3"):
        tnray.read(out.paths)
    ds = tnray.read(out.paths, on_error="skip")
    assert sorted(ds.schema().names) == sorted(out.spec)
    labels = np.sort(ds.take_batch(10**9, batch_format="numpy")["label"])
    np.testing.assert_array_equal(labels, np.delete(cols["label"], 1003))


def test_split_tasks_skip_the_same_damage_as_a_dataset_pass(ray_local, shards):
    # a read task reads through the Dataset's block reader: the records kept, and the
    # record a damage report names, are a local pass's, in a share of a split file too
    out, _ = shards
    path = out.paths[1]
    index = tn.framing.scan_file(path)
    with open(path, "r+b") as f:  # a payload byte of record 700 of the second shard
        f.seek(int(index.offsets[700]) + 12 + int(index.lengths[700]) // 2)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0xFF]))
    with pytest.raises(Exception, match="record 700"):
        tnray.read(out.paths, out.spec, task_bytes=8000).take_all()
    ds = tnray.read(out.paths, out.spec, on_error="skip", task_bytes=8000)
    local = tn.open(out.paths, out.spec, on_error="skip").to_numpy()
    got = ds.take_batch(10**9, batch_format="numpy")
    np.testing.assert_array_equal(got["label"], local["label"])
    assert 1700 not in got["label"].tolist()


def test_a_bad_image_is_skipped_by_a_read_task_as_by_a_local_pass(ray_local, tmp_path):
    """Read tasks read through the Dataset's block reader: under on_error="skip" a record
    whose image does not decode is dropped, as a local pass drops it (it failed the task)."""
    import io

    from PIL import Image

    def png(i: int) -> bytes:
        out = io.BytesIO()
        Image.fromarray(np.full((4, 4, 3), i, np.uint8)).save(out, format="PNG")
        return out.getvalue()

    blobs = [png(i) for i in range(30)]
    blobs[7] = blobs[7][:20]
    path = str(tmp_path / "images.tfrecord")
    tn.write(path, {"image": tn.BytesColumn.from_list(blobs), "label": np.arange(30)})
    spec = {"image": tn.Image(3, (4, 4)), "label": tn.FixedLen((), "int64")}
    local = tn.open(path, spec=spec, on_error="skip").to_numpy()
    rows = tnray.read(path, spec, on_error="skip").take_batch(100, batch_format="numpy")
    assert rows["label"].tolist() == local["label"].tolist() == [i for i in range(30) if i != 7]
    np.testing.assert_array_equal(np.stack(list(rows["image"])), local["image"])
    with pytest.raises(Exception, match="image"):
        tnray.read(path, spec).take_batch(100)
