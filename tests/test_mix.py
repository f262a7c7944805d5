"""tn.mix: batches drawn from several datasets in proportion to their weights, as
tf.data.Dataset.sample_from_datasets; exactly reproducible per seed; stop_on_empty, going on
with the others, cycling; and the same through to_torch and to_tf."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecnp as tn

A, B = 1000, 300


def datasets(tmp_path=None):
    """a: ids 0..999 (src 0), b: ids 1000..1299 (src 1), each with a row of tokens."""
    a = {
        "id": np.arange(A),
        "src": np.zeros(A, np.int64),
        "tokens": tn.Ragged.from_lengths(np.arange(2 * A), np.full(A, 2)),
    }
    b = {
        "id": np.arange(A, A + B),
        "src": np.ones(B, np.int64),
        "tokens": tn.Ragged.from_lengths(np.arange(3 * B), np.full(B, 3)),
    }
    return tn.open(a), tn.open(b)


def ids(batches) -> list[int]:
    return [i for b in batches for i in np.asarray(b["id"]).tolist()]


def test_proportions_hold_over_many_batches_within_tolerance():
    a, b = datasets()
    it = tn.mix([a, b], weights=[0.7, 0.3], seed=5, cycle=True).batches(64)
    counts = [np.bincount(next(it)["src"], minlength=2) for _ in range(300)]
    share = sum(c[1] for c in counts) / (300 * 64)
    assert abs(share - 0.3) < 0.015  # 19 200 draws: sd 0.0033
    per_batch = {int(c[1]) for c in counts}
    assert len(per_batch) > 5  # drawn per record, not a fixed split per batch


def test_a_seed_gives_the_same_batches_and_another_seed_others():
    a, b = datasets()
    runs = [ids(tn.mix([a, b], [0.5, 0.5], seed=s).batches(32, shuffle=100)) for s in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_rows_keep_each_dataset_order_and_tokens_follow_their_rows():
    a, b = datasets()
    for batch in tn.mix([a, b], [0.6, 0.4], seed=1).batches(50):
        for i, row in zip(batch["id"].tolist(), batch["tokens"].to_list(), strict=True):
            width = 2 if i < A else 3
            start = width * (i if i < A else i - A)
            assert list(row) == list(range(start, start + width))
    got = ids(tn.mix([a, b], [0.6, 0.4], seed=1).batches(50))
    from_a = [i for i in got if i < A]
    assert from_a == sorted(from_a)


def test_stop_on_empty_stops_at_the_first_draw_from_an_empty_dataset():
    a, b = datasets()
    batches = list(tn.mix([a, b], [0.5, 0.5], seed=2).batches(64))
    got = ids(batches)
    assert len(set(got)) == len(got)
    assert sum(i >= A for i in got) == B  # b ran out first: all of it, and then the stop
    assert sum(i < A for i in got) < A
    assert all(len(x["id"]) == 64 for x in batches[:-1])
    short = list(tn.mix([a, b], [0.5, 0.5], seed=2).batches(64, drop_remainder=True))
    assert ids(short) == got[: 64 * len(short)] and len(short) == len(got) // 64


def test_going_on_with_the_others_gives_every_record_once():
    a, b = datasets()
    got = ids(tn.mix([a, b], [0.2, 0.8], seed=7, stop_on_empty=False).batches(100))
    assert sorted(got) == list(range(A + B))
    assert max(got[: 2 * B]) >= A  # b's records come early, as its weight says


def test_cycling_restarts_a_dataset_reshuffled():
    a, b = datasets()
    it = tn.mix([a, b], [0.5, 0.5], seed=9, cycle=True).batches(100, shuffle=True)
    got = ids(next(it) for _ in range(20))
    from_b = [i for i in got if i >= A]
    assert len(from_b) > 2 * B  # past b's end, more than once
    assert sorted(from_b[:B]) == list(range(A, A + B))  # the first epoch: each once
    assert from_b[:B] != from_b[B : 2 * B]  # the next epoch in another order


def test_to_torch_each_record_once_across_ranks():
    torch = pytest.importorskip("torch")
    a, b = datasets()
    mixed = tn.mix([a, b], [0.5, 0.5], seed=4, stop_on_empty=False)
    seen = []
    for rank in range(2):
        loader = torch.utils.data.DataLoader(
            mixed.to_torch(40, rank=rank, world_size=2), batch_size=None
        )
        for batch in loader:
            assert isinstance(batch["id"], torch.Tensor)
            seen += batch["id"].tolist()
    assert sorted(seen) == list(range(A + B))


def test_to_tf_gives_the_mixed_records(tf):
    a, b = datasets()
    mixed = tn.mix([a.select(["id", "src"]), b.select(["id", "src"])], [0.7, 0.3], seed=4)
    got = [i for batch in mixed.to_tf(64).as_numpy_iterator() for i in batch["id"].tolist()]
    assert got == ids(mixed.batches(64))  # the same draws, batched by tf.data


def test_datasets_of_other_specs_and_bad_weights_are_refused():
    a, b = datasets()
    with pytest.raises(tn.SchemaError, match=r"^dataset 1 of mix has another spec .*'tokens'"):
        tn.mix([a, b.select(["id", "src"])])
    with pytest.raises(ValueError, match=r"^mix got 2 datasets but 3 weights"):
        tn.mix([a, b], [1, 2, 3])
    with pytest.raises(ValueError, match=r"^weights must be finite, >= 0 and not all 0"):
        tn.mix([a, b], [0, 0])
