"""Running work ahead in a background thread, a bounded number of items deep; exceptions
surface in the consumer, and closing the consumer stops the thread."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

_DONE, _ITEM, _ERROR = 0, 1, 2


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
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def consume() -> Iterator:
        thread = threading.Thread(target=run, name="tfrecnp-prefetch", daemon=True)
        thread.start()
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
