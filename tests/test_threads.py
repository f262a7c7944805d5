"""ordered_map, the crew that reads and decodes blocks: results in order, the source in
one thread at a time, bounded look-ahead, errors in their turn, and a clean stop. The
shared pools: one per kind, and working again in a forked child."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable

import pytest

from tfrecnp._util import threads
from tfrecnp._util.threads import ordered_map


class Source:
    """Numbers 0..n-1, noting how far it was taken and whether two threads were ever in it
    at once; `fail_at` raises there instead of yielding."""

    def __init__(self, n: int, fail_at: int | None = None, delay: float = 0.0):
        self.n, self.fail_at, self.delay = n, fail_at, delay
        self.taken = 0
        self.inside = 0
        self.overlapped = False
        self.order: list[int] = []
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self) -> int:
        self.inside += 1
        self.overlapped |= self.inside > 1
        try:
            time.sleep(self.delay)
            if self.taken == self.fail_at:
                raise OSError(f"read failed at {self.taken}")
            if self.taken >= self.n:
                raise StopIteration
            self.order.append(self.taken)
            self.taken += 1
            return self.taken - 1
        finally:
            self.inside -= 1

    def close(self) -> None:
        self.closed = True


def _slow_square(x: int) -> int:
    time.sleep(random.random() * 0.002)  # finishing out of order
    return x * x


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_results_come_in_order_and_the_source_runs_alone(workers):
    source = Source(200, delay=0.0002)
    assert list(ordered_map(source, _slow_square, workers)) == [x * x for x in range(200)]
    assert source.order == list(range(200))
    assert not source.overlapped
    assert source.closed


def test_results_are_made_in_parallel():
    started = threading.Barrier(2, timeout=5)

    def meet(x: int) -> int:
        started.wait()  # only returns once two items are in fn at the same time
        return x

    assert list(ordered_map(Source(4), meet, 2)) == [0, 1, 2, 3]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_source_runs_at_most_workers_items_ahead(workers):
    source = Source(50)
    results = ordered_map(source, lambda x: x, workers)
    for consumed, x in enumerate(results, start=1):
        time.sleep(0.002)  # time for the workers to run ahead as far as they may
        assert x == consumed - 1
        assert source.taken <= consumed + workers


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_in_fn_comes_after_the_results_before_it(workers):
    def fn(x: int) -> int:
        if x == 7:
            raise ValueError("bad item 7")
        return _slow_square(x)

    got = []
    with pytest.raises(ValueError, match="bad item 7"):
        for x in ordered_map(Source(100), fn, workers):
            got.append(x)
    assert got == [x * x for x in range(7)]


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_in_the_source_comes_after_the_results_before_it(workers):
    source = Source(100, fail_at=5)
    got = []
    with pytest.raises(OSError, match="read failed at 5"):
        for x in ordered_map(source, _slow_square, workers):
            got.append(x)
    assert got == [x * x for x in range(5)]
    assert source.closed


def _crew() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "tfrecnp-decode"}


@pytest.mark.parametrize("how", ["close", "break", "del"])
def test_stopping_early_ends_the_workers_and_closes_the_source(how):
    before = _crew()
    source = Source(10_000)
    results = ordered_map(source, _slow_square, 2)
    assert next(results) == 0
    assert _crew() - before
    if how == "close":
        results.close()
    elif how == "break":  # the loop's reference was the only one: dropped on leaving it
        for _ in results:
            break
        del results
    else:
        del results
    deadline = time.monotonic() + 5
    while _crew() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _crew() - before == set()
    assert source.closed
    assert source.taken < 10


def test_one_pool_per_kind_and_one_core_count():
    from tfrecnp.example import decode

    assert threads.executor("chunks") is threads.executor()
    assert decode.run_parallel is threads.run_parallel  # the decoder's pieces: that pool
    assert threads.executor("image") is not threads.executor("chunks")
    assert threads.executor("pipeline")._max_workers == 1
    assert decode.CPUS == threads.CPUS == (os.cpu_count() or 1)
    with pytest.raises(KeyError):
        threads.executor("nobody")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("kind", ["chunks", "image"])
def test_a_forked_child_gets_pools_that_run(kind):
    """A child sees the parent's pool objects but none of their threads: a task given to
    one would never run. The pools are forgotten at fork, so the child's run."""
    assert threads.executor(kind).submit(int, "7").result(timeout=5) == 7  # threads exist
    assert _in_forked_child(lambda: threads.executor(kind).submit(int, "7").result(5) == 7) == 0
    assert threads.executor(kind).submit(int, "8").result(timeout=5) == 8  # the parent's too


def _in_forked_child(check: Callable[[], bool]) -> int:
    """The exit status of a forked child that runs check: 0 when it holds, 2 when not, 3
    when it raised, -SIGALRM when it hung (the child reports by exit status only)."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # a task handed to a thread the child does not have never ends
        code = 1
        try:
            code = 0 if check() else 2
        except BaseException:
            code = 3
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _idents(n: int, workers: int) -> set[int]:
    """The threads that ran a pass of ordered_map over n items."""
    seen: set[int] = set()

    def note(x: int) -> int:
        seen.add(threading.get_ident())
        time.sleep(0.001)
        return x

    assert list(ordered_map(iter(range(n)), note, workers)) == list(range(n))
    return seen


def test_stage_threads_are_kept_between_passes_and_bounded():
    """A pass's threads wait idle for the next pass (a new thread's heap is faulted in
    afresh), named so, and no more than IDLE_STAGES of them are kept."""
    first = _idents(20, 2)
    assert len(first) == 2
    assert _idents(20, 2) <= first  # the same threads again
    names = {t.name for t in threading.enumerate() if t.ident in first}
    assert names == {threads.IDLE_NAME}
    many = [ordered_map(iter(range(4)), int, 4) for _ in range(threads.IDLE_STAGES)]
    for results in many:  # all running at once: more stage threads than may stay idle
        assert next(results) == 0
    for results in many:
        assert list(results) == [1, 2, 3]

    def idle() -> int:  # (those past the bound end right after their stage)
        return sum(t.name == threads.IDLE_NAME for t in threading.enumerate())

    deadline = time.monotonic() + 5
    while idle() > threads.IDLE_STAGES and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(threads._idle) <= threads.IDLE_STAGES
    assert idle() <= threads.IDLE_STAGES


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_stage_threads_of_its_own():
    """The parent's idle stage threads do not exist in a child: a stage handed to one
    would never run. The child forgets them at fork and starts its own."""
    _idents(8, 2)  # idle threads in the parent
    assert threads._idle

    def runs() -> bool:
        done = list(threads.run_ahead(iter(range(5)), 2))
        return done == list(range(5)) and len(_idents(8, 2)) == 2

    assert _in_forked_child(runs) == 0
