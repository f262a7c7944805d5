"""Buckets at the link's speed (issue 37), against a real S3 server (moto's, on 127.0.0.1):
what a pass, a sample and a shuffled epoch send to the store, counted request by request
as the server is sent them (botocore's before-send event), and what they give back, which
must equal the local files'. Sizes that tune the requests (ranges, pieces) are set small
here so that a few MB of data cross many of them.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from bucket_data import assert_same, columns

import tfrecnp as tn
from tfrecnp._util import fs
from tfrecnp.data import blocks as blocks_module
from tfrecnp.data import files as files_module
from tfrecnp.format import reader as reader_module
from tfrecnp.format.index import index_path

N = 20_000


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Indexes of remote files are cached in this test's folder, not the user's."""
    monkeypatch.setenv("TFRECNP_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranged GETs of 64 KiB at most (a pass over 2 MB crosses dozens; its first of 16 KiB),
    16 KiB heads (a stream's first read, as by default), 256 KiB shuffle pieces, reads by
    position joined across gaps of 64 KiB."""
    monkeypatch.setattr(fs, "READ_AHEAD", 64 << 10)
    monkeypatch.setattr(fs, "START_BYTES", 16 << 10)
    monkeypatch.setattr(fs, "START_WINDOW", 64 << 10)
    monkeypatch.setattr(fs, "HEAD_BYTES", 16 << 10)
    monkeypatch.setattr(reader_module, "REMOTE_FIRST_READ", 16 << 10)
    monkeypatch.setattr(files_module, "PIECE_BYTES", 256 << 10)
    monkeypatch.setattr(files_module, "REMOTE_GAP", 64 << 10)  # < a piece, as by default
    monkeypatch.setattr(files_module, "SHUFFLE_WINDOW", 3)


class Sent:
    """The requests a test's S3 client sends, as the server gets them."""

    def __init__(self, s3):
        self.log: list[tuple[str, str, int, int, bool]] = []  # method, key, start, stop, list
        s3.fs.s3.meta.events.register("before-send.s3", self._note)
        self.bucket = s3.bucket

    def _note(self, request, **_):
        from urllib.parse import urlparse

        url = urlparse(request.url)
        key = url.path.split(f"/{self.bucket}", 1)[-1].lstrip("/")
        listing = "list-type" in url.query or (request.method == "GET" and not key)
        rng = request.headers.get("Range")
        start = stop = -1
        if rng:
            a, b = (rng.decode() if isinstance(rng, bytes) else rng).split("=")[1].split("-")
            start, stop = int(a), int(b) + 1
        self.log.append((request.method, key, start, stop, listing))

    def mark(self) -> int:
        return len(self.log)

    def since(self, mark: int) -> list[tuple[str, str, int, int, bool]]:
        return self.log[mark:]


def _columns(n: int = N, seed: int = 0) -> dict:
    return columns(n, seed, width=16, longest=12, vocab=1000)


@pytest.fixture
def shards(tmp_path):
    """Four local shards of N records (about 2.6 MB) with .idx sidecars."""
    (tmp_path / "local").mkdir()
    out = tn.write(
        tmp_path / "local" / "data.tfrecord",
        _columns(),
        records_per_shard=N // 4,
        index=True,
        progress=False,
    )
    return out.paths


def _upload(s3, paths, folder: str, sidecars: bool = True) -> int:
    """Put the shards (and their sidecars) under folder/; returns their bytes."""
    total = 0
    for p in paths:
        name = p.rsplit("/", 1)[-1]
        s3.fs.put_file(p, s3.url(f"{folder}/{name}"))
        if sidecars:
            s3.fs.put_file(index_path(p), s3.url(f"{folder}/{name}.idx"))
        total += fs.size(p)
    return total


def _tensors(tmp_path, folder: str, n: int, seed: int, side: int = 64, label: bool = False, **kw):
    """n float32 tensors of side x side (16 KiB at 64), written raw as shards under
    tmp_path/folder (tn.write's keywords kw): (their columns, the WriteResult)."""
    rng = np.random.default_rng(seed)
    cols = {"data": rng.standard_normal((n, side, side)).astype(np.float32)}
    if label:
        cols = {"label": np.arange(n, dtype=np.int64), **cols}
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / f"{folder}.tfrecord"
    return cols, tn.write(path, cols, encoding={"data": "raw"}, progress=False, **kw)


def test_a_pass_lists_once_sends_no_head_and_moves_the_files_once(s3, shards, small_ranges):
    total = _upload(s3, shards, "seq")
    sent = Sent(s3)
    local = tn.open(shards)
    mark = sent.mark()
    ds = tn.open(s3.url("seq/"), storage_options=s3.options)
    opened = sent.since(mark)
    assert [r for r in opened if r[4]] == [opened[0]]  # one listing
    assert not [r for r in opened if r[0] == "HEAD"]
    before, mark = ds.stats(), sent.mark()
    got = list(ds.batches(1000))
    pass_ = sent.since(mark)
    after = ds.stats()
    for a, b in zip(local.batches(1000), got, strict=True):
        assert_same(a, b)
    assert not [r for r in pass_ if r[4] or r[0] == "HEAD"]  # no LIST, no HEAD
    gets = [r for r in pass_ if r[0] == "GET" and r[2] >= 0]
    assert len(gets) == len(pass_) > 4 * 3  # many ranges: 64 KiB each here
    # the pass's first range is small (its first records after one round trip), sent with
    # the rest of the start window; later ones fill the window (fewer requests)
    # (after the 16 KiB head; the two sent side by side, so in either order)
    key = gets[0][1]
    assert sorted(r[1:4] for r in gets[:2]) == [
        (key, 16 << 10, 32 << 10),
        (key, 32 << 10, 80 << 10),
    ]
    # each byte of the files read once by the pass (their heads were, at open)
    moved = sum(stop - start for _, _, start, stop, _ in gets)
    assert moved == total - sum(min(fs.HEAD_BYTES, fs.size(p)) for p in shards)
    for p in shards:  # each file's first bytes: read at open, once (never again)
        key = "seq/" + p.rsplit("/", 1)[-1]
        heads = [r for r in opened + pass_ if r[1] == key and r[2] == 0]
        assert len(heads) == 1, heads
    # ds.stats() counts what the server was sent
    assert after["requests"] - before["requests"] == len(pass_)
    assert after["bytes"] - before["bytes"] == moved
    assert after["list"] == 1 and after["head"] == 0


@pytest.mark.parametrize("first_block", [16 << 10, 1 << 40], ids=["growing", "whole"])
def test_a_pass_gives_its_first_batch_after_its_first_ranges(
    s3, shards, small_ranges, monkeypatch, first_block
):
    """A pass reads its first block in growing pieces (blocks.FIRST_BLOCK_BYTES): its first
    batch waits for the first ranges of the first file, not for a whole block's (4 MiB by
    default: here the whole dataset, which a first block of its full size does fetch)."""
    monkeypatch.setattr(blocks_module, "FIRST_BLOCK_BYTES", first_block)
    total = _upload(s3, shards, "first")
    ds = tn.open(s3.url("first/"), storage_options=s3.options)
    sent = Sent(s3)
    mark = sent.mark()
    batches = ds.batches(64)
    got = next(batches)
    moved = sum(r[3] - r[2] for r in sent.since(mark) if r[0] == "GET" and r[2] >= 0)
    batches.close()
    assert_same(next(tn.open(shards).batches(64)), got)
    if first_block > total:  # (the test's own check: a whole first block moves it all)
        assert moved >= total - 4 * (16 << 10)  # (each file's head read at open)
    else:
        assert moved <= total / 3


def test_a_warm_filesystem_reopens_with_one_listing_at_most(s3, shards):
    _upload(s3, shards, "warm")
    tn.open(s3.url("warm/"), storage_options=s3.options).to_numpy()
    sent = Sent(s3)
    mark = sent.mark()
    ds = tn.open(s3.url("warm/"), storage_options=s3.options)
    assert len(ds) == N
    again = sent.since(mark)
    assert sum(r[4] for r in again) <= 1 and not [r for r in again if r[0] == "HEAD"]
    assert not [r for r in again if r[1].endswith(".idx")]  # indexes from the local cache


def test_random_access_moves_what_it_reads(s3, shards):
    total = _upload(s3, shards, "rand")
    local = tn.open(shards)
    ds = tn.open(s3.url("rand/"), storage_options=s3.options)
    assert len(ds) == N
    sent = Sent(s3)
    rng = np.random.default_rng(7)
    sample = rng.choice(N, N // 100, replace=False)
    mark = sent.mark()
    assert_same(ds[sample], local[sample])
    reads = sent.since(mark)
    moved = sum(stop - start for _, _, start, stop, _ in reads)
    asked = sum(int(local.source.files.lengths[i]) + 16 for i in sample)
    assert asked <= moved <= 3 * asked <= 0.03 * total  # a 1 % sample: at most 3 % of it
    assert len(reads) <= len(sample)
    # the batched fetch of PyTorch's DataLoader and grain, and one record
    picks = rng.choice(N, 256, replace=False).tolist()
    mark = sent.mark()
    assert_same(ds.__getitems__(picks).columns, local[picks])
    moved = sum(stop - start for _, _, start, stop, _ in sent.since(mark))
    assert moved <= 3 * sum(int(local.source.files.lengths[i]) + 16 for i in picks)
    one = ds[12345]
    assert int(one["label"]) == 12345
    np.testing.assert_array_equal(one["x"], local[12345]["x"])
    # a dense read (a slice) is a few ranges, not one per record
    mark = sent.mark()
    assert_same(ds[4000:6000], local[4000:6000])
    assert len(sent.since(mark)) <= 2


def test_shuffle_true_reads_pieces_and_moves_the_dataset_once(s3, shards, small_ranges):
    total = _upload(s3, shards, "shuf")
    ds = tn.open(s3.url("shuf/"), storage_options=s3.options)
    local = tn.open(shards)
    len(ds)
    sent = Sent(s3)
    mark = sent.mark()
    batches = list(ds.batches(500, shuffle=True, seed=3))
    reads = sent.since(mark)
    labels = np.concatenate([b["label"] for b in batches])
    assert sorted(labels.tolist()) == list(range(N))  # every record once
    assert labels.tolist() != list(range(N))
    assert np.abs(np.diff(labels)).mean() > 100  # mixed across pieces, not in file order
    for b in batches[:3]:  # each record's values are its own
        assert_same(b, local[b["label"]])
    moved = sum(stop - start for _, _, start, stop, _ in reads)
    assert moved <= 1.1 * total
    assert len(reads) <= total // (256 << 10) + 2 * len(shards)  # about one GET per piece
    again = np.concatenate([b["label"] for b in ds.batches(500, shuffle=True, seed=3)])
    np.testing.assert_array_equal(again, labels)  # a seed gives one order
    other = np.concatenate([b["label"] for b in ds.batches(500, shuffle=True, seed=4)])
    assert other.tolist() != labels.tolist()


def test_indexes_are_fetched_together_and_cached_by_size_and_etag(s3, shards, tmp_path):
    _upload(s3, shards, "idx")
    sent = Sent(s3)
    mark = sent.mark()
    ds = tn.open(s3.url("idx/"), storage_options=s3.options)
    assert len(ds) == N
    first = sent.since(mark)
    assert sorted(r[1] for r in first if r[1].endswith(".idx")) == sorted(
        "idx/" + p.rsplit("/", 1)[-1] + ".idx" for p in shards
    )
    mark = sent.mark()  # tfrecnp count: the indexes kept, one listing, nothing more
    assert tn.count_records(s3.url("idx/"), storage_options=s3.options) == N
    assert all(r[4] for r in sent.since(mark))
    # a shard rewritten with other records (another ETag and size): its old index is not
    # taken for it
    fewer = tn.write(
        tmp_path / "fewer.tfrecord", _columns(100, seed=1), index=True, progress=False
    ).paths[0]
    name = shards[1].rsplit("/", 1)[-1]
    s3.fs.put_file(fewer, s3.url(f"idx/{name}"))
    s3.fs.put_file(index_path(fewer), s3.url(f"idx/{name}.idx"))
    s3.fs.invalidate_cache()
    mark = sent.mark()
    changed = tn.open(s3.url("idx/"), storage_options=s3.options)
    assert len(changed) == N - N // 4 + 100
    fetched = [r[1] for r in sent.since(mark) if r[1].endswith(".idx")]
    assert fetched == [f"idx/{name}.idx"]  # the others from the cache
    np.testing.assert_array_equal(changed[N // 4 : N // 4 + 100]["label"], np.arange(100))


def test_a_file_without_sidecar_is_indexed_and_says_so(s3, shards):
    _upload(s3, shards, "bare", sidecars=False)
    ds = tn.open(s3.url("bare/"), storage_options=s3.options)
    with pytest.warns(UserWarning, match=r"4 remote files .* have no \.idx sidecar.*tfrecnp index"):
        assert len(ds) == N
    sent = Sent(s3)
    mark = sent.mark()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = tn.open(s3.url("bare/"), storage_options=s3.options)
        assert len(again) == N  # indexed from the cache: no warning, no whole read
    assert sum(stop - start for _, _, start, stop, _ in sent.since(mark)) < 200_000


def test_a_missing_object_is_file_not_found_naming_it(s3, shards):
    _upload(s3, shards, "gone")
    ds = tn.open(s3.url("gone/"), storage_options=s3.options)
    len(ds)
    name = shards[2].rsplit("/", 1)[-1]
    s3.fs.rm(s3.url(f"gone/{name}"))
    with pytest.raises(FileNotFoundError, match=name):
        for _ in ds.batches(1000):
            pass
    with pytest.raises(FileNotFoundError, match=name):
        ds[[3, N // 2 + 1]]


def test_a_connection_lost_mid_pass_is_an_os_error_naming_the_file(tmp_path, shards, small_ranges):
    """A store that goes away mid-pass: the pass raises OSError naming the file it was
    reading, in bounded time, instead of hanging or ending short."""
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        region_name="us-east-1",
    ).create_bucket(Bucket="lost")
    options = {
        "key": "x",
        "secret": "x",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        "config_kwargs": {"connect_timeout": 2, "retries": {"max_attempts": 1}},
    }
    stopped = False
    try:
        store = s3fs.S3FileSystem(**options)
        for p in shards:
            store.put_file(p, "lost/" + p.rsplit("/", 1)[-1])
        batches = tn.RecordReader("s3://lost/", storage_options=options).batches(100)
        next(batches)
        server.stop()
        stopped = True
        with pytest.raises(OSError, match=r"s3://lost/data-0000\d-of-00004\.tfrecord"):
            for _ in batches:
                pass
    finally:
        if not stopped:
            server.stop()


def test_passes_over_several_files_share_a_bounded_read_ahead(
    s3, shards, small_ranges, monkeypatch
):
    """shuffle=N reads four files in turn, each through its own ranged GETs: together they
    keep at most the process's budget ahead of their readers (plus the range each reader
    waits for), and give it all back when they end, or stop early."""
    _upload(s3, shards, "pool")

    class Watched(fs._Budget):
        most = 0

        def reserve(self, n: int, force: bool = False) -> bool:
            done = super().reserve(n, force)
            self.most = max(self.most, self.used)
            return done

    budget = Watched(256 << 10)
    monkeypatch.setattr(fs, "_AHEAD", budget)
    ds = tn.open(s3.url("pool/"), storage_options=s3.options)
    labels = [batch["label"] for batch in ds.batches(500, shuffle=2000, seed=1)]
    assert sorted(np.concatenate(labels).tolist()) == list(range(N))
    assert budget.limit // 2 < budget.most <= budget.limit + len(shards) * fs.READ_AHEAD
    assert budget.used == 0
    for k, _ in enumerate(ds.batches(500, shuffle=2000, seed=1)):
        if k == 3:
            break
    assert budget.used == 0


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_dataloader_workers_read_a_bucket_by_batched_ranges(s3, tmp_path, compressed):
    """PyTorch's DataLoader over a Dataset in a bucket: two worker processes (forked after
    the parent has read some, GZIP pieces too), random batches fetched by __getitems__ (a
    batch of ranged GETs each), the values the local files give."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, Subset

    if compressed:
        pytest.importorskip("rapidgzip")  # (the gzip extra, installed in CI: it runs there)
    (tmp_path / "w").mkdir()
    kind = "GZIP" if compressed else None
    shards = tn.write(
        tmp_path / "w" / "data.tfrecord",
        _columns(),
        records_per_shard=N // 4,
        compression=kind,
        index=not compressed,
        progress=False,
    ).paths
    if compressed:
        from tfrecnp.format import inflate_index

        for p in shards:
            inflate_index.index_checkpoints(p, kind)
        _upload_gzip(s3, shards, "torch")
    else:
        _upload(s3, shards, "torch")
    ds = tn.open(s3.url("torch/"), storage_options=s3.options)
    len(ds)  # indexed here: the workers get the index with the dataset
    local = tn.open(shards)
    assert_same(ds[[3, 17_000]], local[[3, 17_000]])
    picks = np.random.default_rng(5).choice(N, 1024, replace=False).tolist()
    loader = DataLoader(Subset(ds, picks), batch_size=128, num_workers=2)
    seen = []
    for batch in loader:
        labels = batch["label"].numpy()
        np.testing.assert_array_equal(batch["x"].numpy(), local[labels]["x"])
        seen.append(labels)
    assert np.concatenate(seen).tolist() == picks
    assert isinstance(batch["x"], torch.Tensor)


def test_shuffle_true_of_big_records_moves_the_dataset_once(s3, tmp_path, small_ranges):
    """16 KiB records (read by position in pieces when local): from a bucket, whole windows
    of pieces, each byte moved about once."""
    cols, out = _tensors(tmp_path, "big", 400, 2, label=True, records_per_shard=100, index=True)
    total = _upload(s3, out.paths, "big")
    ds = tn.open(s3.url("big/"), storage_options=s3.options, spec=out.spec)
    len(ds)
    sent = Sent(s3)
    mark = sent.mark()
    got = list(ds.batches(64, shuffle=True, seed=1))
    moved = sum(stop - start for _, _, start, stop, _ in sent.since(mark))
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == list(range(400)) and labels.tolist() != list(range(400))
    for b in got:
        np.testing.assert_array_equal(b["data"], cols["data"][b["label"]])
    assert total * 0.9 <= moved <= 1.1 * total
    # a pass of a fresh open: the records' mean size from the indexes cached above (no
    # probe of the first records), every byte moved once
    again = tn.open(s3.url("big/"), storage_options=s3.options, spec=out.spec)
    mark = sent.mark()
    assert sum(len(b["label"]) for b in again.batches(64)) == 400
    moved = sum(stop - start for _, _, start, stop, _ in sent.since(mark))
    assert 0.98 * total <= moved <= 1.01 * total  # (the heads read at open aside)


def test_a_first_pass_over_big_records_sizes_its_reads_from_a_small_sidecar(
    s3, tmp_path, small_ranges
):
    """A fresh machine (nothing cached): the records' mean size from the shard's `.idx`
    (a few KB beside 16 KiB records), not from a probe of its first records, which moved
    a read-ahead's worth more than the pass itself (3.1 MB over a 16.8 MB shard in
    bench_s3); the pass moves the shard once."""
    cols, out = _tensors(tmp_path, "fresh", 300, 4, index=True)
    total = _upload(s3, out.paths, "fresh")
    ds = tn.open(s3.url("fresh/"), storage_options=s3.options, spec=out.spec)
    sent = Sent(s3)
    mark = sent.mark()
    got = np.concatenate([b["data"] for b in ds.batches(64)])
    np.testing.assert_array_equal(got, cols["data"])
    reads = sent.since(mark)
    moved = sum(stop - start for _, key, start, stop, _ in reads if not key.endswith(".idx"))
    assert moved <= 1.01 * total
    assert [key for _, key, *_ in reads if key.endswith(".idx")] == ["fresh/fresh.tfrecord.idx"]


def test_an_open_keeps_the_heads_of_a_few_files_only(s3, shards, small_ranges, monkeypatch):
    """Opening many shards reads each one's first bytes (its compression), but keeps a
    head's worth (16 KiB here) only for the first HEADS_KEPT (2 here): an open of ten
    thousand shards does not move ten thousand heads."""
    monkeypatch.setattr(fs, "HEADS_KEPT", 2)
    monkeypatch.setattr(fs, "_HEADS", type(fs._HEADS)())
    _upload(s3, shards, "heads")
    sent = Sent(s3)
    mark = sent.mark()
    tn.open(s3.url("heads/"), storage_options=s3.options)
    firsts = sorted((r[1], r[3] - r[2]) for r in sent.since(mark) if r[2] == 0)
    names = sorted("heads/" + p.rsplit("/", 1)[-1] for p in shards)
    # (the spec, inferred from every file's first records here, reads files 2 and 3 too)
    assert [f for f in firsts if f[0] in names[:2]] == [(names[0], 16 << 10), (names[1], 16 << 10)]
    assert [f for f in firsts if f[1] == 12] == [(names[2], 12), (names[3], 12)]


@pytest.fixture
def gzip_shards(tmp_path, monkeypatch):
    """Four GZIP shards of N records (float vectors: about 1.5 MB compressed), their
    checkpoints 64 KiB of compressed bytes apart (a few dozen per shard) in `.zran.idx`
    sidecars beside `.idx` ones, as `tfrecnp index` writes them."""
    pytest.importorskip("rapidgzip")  # (the gzip extra, installed in CI: it runs there)
    from tfrecnp.format import inflate_index

    monkeypatch.setattr(inflate_index, "SPACING", 64 << 10)
    (tmp_path / "gz").mkdir()
    out = tn.write(
        tmp_path / "gz" / "data.tfrecord.gz",
        _columns(),
        records_per_shard=N // 4,
        compression="GZIP",
        progress=False,
    )
    for p in out.paths:
        inflate_index.index_checkpoints(p, "GZIP")
    return out.paths


def _upload_gzip(s3, paths, folder: str, sidecars: bool = True) -> int:
    from tfrecnp.format.inflate_index import checkpoint_path

    total = _upload(s3, paths, folder, sidecars=sidecars)
    if sidecars:
        for p in paths:
            name = p.rsplit("/", 1)[-1]
            s3.fs.put_file(checkpoint_path(p), s3.url(f"{folder}/{name}.zran.idx"))
    return total


def _checkpoint_indexes(paths: list[str]) -> list[bytes]:
    from tfrecnp.format import inflate_index

    return [inflate_index.read_checkpoints(p, "GZIP").index for p in paths]


def test_gzip_shards_are_read_by_position_through_their_checkpoint_sidecars(s3, gzip_shards):
    from tfrecnp.format import inflate_index

    inflate_index._PIECES.clear()  # (pieces other tests fetched)
    total = _upload_gzip(s3, gzip_shards, "gz")
    local = tn.open(gzip_shards)
    sent = Sent(s3)
    ds = tn.open(s3.url("gz/"), storage_options=s3.options)
    mark = sent.mark()  # (the spec, inferred at open, inflates each shard's first MiB)
    assert len(ds) == N
    counted = sent.since(mark)
    names = sorted("gz/" + p.rsplit("/", 1)[-1] for p in gzip_shards)
    assert sorted(r[1] for r in counted) == sorted(
        [n + ".zran.idx" for n in names] + [n + ".idx" for n in names]
    )  # each sidecar fetched once, no shard read
    mark = sent.mark()  # one record: the compressed piece between two checkpoints
    one = ds[7777]
    assert int(one["label"]) == 7777
    np.testing.assert_array_equal(one["x"], local[7777]["x"])
    reads = sent.since(mark)
    assert len(reads) == 1 and reads[0][3] - reads[0][2] < 0.05 * total
    rng = np.random.default_rng(3)
    sample = rng.choice(N, N // 100, replace=False)
    mark = sent.mark()
    assert_same(ds[sample], local[sample])
    reads = sent.since(mark)
    moved = sum(stop - start for _, _, start, stop, _ in reads)
    pieces = sum(len(inflate_index._points(c)[0]) for c in _checkpoint_indexes(gzip_shards))
    assert len(reads) <= pieces and moved <= 1.01 * total  # each piece once, at most
    assert_same(ds[4000:4100], local[4000:4100])
    labels = np.concatenate([b["label"] for b in ds.batches(700, shuffle=True, seed=0)])
    assert sorted(labels.tolist()) == list(range(N)) and labels.tolist() != list(range(N))
    # a reopen takes checkpoints and indexes from the local cache: no sidecar fetched
    mark = sent.mark()
    again = tn.open(s3.url("gz/"), storage_options=s3.options)
    assert len(again) == N
    assert not [r for r in sent.since(mark) if r[1].endswith(".idx")]
    assert_same(again[sample[:50]], local[sample[:50]])


def test_gzip_shards_without_sidecars_are_indexed_once_and_say_so(s3, gzip_shards):
    _upload_gzip(s3, gzip_shards, "bare", sidecars=False)
    local = tn.open(gzip_shards)
    ds = tn.open(s3.url("bare/"), storage_options=s3.options)
    with pytest.warns(UserWarning, match=r"4 remote files .* \.zran\.idx .*tfrecnp index"):
        assert len(ds) == N
    picks = [5, 19_999, 123, 10_001]
    assert_same(ds[picks], local[picks])
    # the bucket is not written (the checkpoints and indexes are cached locally)
    s3.fs.invalidate_cache()
    assert sorted(fs.basename(p) for p in s3.fs.ls(s3.url("bare/"))) == sorted(
        p.rsplit("/", 1)[-1] for p in gzip_shards
    )
    sent = Sent(s3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = tn.open(s3.url("bare/"), storage_options=s3.options)
        mark = sent.mark()  # (the open infers the spec from each shard's first records)
        assert len(again) == N  # from the cache: no warning, no whole read
        assert_same(again[picks], local[picks])
    total = sum(fs.size(p) for p in gzip_shards)
    assert sum(stop - start for _, _, start, stop, _ in sent.since(mark)) < 0.2 * total


def test_tfrecnp_index_writes_a_gzip_shards_sidecars_into_its_bucket(
    s3, gzip_shards, tmp_path, monkeypatch
):
    """Asked (`tfrecnp index s3://...`), the sidecars are written beside the shard: another
    machine (another cache here) then fetches them instead of reading the shard whole."""
    from tfrecnp.cli import main as cli

    _upload_gzip(s3, gzip_shards[:1], "asked", sidecars=False)
    import fsspec

    monkeypatch.setitem(fsspec.config.conf, "s3", s3.options)  # the CLI's, as FSSPEC_S3 gives
    assert cli(["index", s3.url("asked/")]) == 0
    s3.fs.invalidate_cache()
    name = gzip_shards[0].rsplit("/", 1)[-1]
    assert sorted(fs.basename(p) for p in s3.fs.ls(s3.url("asked/"))) == sorted(
        [name, name + ".idx", name + ".zran.idx"]
    )
    monkeypatch.setenv("TFRECNP_CACHE", str(tmp_path / "elsewhere"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = tn.open(s3.url("asked/"), storage_options=s3.options)
        sent = Sent(s3)
        mark = sent.mark()
        assert len(ds) == N // 4
        assert sorted(r[1] for r in sent.since(mark)) == [
            f"asked/{name}.idx",
            f"asked/{name}.zran.idx",
        ]
        assert_same(ds[[7, 4000]], tn.open(gzip_shards[0])[[7, 4000]])


def test_an_open_reads_the_heads_of_its_files_in_one_batch(s3, shards, monkeypatch):
    """What the first file is (ArrayRecord or TFRecord), then every file's compression: the
    first head asked for brings the others listed with it, in one batch of ranged GETs
    (one round trip, not two)."""
    monkeypatch.setattr(fs, "_HEADS", type(fs._HEADS)())
    _upload(s3, shards, "group")
    batches = []
    real = fs.read_many

    def noted(urls, starts, stops):
        batches.append(sorted(fs.basename(u) for u in urls))
        return real(urls, starts, stops)

    monkeypatch.setattr(fs, "read_many", noted)
    local = tn.open(shards)
    ds = tn.open(s3.url("group/"), storage_options=s3.options)
    names = sorted(p.rsplit("/", 1)[-1] for p in shards)
    assert batches == [names]  # (no .idx among them: sidecars are read whole, if at all)
    assert_same(next(iter(ds.batches(100))), next(iter(local.batches(100))))


def test_reads_that_stop_early_give_back_their_read_ahead(s3, tmp_path, small_ranges):
    """A file read only in part (a spec inferred from its first records, a pass stopped
    after one batch) cancels the ranges it had sent ahead: the process's read-ahead budget
    is whole again, for the passes that follow."""
    _, out = _tensors(tmp_path, "part", 200, 5, side=32)
    _upload(s3, out.paths, "part", sidecars=False)
    used = fs._AHEAD.used
    ds = tn.open(s3.url("part/"), storage_options=s3.options)  # (inferred: beyond its head)
    assert fs._AHEAD.used == used
    it = iter(ds.batches(8))
    next(it)
    it.close()
    assert fs._AHEAD.used == used
    with fs.open_read(fs.listing(fs.resolve(s3.url("part/"), s3.options))[1][0]) as f:
        f.read(100 << 10)
    assert fs._AHEAD.used == used


def test_an_inferred_spec_moves_its_sample_not_a_read_ahead(s3, tmp_path, monkeypatch):
    """An open without spec= samples each file's first records up to its byte budget
    (infer.REMOTE_SAMPLE_BYTES, 256 KiB here) and sends no range ahead past it: it moved
    the whole 16.8 MB shard of 16 KiB records in bench_s3 (the read-ahead grown to 8x what
    the sample took). A reader that expected fewer bytes than it reads still reads all,
    in ranges of half what it has read (not a ramp started again at each one)."""
    from tfrecnp.example import infer

    monkeypatch.setattr(infer, "REMOTE_SAMPLE_BYTES", 256 << 10)
    _, out = _tensors(tmp_path, "probe", 200, 6, label=True)
    total = _upload(s3, out.paths, "probe", sidecars=False)
    sent = Sent(s3)
    ds = tn.open(s3.url("probe/"), storage_options=s3.options)
    moved = sum(stop - start for _, _, start, stop, _ in sent.log if start >= 0)
    # the sample's last batch of records doubles: half its budget again at most
    assert total > 3 << 20 and moved <= 1.5 * infer.REMOTE_SAMPLE_BYTES + fs.HEAD_BYTES
    assert ds.spec == tn.infer_spec(out.paths)
    reader = tn.RecordReader(s3.url("probe/"), storage_options=s3.options, expect_bytes=100_000)
    local = tn.RecordReader(out.paths)
    mark = sent.mark()
    got = list(itertools.chain.from_iterable(reader.batches(64)))
    assert got == list(itertools.chain.from_iterable(local.batches(64)))
    assert len([r for r in sent.since(mark) if r[2] >= 0]) <= 12


def test_a_probe_of_the_first_records_moves_a_first_range(s3, tmp_path):
    """The records' mean size of a file without index (`mean_frame_bytes`, before a
    first pass) is read from its first records: one first range beside the head, not
    the 4 MiB a pass starts with."""
    from tfrecnp.format.reader import mean_frame_bytes

    _, out = _tensors(tmp_path, "mean", 200, 7)
    _upload(s3, out.paths, "mean", sidecars=False)
    sent = Sent(s3)
    url = fs.listing(fs.resolve(s3.url("mean/"), s3.options))[1][0]
    assert mean_frame_bytes(url) == mean_frame_bytes(out.paths[0])
    moved = sum(stop - start for _, _, start, stop, _ in sent.log if start >= 0)
    assert moved <= fs.HEAD_BYTES + fs.START_BYTES


def test_a_long_range_is_fetched_in_parts_side_by_side(s3, shards, monkeypatch):
    """A range longer than RANGE_PART (a window of shuffled pieces of one file, joined) goes
    out as parts in one batch: one connection carries less than the link."""
    monkeypatch.setattr(fs, "RANGE_PART", 256 << 10)
    _upload(s3, shards[:1], "parts", sidecars=False)
    url = fs.listing(fs.resolve(s3.url("parts/"), s3.options))[1][0]
    size = fs.size(url)
    sent = Sent(s3)
    mark = sent.mark()
    whole, part = fs.read_ranges(url, [100, 5], [size, 50])
    with open(shards[0], "rb") as f:
        local = f.read()
    assert whole == local[100:] and part == local[5:50]
    gets = sorted((r[2], r[3]) for r in sent.since(mark))
    m = -(-(size - 100) // (256 << 10))
    assert len(gets) == m + 1 and gets[0] == (5, 50)
    assert gets[1][0] == 100 and gets[-1][1] == size  # the parts tile the range
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(gets[1:]))
