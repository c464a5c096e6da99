"""Producer/consumer stress: one writer, two poppers, the consumer keeps the known objects.

The writer makes 100k add/update/delete/replace operations on 1k keys; every object carries
a unique, increasing sequence number. The process function (run under the queue lock, as
the informer's is) applies each delta to an indexer that is also the queue's known objects,
and logs it. Afterwards:

* the indexer equals the writer's last write for every key;
* every sequence number written by add/update/delete/replace was delivered exactly once,
  and per key in increasing order;
* every resync Sync carried exactly the object the consumer held;
* ``close()`` ends both blocked poppers within 1 s.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from client_cache import FIFOClosedError, new_indexer
from client_cache.delta_fifo import DeltaFIFOOptions, DeltaType, new_delta_fifo_with_options
from client_cache.store import DeletedFinalStateUnknown
from client_cache.the_real_fifo import RealFIFOOptions, new_real_fifo_with_options

OPERATIONS = int(os.environ.get("CLIENT_CACHE_STRESS_OPS", "100000"))
KEYS = 1000
END = "~end"


@dataclass(frozen=True)
class Obj:
    key: str
    seq: int


def key_func(obj: Any) -> str:
    return obj.key


def make_queue(kind: str, known: Any) -> Any:
    if kind == "delta":
        return new_delta_fifo_with_options(
            DeltaFIFOOptions(key_function=key_func, known_objects=known,
                             emit_delta_type_replaced=True)
        )
    return new_real_fifo_with_options(RealFIFOOptions(key_function=key_func, known_objects=known))


@pytest.mark.parametrize("kind", ["delta", "real"])
def test_one_writer_two_poppers(kind: str) -> None:
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    indexer = new_indexer(key_func, {})
    queue = make_queue(kind, indexer)
    delivered: list[tuple[str, DeltaType, int]] = []
    problems: list[str] = []
    done = threading.Event()

    def process(deltas: Any, in_initial_list: bool) -> None:
        for delta in deltas:
            obj = delta.object
            if delta.type is DeltaType.DELETED:
                if isinstance(obj, DeletedFinalStateUnknown):
                    delivered.append((obj.key, DeltaType.DELETED, -1))
                    indexer.delete(Obj(obj.key, -1))
                    continue
                indexer.delete(obj)
            elif delta.type is DeltaType.SYNC:
                current, exists = indexer.get_by_key(obj.key)
                if not exists or current is not obj:
                    problems.append(f"stale resync for {obj}: consumer has {current}")
                continue  # resyncs are not counted as writes
            else:
                indexer.update(obj)
            if obj.key == END:
                done.set()
            delivered.append((obj.key, delta.type, obj.seq))

    closed = [0, 0]

    def popper(i: int) -> None:
        try:
            while True:
                queue.pop(process)
        except FIFOClosedError:
            closed[i] = 1

    poppers = [
        threading.Thread(target=popper, args=(i,), name=f"test-stress-pop-{i}", daemon=True)
        for i in range(2)
    ]
    for t in poppers:
        t.start()

    truth: dict[str, Obj] = {}
    written: list[tuple[str, int]] = []
    seq = 0
    keys = [f"k{i:04d}" for i in range(KEYS)]
    for _ in range(OPERATIONS):
        seq += 1
        roll = rnd.random()
        key = rnd.choice(keys)
        if roll < 0.0004:  # a relist of a random subset (about 40 per run)
            listed = [Obj(k, seq + i) for i, k in enumerate(rnd.sample(keys, rnd.randrange(KEYS)))]
            seq += len(listed)
            queue.replace(listed, str(seq))
            truth = {o.key: o for o in listed}
            written.extend((o.key, o.seq) for o in listed)
        elif roll < 0.001:
            queue.resync()
        elif roll < 0.25 and key in truth:
            queue.delete(Obj(key, seq))
            del truth[key]
            written.append((key, seq))
        elif key in truth:
            obj = Obj(key, seq)
            queue.update(obj)
            truth[key] = obj
            written.append((key, seq))
        else:
            obj = Obj(key, seq)
            queue.add(obj)
            truth[key] = obj
            written.append((key, seq))
    queue.add(Obj(END, seq + 1))
    assert done.wait(60), f"consumer did not finish (seed {seed})"

    start = time.monotonic()
    queue.close()
    for t in poppers:
        t.join(1.0)
    assert time.monotonic() - start < 1.0
    assert not any(t.is_alive() for t in poppers) and closed == [1, 1]

    assert not problems, (seed, problems[:5])
    indexer.delete(Obj(END, 0))
    final = {o.key: o.seq for o in indexer.list()}
    assert final == {k: o.seq for k, o in truth.items()}, f"seed {seed}"

    got = [(k, s) for k, _, s in delivered if s >= 0 and k != END]
    assert len(got) == len(set(got)), f"duplicated deltas (seed {seed})"
    assert sorted(got) == sorted(written), f"lost deltas (seed {seed})"
    last: dict[str, int] = {}
    for k, s in got:
        assert s > last.get(k, 0), f"out of order for {k} (seed {seed})"
        last[k] = s
