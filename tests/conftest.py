"""Shared fixtures: TensorFlow as the oracle (imported lazily, once), and a tiny pure-Python
reference of TFRecord framing so tests never take expected bytes from tfrecnp itself.

TensorFlow is a test dependency: tests that ask for the `tf` fixture run, they never skip.
"""

from __future__ import annotations

import os
import re
import types

import pytest

# --- a pure-Python reference of the format (FORMAT.md), independent of tfrecnp._core -------

_POLY = 0x82F63B78
_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ (_POLY if _c & 1 else 0)
    _TABLE.append(_c)


def crc32c_ref(data: bytes, crc: int = 0) -> int:
    """Byte-at-a-time CRC32C (Castagnoli, reflected), continuing from crc."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def mask_ref(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_ref(payload: bytes) -> bytes:
    """One TFRecord frame: length, masked length CRC, payload, masked payload CRC."""
    header = len(payload).to_bytes(8, "little")
    return (
        header
        + mask_ref(crc32c_ref(header)).to_bytes(4, "little")
        + payload
        + mask_ref(crc32c_ref(payload)).to_bytes(4, "little")
    )


def frame_starts_ref(lengths) -> list[int]:
    """Frame offsets from payload lengths (each frame is 16 bytes longer than its payload)."""
    starts, at = [], 0
    for n in lengths:
        starts.append(at)
        at += n + 16
    return starts


@pytest.fixture(scope="session")
def ref():
    """The reference framing helpers, as a namespace."""
    return types.SimpleNamespace(
        crc32c=crc32c_ref, mask=mask_ref, frame=frame_ref, starts=frame_starts_ref
    )


# --- TensorFlow, the oracle --------------------------------------------------------------


@pytest.fixture(scope="session")
def tf():
    """tensorflow, imported on first use (it takes seconds) with its logging silenced."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow

    return tensorflow


@pytest.fixture(scope="session")
def tf_write(tf):
    """tf_write(path, payloads, compression=None): write with tf.io.TFRecordWriter."""

    def write(path, payloads, compression=None):
        options = tf.io.TFRecordOptions(compression_type=compression or "")
        with tf.io.TFRecordWriter(os.fspath(path), options) as writer:
            for p in payloads:
                writer.write(p)
        return os.fspath(path)

    return write


@pytest.fixture(scope="session")
def tf_read(tf):
    """tf_read(path, compression=None) -> list of payloads read by tf.data.TFRecordDataset."""

    def read(path, compression=None):
        paths = [os.fspath(p) for p in path] if isinstance(path, list) else os.fspath(path)
        dataset = tf.data.TFRecordDataset(paths, compression_type=compression or "")
        return [p for batch in dataset.batch(4096).as_numpy_iterator() for p in batch.tolist()]

    return read


# --- Cython hygiene: a test fails when anything reports "Exception ignored" -------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    err = "".join(t for name, t in report.sections if name == f"Captured stderr {report.when}")
    if "Exception ignored" in err and report.outcome != "failed":
        report.outcome = "failed"
        report.longrepr = f"'Exception ignored' appeared on stderr during {report.when}:\n{err}"
    return report


# --- real servers on the loopback address: an S3 (moto) and a local Ray ------------------


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server on 127.0.0.1 (a free port) for the whole session; yields its
    storage_options (for s3fs) and a counter of the requests clients sent it."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    try:
        yield types.SimpleNamespace(options=options, client=client, endpoint=endpoint)
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server, request):
    """A fresh bucket on the session's S3 server: .url(name) gives s3://bucket/name,
    .options the storage_options, .fs an s3fs filesystem on it, .requests() the number
    of requests sent through .fs so far."""
    import s3fs

    bucket = "t-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:50].strip("-")
    s3_server.client.create_bucket(Bucket=bucket)
    fs = s3fs.S3FileSystem(**s3_server.options)
    sent = [0]

    def count(**_):
        sent[0] += 1

    fs.s3.meta.events.register("before-send.s3", count)
    yield types.SimpleNamespace(
        url=lambda name="": f"s3://{bucket}/{name}",
        bucket=bucket,
        options=s3_server.options,
        fs=fs,
        requests=lambda: sent[0],
    )
    fs.rm(bucket, recursive=True)


@pytest.fixture
def memfs():
    """fsspec's memory:// filesystem, emptied after the test."""
    import fsspec

    fs = fsspec.filesystem("memory")
    yield fs
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray with 2 CPUs, started once for the session and shut down after it."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()
