"""Run by tests/test_changing_files.py in a child process: one way of reading a dataset
while another thread changes its file (cut to half, to zero, rewritten in place, replaced
by rename, appended to), at several delays after the first batch, repeated. Prints one
JSON line per try: what was delivered (checked against the file's known values) and how
the read ended. A signal ends the process, which the parent sees in its exit status.
PRISTINE is a TFRecord file, or a folder `Dataset.save` wrote (x.npy and label.npy, read
through memory maps): then x.npy is the file that changes.

    python child_changing_files.py MODE PRISTINE WORKDIR REPEATS
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time

import numpy as np

import tfrecnp as tn

WIDTH = 8192  # bytes of x per record: x[j] == (label + j) % 251
SPEC = {"x": tn.Raw("uint8", shape=(WIDTH,)), "label": tn.FixedLen((), "int64")}
DELAYS_MS = (0, 1, 3, 10)
CHANGES = ("half", "zero", "rewrite", "rename", "append")


def expected_x(labels: np.ndarray) -> np.ndarray:
    return ((labels[:, None] + np.arange(WIDTH)) % 251).astype(np.uint8)


def change(kind: str, path: str, pristine: str) -> None:
    """Change the file at path the way `kind` says, as another process would."""
    size = os.path.getsize(pristine)
    if kind == "half":
        os.truncate(path, size // 2)
    elif kind == "zero":
        os.truncate(path, 0)
    elif kind == "rewrite":  # open(p, "wb") then the same bytes: TFRecordWriter's way
        with open(pristine, "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    elif kind == "rename":  # a new file renamed over the old one: tn.Writer's way
        shutil.copyfile(pristine, path + ".new")
        os.replace(path + ".new", path)
    elif kind == "append":
        with open(pristine, "rb") as src, open(path, "ab") as dst:
            dst.write(src.read(size // 10))


class Tally:
    """What one try delivered: labels seen, and whether any value was wrong."""

    def __init__(self):
        self.labels: list[np.ndarray] = []
        self.wrong = 0
        self.lock = threading.Lock()

    def add(self, batch: dict) -> None:
        labels = np.asarray(batch["label"])
        ok = np.array_equal(np.asarray(batch["x"]), expected_x(labels))
        with self.lock:
            self.labels.append(labels)
            self.wrong += not ok


def run_try(mode: str, kind: str, delay: float, path: str, pristine: str) -> dict:
    arrays = os.path.isdir(path)
    ds = tn.open(path) if arrays else tn.open(path, SPEC)
    if mode != "stream":
        len(ds)  # indexed: reads by position
    tally = Tally()
    changed = (
        (os.path.join(path, "x.npy"), os.path.join(pristine, "x.npy"))
        if arrays
        else (path, pristine)
    )
    timer = threading.Timer(delay, change, (kind, *changed))
    error: BaseException | None = None
    try:
        if mode in ("stream", "order", "shuffle", "shuffle_all"):
            shuffle = {"shuffle": 10_000, "shuffle_all": True}.get(mode, False)
            for k, batch in enumerate(ds.batches(256, shuffle=shuffle, seed=k_seed(kind))):
                tally.add(batch)
                if k == 0:
                    timer.start()
        elif mode in ("ds_i", "ds_list"):
            error = by_position_in_a_thread(ds, mode, tally, timer)
        elif mode == "dataloader":
            from torch.utils.data import DataLoader

            loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
            for k, batch in enumerate(loader):
                tally.add({name: col.numpy() for name, col in batch.items()})
                if k == 0:
                    timer.start()
    except Exception as e:
        error = e
    timer.cancel()
    if timer.is_alive():
        timer.join()
    labels = np.concatenate(tally.labels) if tally.labels else np.empty(0, np.int64)
    return {
        "mode": mode,
        "change": kind,
        "delay_ms": round(delay * 1000),
        "delivered": len(labels),
        "distinct": len(np.unique(labels)),
        "wrong": tally.wrong,
        "error": None if error is None else type(error).__name__,
        "typed": isinstance(error, tn.TFRecordError),
        "message": None if error is None else str(error)[-4000:],
    }


def k_seed(kind: str) -> int:
    return CHANGES.index(kind)


def by_position_in_a_thread(ds, mode: str, tally: Tally, timer) -> BaseException | None:
    """ds[i] / ds[list] in another thread while this one changes the file: the first
    error the reader met, if any."""
    rng = np.random.default_rng(0)
    n = len(ds)
    errors: list[BaseException] = []
    started = threading.Event()

    def read() -> None:
        for k in range(60):
            try:
                if mode == "ds_i":
                    i = int(rng.integers(n))
                    record = ds[i]
                    tally.add({"x": record["x"][None], "label": np.array([record["label"]])})
                else:
                    tally.add(ds[rng.integers(0, n, 64).tolist()])
            except Exception as e:
                errors.append(e)
                return
            if k == 0:
                started.set()
        started.set()

    reader = threading.Thread(target=read)
    reader.start()
    started.wait()
    timer.start()
    reader.join()
    return errors[0] if errors else None


def main() -> None:
    mode, pristine, workdir, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    arrays = os.path.isdir(pristine)
    path = os.path.join(workdir, "data" if arrays else "data.tfrecord")
    for kind in CHANGES:
        for delay_ms in DELAYS_MS:
            for _ in range(repeats):
                if arrays:
                    shutil.rmtree(path, ignore_errors=True)
                    shutil.copytree(pristine, path)
                else:
                    shutil.copyfile(pristine, path)
                result = run_try(mode, kind, delay_ms / 1000, path, pristine)
                print(json.dumps(result), flush=True)
                time.sleep(0.001)


if __name__ == "__main__":
    main()
