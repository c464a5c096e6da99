"""fake_custom_store.go."""

from __future__ import annotations

from typing import Any

from client_cache import FakeCustomStore, Store


def test_fake_custom_store_delegates_and_defaults() -> None:
    calls: list[tuple[str, Any]] = []
    store = FakeCustomStore(
        add_func=lambda o: calls.append(("add", o)),
        list_func=lambda: ["x"],
        get_by_key_func=lambda k: (k.upper(), True),
        replace_func=lambda items, rv: calls.append(("replace", (list(items), rv))),
    )
    assert isinstance(store, Store)
    store.add(1)
    store.replace([2, 3], "7")
    assert calls == [("add", 1), ("replace", ([2, 3], "7"))]
    assert store.list() == ["x"]
    assert store.get_by_key("k") == ("K", True)
    # unset functions: no-ops and zero values
    store.update(1)
    store.delete(1)
    store.resync()
    assert store.list_keys() == [] and store.get(1) == (None, False)
