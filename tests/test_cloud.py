"""Object stores through fsspec: a real S3 (moto's server on 127.0.0.1) and memory://.

The same dataset read locally, from S3 and from memory gives the same values in the same
order; reads are a few large requests, random access is batched, and writes appear whole
or not at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from bucket_data import assert_same, columns

import tfrecnp as tn
from tfrecnp.format.index import index_path

N = 3000


def _columns(n: int = N, seed: int = 0) -> dict:
    return columns(n, seed)


@pytest.fixture
def local(tmp_path):
    """Three local shards (with .idx sidecars) and the columns written into them."""
    cols = _columns()
    out = tn.write(
        tmp_path / "data.tfrecord", cols, records_per_shard=1000, index=True, progress=False
    )
    return tmp_path, out.paths, cols


def _upload(fs, paths, url) -> list[str]:
    names = []
    for p in paths:
        name = p.rsplit("/", 1)[-1]
        fs.put_file(p, f"{url}{name}")
        fs.put_file(index_path(p), f"{url}{name}.idx")
        names.append(f"{url}{name}")
    return names


def test_read_from_s3_equals_local_in_a_few_requests(s3, local):
    folder, paths, cols = local
    _upload(s3.fs, paths, s3.url("data/"))
    s3.fs.pipe(s3.url("data/README.md"), b"# not records")
    s3.fs.pipe(s3.url("data/.hidden"), b"junk")
    before = s3.requests()
    with pytest.warns(UserWarning, match="README.md"):
        ds = tn.open(s3.url("data/"), storage_options=s3.options)
    assert [p.rsplit("/", 1)[-1] for p in ds.paths] == [p.rsplit("/", 1)[-1] for p in paths]
    assert_same(ds.to_numpy(), tn.open(str(folder / "*.tfrecord")).to_numpy())
    assert_same(ds.to_numpy(), cols)
    # a whole pass: a handful of requests per file (list, head, size, read-ahead), never
    # one per record
    assert s3.requests() - before < 60 < N


def test_record_reader_and_glob_over_s3(s3, local, tf_read):
    _, paths, _ = local
    _upload(s3.fs, paths, s3.url("d/"))
    reader = tn.RecordReader(s3.url("d/*.tfrecord"), storage_options=s3.options)
    assert len(reader.paths) == 3
    assert list(reader) == tf_read(paths)
    assert tn.count_records(s3.url("d/"), storage_options=s3.options) == N


def test_random_access_over_s3_is_batched(s3, local):
    _, paths, cols = local
    _upload(s3.fs, paths, s3.url("r/"))
    ds = tn.open(s3.url("r/"), storage_options=s3.options)
    assert len(ds) == N  # from the .idx sidecars
    assert int(ds[1234]["label"]) == 1234
    picked = [2999, 5, 1500, 5]
    np.testing.assert_array_equal(ds[picked]["label"], picked)
    np.testing.assert_array_equal(ds[100:200]["x"], cols["x"][100:200])
    before = s3.requests()
    labels = np.concatenate([b["label"] for b in ds.batches(256, shuffle=True, seed=3)])
    assert sorted(labels.tolist()) == list(range(N))
    assert labels.tolist() != list(range(N))
    assert s3.requests() - before < N // 20  # far fewer requests than records


def test_write_to_s3_shards_and_index(s3):
    cols = _columns(1200)
    out = tn.write(
        s3.url("w/data.tfrecord"),
        cols,
        records_per_shard=500,
        index=True,
        progress=False,
        verify=True,
        storage_options=s3.options,
    )
    names = sorted(p.rsplit("/", 1)[-1] for p in s3.fs.ls(s3.url("w")))
    assert names == [
        "data-00000-of-00003.tfrecord",
        "data-00000-of-00003.tfrecord.idx",
        "data-00001-of-00003.tfrecord",
        "data-00001-of-00003.tfrecord.idx",
        "data-00002-of-00003.tfrecord",
        "data-00002-of-00003.tfrecord.idx",
    ]
    assert out.records == 1200
    assert_same(tn.read(out.paths, out.spec, storage_options=s3.options), cols)


def test_failed_write_leaves_nothing(s3):
    cols = _columns(100)
    with (
        pytest.raises(RuntimeError),
        tn.Writer(s3.url("f/data.tfrecord"), records_per_shard=40, storage_options=s3.options) as w,
    ):
        w.write_batch(cols)
        raise RuntimeError("the job failed")
    assert not s3.fs.exists(s3.url("f")) or s3.fs.ls(s3.url("f")) == []


def test_killed_writer_leaves_no_complete_looking_shard(s3, tmp_path):
    # a process dies mid-write (no cleanup at all): what it leaves is hidden and unlisted
    script = textwrap.dedent(
        f"""
        import os, numpy as np, tfrecnp as tn
        w = tn.RecordWriter({s3.url("k/data.tfrecord")!r}, storage_options={s3.options!r})
        payload = bytes(1 << 20)
        for _ in range(12):   # 12 MiB: at least one part uploaded
            w.write(payload)
        w.write_batch(np.zeros(1, np.uint8), np.array([0, 1]))
        w._drain()
        os._exit(1)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    listed = s3.fs.ls(s3.url("k"), detail=False) if s3.fs.exists(s3.url("k")) else []
    assert all(p.rsplit("/", 1)[-1].startswith(".") for p in listed)
    with pytest.raises(FileNotFoundError):
        tn.open(s3.url("k/"), storage_options=s3.options)


def test_convert_save_and_load_over_s3(s3, local):
    _, paths, cols = local
    _upload(s3.fs, paths, s3.url("c/"))
    out = tn.convert(s3.url("c/"), s3.url("npy/out"), storage_options=s3.options, progress=False)
    assert out == s3.url("npy/out")
    assert not any(p.rsplit("/", 1)[-1].startswith(".") for p in s3.fs.ls(s3.url("npy")))
    assert_same(dict(tn.load(out, storage_options=s3.options)), cols)
    ds = tn.open(s3.url("c/"), storage_options=s3.options)
    ds.save(s3.url("npz/out.npz"), storage_options=s3.options, progress=False)
    assert_same(dict(tn.load(s3.url("npz/out.npz"), storage_options=s3.options)), cols)
    back = tn.convert(out, s3.url("tf/back.tfrecord"), storage_options=s3.options, progress=False)
    assert_same(tn.read(back.paths, back.spec, storage_options=s3.options), cols)


def test_same_answers_local_memory_s3(s3, memfs, local):
    folder, paths, _ = local
    _upload(s3.fs, paths, s3.url("same/"))
    _upload(memfs, paths, "memory://same/")
    answers = [
        tn.open(str(folder)),
        tn.open("memory://same/"),
        tn.open(s3.url("same/"), storage_options=s3.options),
    ]
    first = [b for b in answers[0].batches(700)]
    for ds in answers[1:]:
        for a, b in zip(first, ds.batches(700), strict=True):
            assert_same(a, b)


def test_memory_write_and_cli(memfs, capsys):
    from tfrecnp.cli import main

    tn.write("memory://m/data.tfrecord", _columns(50), progress=False)
    assert memfs.ls("/m", detail=False) == ["/m/data.tfrecord"]
    assert main(["count", "memory://m/data.tfrecord"]) == 0
    assert "50" in capsys.readouterr().out
    assert main(["count", "--json", "memory://m/"]) == 0
    assert main(["index", "memory://m/data.tfrecord"]) == 0
    assert memfs.exists("/m/data.tfrecord.idx")
    assert not [p for p in memfs.ls("/m", detail=False) if "/." in p]  # no temporaries left
    ds = tn.open("memory://m/")
    assert len(ds) == 50 and int(ds[49]["label"]) == 49


def test_an_empty_shard_in_a_bucket_is_a_shard_of_no_records(s3, tmp_path, monkeypatch, capsys):
    # Beam and Spark write a 0-byte shard for a worker that got no rows; S3 answers 416 to
    # any ranged GET of an empty object, so nothing may ask it for bytes
    import fsspec

    from tfrecnp.cli import main

    cols = _columns(300)
    written = tn.write(tmp_path / "w.tfrecord", cols, records_per_shard=100, progress=False)
    gz = tn.write(tmp_path / "g.tfrecord.gz", cols, compression="GZIP", progress=False)
    for i, p in zip([0, 2, 3], written.paths, strict=True):
        s3.fs.put_file(p, s3.url(f"data/part-{i}.tfrecord"))
    s3.fs.put_file(gz.paths[0], s3.url("gz/part-0.tfrecord.gz"))
    for folder in ("data", "gz"):
        s3.fs.pipe(s3.url(f"{folder}/part-1.tfrecord" + (".gz" if folder == "gz" else "")), b"")
    opts = s3.options
    asked: list[str] = []  # ranged requests for an empty object

    def note(request, **_):
        if "part-1.tfrecord" in request.url and "Range" in request.headers:
            asked.append(request.url)

    s3.fs.s3.meta.events.register("before-send.s3", note)

    ds = tn.open(s3.url("data/*.tfrecord"), storage_options=opts)
    assert [p.rsplit("/", 1)[-1] for p in ds.paths] == [f"part-{i}.tfrecord" for i in range(4)]
    assert_same(ds.to_numpy(), cols)
    assert len(ds) == 300  # the index, scanned
    assert int(ds[150]["label"]) == 150 and ds[[299, 0, 100]]["label"].tolist() == [299, 0, 100]
    shuffled = np.concatenate([b["label"] for b in ds.batches(64, shuffle=True, seed=1)])
    assert sorted(shuffled.tolist()) == list(range(300))
    pooled = np.concatenate([b["label"] for b in ds.batches(64, shuffle=50, seed=1)])
    assert sorted(pooled.tolist()) == list(range(300))
    assert tn.count_records(s3.url("data/"), storage_options=opts) == 300
    assert list(tn.RecordReader(s3.url("data/part-1.tfrecord"), storage_options=opts)) == []
    empty = tn.open(s3.url("data/part-1.tfrecord"), spec=written.spec, storage_options=opts)
    assert len(empty) == 0 and len(empty.to_numpy()["label"]) == 0
    assert_same(
        tn.open(s3.url("gz/"), storage_options=opts).to_numpy(), cols
    )  # compression sniffed

    monkeypatch.setitem(fsspec.config.conf, "s3", opts)  # the CLI's options, as FSSPEC_S3 gives
    for folder in ("data/", "gz/"):
        assert main(["count", "--json", s3.url(folder)]) == 0
        assert json.loads(capsys.readouterr().out)["records"] == 300
        assert main(["verify", "--json", s3.url(folder)]) == 0
        files = json.loads(capsys.readouterr().out)["files"]
        assert [f["records"] for f in files if "part-1" in f["path"]] == [0]
    assert main(["index", s3.url("data/")]) == 0
    assert s3.fs.cat_file(s3.url("data/part-1.tfrecord.idx")) == b""
    capsys.readouterr()
    indexed = tn.open(s3.url("data/"), storage_options=opts)  # through the .idx sidecars
    assert len(indexed) == 300 and int(indexed[299]["label"]) == 299
    assert main(["inspect", s3.url("data/")]) == 0
    said = capsys.readouterr().out
    assert "part-1.tfrecord: 0 records, 0 bytes" in said and "300 records in 4 files" in said
    assert main(["inspect", s3.url("gz/part-1.tfrecord.gz")]) == 0
    assert "0 records" in capsys.readouterr().out
    assert asked == []


def test_gzip_over_memory(memfs):
    cols = _columns(400)
    out = tn.write("memory://z/data.tfrecord.gz", cols, compression="GZIP", progress=False)
    assert memfs.cat_file("/z/data.tfrecord.gz")[:2] == b"\x1f\x8b"
    assert_same(tn.open(out.paths).to_numpy(), cols)
    # read by position through inflate checkpoints built from one pass (the gzip extra),
    # which says so: the sidecars are not written beside the shard
    with pytest.warns(UserWarning, match=r"no \.idx sidecar or \.zran\.idx"):
        row = tn.open("memory://z/")[3]
    assert int(row["label"]) == 3
    np.testing.assert_array_equal(row["x"], cols["x"][3])
    assert sorted(memfs.ls("/z", detail=False)) == ["/z/data.tfrecord.gz"]


def test_local_paths_never_import_fsspec(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys, numpy as np, tfrecnp as tn
        tn.write({str(tmp_path / "a.tfrecord")!r}, {{"x": np.arange(5)}}, progress=False)
        tn.open({str(tmp_path)!r}).to_numpy()
        tn.convert({str(tmp_path / "a.tfrecord")!r}, {str(tmp_path / "o")!r}, progress=False)
        tn.load({str(tmp_path / "o")!r})
        assert "fsspec" not in sys.modules, "fsspec was imported"
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_reads_s3_with_options_from_fsspec_environment(s3, local):
    import json
    import os

    _, paths, _ = local
    _upload(s3.fs, paths, s3.url("cli/"))
    env = dict(os.environ, FSSPEC_S3=json.dumps(s3.options))
    done = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "count", "--json", s3.url("cli/")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == N
