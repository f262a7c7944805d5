"""Threads: the shared pools and the core count; the pieces of one piece of work run at once
(run_parallel); and work run ahead in a background thread, a bounded number of items deep,
whose exceptions surface in the consumer, and which stops when the consumer is closed.

The threads of a pass's stages (`run_ahead`, `ordered_map`) are kept between passes
(`start_stage`), idle under the name "tfrecnp-idle": a thread made anew for each pass gets
a heap of its own from the C library, whose pages it faults in afresh, pass after pass
(benchmarks/CONSTANTS.md, IDLE_STAGES)."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

CPUS = os.cpu_count() or 1  # read once: os.cpu_count() reads /sys on every call

# The shared pools, by kind, and their threads. Each runs leaf tasks only (tasks that never
# wait on other tasks), so a caller in any thread, a "pipeline" one included, can wait on
# them without deadlock.
POOL_THREADS = {
    "chunks": max(CPUS, 2),  # pieces of one batch, decoded at once
    "pipeline": 1,  # tn.read: a batch decoded while the next is read
    "image": CPUS,  # the images of a batch, decoded or encoded at once
}

_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()

_DONE, _ITEM, _ERROR = 0, 1, 2

IDLE_NAME = "tfrecnp-idle"
IDLE_STAGES = 2 * CPUS + 2  # stage threads kept between passes, at most
_idle: list[queue.SimpleQueue] = []  # each idle stage thread's inbox
_idle_lock = threading.Lock()


def executor(kind: str = "chunks") -> ThreadPoolExecutor:
    """The shared pool of a kind in POOL_THREADS, made on first use."""
    with _pools_lock:
        pool = _pools.get(kind)
        if pool is None:
            pool = _pools[kind] = ThreadPoolExecutor(POOL_THREADS[kind], f"tfrecnp-{kind}")
        return pool


def _forget_pools() -> None:
    """In a forked child: the parent's pool threads do not exist here, and a pool that
    believes it has them would never run a task, so each kind starts afresh (and so do
    the idle stage threads)."""
    global _pools_lock, _idle_lock
    _pools_lock = threading.Lock()
    _pools.clear()
    _idle_lock = threading.Lock()
    _idle.clear()


class Stage:
    """One stage's run on a kept thread (`start_stage`): `join` waits for it to end."""

    def __init__(self) -> None:
        self._done = threading.Event()

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def is_alive(self) -> bool:
        return not self._done.is_set()


def start_stage(target: Callable[[], None], name: str) -> Stage:
    """Run target on an idle stage thread, or a new one, named `name` while it runs."""
    stage = Stage()
    with _idle_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(inbox,), name=name, daemon=True).start()
    inbox.put((target, name, stage))
    return stage


def _serve(inbox: queue.SimpleQueue) -> None:
    """A stage thread: runs the stages put in its inbox, one after another, idle between
    them; it ends when IDLE_STAGES others are idle already (or a stage raises)."""
    me = threading.current_thread()
    while True:
        target, name, stage = inbox.get()
        me.name = name
        try:
            target()
        finally:
            me.name = IDLE_NAME
            stage._done.set()
            del target, stage
        with _idle_lock:
            if len(_idle) >= IDLE_STAGES:
                return
            _idle.append(inbox)


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_forget_pools)


def run_parallel(fn: Callable[[int], Any], count: int, workers: int) -> list:
    """[fn(0), ..., fn(count - 1)], computed by this thread and up to workers - 1 threads of
    the "chunks" pool taking pieces from a shared counter. The caller never waits for a
    helper that has not started (on a busy machine it may not get a core for milliseconds):
    it does the work itself, and waits only for pieces a helper already took. Once it
    returns, no helper refers to fn any more (one that starts late finds nothing), so the
    buffers fn reads and fills are free for reuse (Spares) as soon as the caller drops
    them."""
    if count <= 1 or workers <= 1:
        return [fn(k) for k in range(count)]
    results: list[Any] = [None] * count
    errors: list[BaseException] = []
    lock = threading.Lock()
    taken = [0, 0]  # pieces taken, pieces finished
    finished = threading.Event()
    job = [fn]  # emptied when every piece is done

    def work() -> None:
        while True:
            with lock:
                k = taken[0]
                if k >= count:
                    return
                taken[0] += 1
                piece = job[0]
            try:
                results[k] = piece(k)
            except BaseException as e:  # re-raised by the caller
                errors.append(e)
            del piece  # not held past the last piece
            with lock:
                taken[1] += 1
                if taken[1] == count:
                    finished.set()

    pool = executor()
    for _ in range(min(workers, count) - 1):
        pool.submit(work)
    work()
    finished.wait()
    job.clear()
    if errors:
        raise errors[0]
    return results


def close_iterator(items: Any) -> None:
    """Close items when it can be closed (a generator, a file reader): its finally blocks
    run now, in this thread, rather than whenever it is collected."""
    close = getattr(items, "close", None)
    if close is not None:
        close()


def run_ahead(items: Iterator, depth: int, fn: Callable | None = None) -> Iterator:
    """Iterate `items` (applying fn) in a background thread, at most `depth` results ahead.
    Exceptions surface in the caller; closing the returned generator stops the thread and
    closes `items`."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple) -> bool:
        while not stop.is_set():
            try:
                q.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in items:
                if not put((_ITEM, fn(item) if fn is not None else item)):
                    return
            put((_DONE, None))
        except BaseException as e:  # handed to the consumer, raised there
            put((_ERROR, e))
        finally:
            close_iterator(items)

    def consume() -> Iterator:
        thread = start_stage(run, "tfrecnp-prefetch")
        try:
            while True:
                kind, value = q.get()
                if kind == _DONE:
                    return
                if kind == _ERROR:
                    raise value
                yield value
        finally:
            stop.set()
            thread.join(timeout=5)

    return consume()


def pipeline(raw: Iterator, fn: Callable, prefetch: int) -> Iterator:
    """fn over raw items: reading in one thread, fn in another, each `prefetch` ahead."""
    if prefetch == 0:
        return map(fn, raw)
    return run_ahead(run_ahead(raw, prefetch), prefetch, fn)


def ordered_map(items: Iterator, fn: Callable, workers: int, depth: int = 0) -> Iterator:
    """fn over items by `workers` threads, the results in the items' order. Each worker
    takes the next item itself, under a lock (so `items`, reading files say, runs in one
    thread at a time and in order), then applies fn alongside the others: with two
    workers one reads while the other decodes, and both decode while reading waits. At
    most max(depth, workers) items are taken beyond the last result consumed. An exception
    surfaces in the caller at the item that raised it; closing the returned generator
    stops the workers and closes `items`."""
    depth = max(depth, workers)
    reading = threading.Lock()  # held while items runs
    cond = threading.Condition()  # guards the rest
    results: dict[int, tuple] = {}
    taken = consumed = 0
    ended = stop = closed = False

    def close_items() -> None:  # with `reading` held
        nonlocal closed
        if not closed:
            closed = True
            close_iterator(items)

    def work() -> None:
        nonlocal taken, ended
        while True:
            with reading:
                with cond:
                    while not (stop or ended) and taken - consumed >= depth:
                        cond.wait()
                    if stop or ended:
                        return
                    k = taken
                    taken += 1
                try:
                    entry: tuple = (_ITEM, next(items))
                except StopIteration:
                    entry = (_DONE, None)
                except BaseException as e:  # raised in the caller, in its turn
                    entry = (_ERROR, e)
                if stop:  # the caller has gone, and may not have been able to close items
                    close_items()
                    return
            if entry[0] == _ITEM:
                try:
                    entry = (_ITEM, fn(entry[1]))
                except BaseException as e:
                    entry = (_ERROR, e)
            with cond:
                results[k] = entry
                if entry[0] != _ITEM:
                    ended = True
                cond.notify_all()
            del entry

    def consume() -> Iterator:
        nonlocal consumed, stop
        threads: list[Stage] = []
        try:
            for _ in range(workers):
                threads.append(start_stage(work, "tfrecnp-decode"))
            k = 0
            while True:
                with cond:
                    while k not in results:
                        cond.wait()
                    kind, value = results.pop(k)
                    consumed = k = k + 1
                    cond.notify_all()
                if kind == _DONE:
                    return
                if kind == _ERROR:
                    raise value
                yield value
                del value
        finally:
            with cond:
                stop = True
                cond.notify_all()
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=5)
            if reading.acquire(timeout=5):  # else a worker stuck in items closes it
                try:
                    close_items()
                finally:
                    reading.release()

    return consume()
