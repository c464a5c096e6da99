"""Invariant checks for stores, reusable by tests of every layer."""

from __future__ import annotations

from client_cache.index import Indexer


def check_indexer_consistency(indexer: Indexer) -> None:
    """Assert that every index of ``indexer`` agrees with a full rescan of its objects.

    Recomputes each index function over the stored objects and compares the result with
    what the indexer answers through its public API (``list_index_func_values``,
    ``index_keys`` and ``by_index``). Call it while no other thread writes. Raises
    ``AssertionError`` describing the first difference.
    """
    keys = indexer.list_keys()
    objects = {}
    for key in keys:
        obj, exists = indexer.get_by_key(key)
        assert exists, f"list_keys() returned {key!r} but get_by_key() does not find it"
        objects[key] = obj
    assert len(indexer.list()) == len(keys), "list() and list_keys() disagree on the size"
    for name, func in indexer.get_indexers().items():
        expected: dict[str, set[str]] = {}
        for key, obj in objects.items():
            for value in func(obj):
                expected.setdefault(value, set()).add(key)
        actual_values = set(indexer.list_index_func_values(name))
        assert actual_values == set(expected), (
            f"index {name!r}: values {sorted(actual_values)} != rescan {sorted(expected)}"
        )
        for value, want in expected.items():
            got = indexer.index_keys(name, value)
            assert got == sorted(want), f"index {name!r} value {value!r}: {got} != {sorted(want)}"
            by_index = indexer.by_index(name, value)
            assert len(by_index) == len(want), (
                f"index {name!r} value {value!r}: by_index gave {len(by_index)} objects, "
                f"expected {len(want)}"
            )
            for obj in by_index:
                assert any(obj is objects[k] for k in want), (
                    f"index {name!r} value {value!r}: by_index returned an object not stored "
                    f"under any of {sorted(want)}"
                )
