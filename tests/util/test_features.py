"""client_cache.util.features: client-go's gates from KUBE_FEATURE_<Name>, and what an
informer builds from them (the v0.36 defaults, and the v0.32 informer one switch away)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from client_cache import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    new_store,
)
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.testing.fake_controller_source import FakeControllerSource
from client_cache.the_real_fifo import RealFIFO
from client_cache.util import features
from client_cache.util.features import (
    ATOMIC_FIFO,
    IN_ORDER_INFORMERS,
    UNLOCK_WHILE_PROCESSING_FIFO,
    feature_gates,
)


def informer(**options: Any) -> Any:
    return new_shared_index_informer_with_options(
        FakeControllerSource(), None, SharedIndexInformerOptions(**options))


def test_the_defaults_are_client_go_v0_36s() -> None:
    gates = feature_gates()
    for name in (ATOMIC_FIFO, IN_ORDER_INFORMERS, UNLOCK_WHILE_PROCESSING_FIFO,
                 features.IN_ORDER_INFORMERS_BATCH_PROCESS,
                 features.INFORMER_RESOURCE_VERSION):
        assert gates.enabled(name), name
    assert not gates.enabled(features.CLIENTS_ALLOW_CBOR)
    with pytest.raises(KeyError, match="not a known client-go feature gate"):
        gates.enabled("NoSuchGate")


@pytest.mark.parametrize(("raw", "expected"), [
    ("false", False), ("0", False), ("F", False), ("true", True), ("T", True),
    ("1", True), ("nope", True), ("", True)])
def test_the_variable_is_read_as_strconv_parse_bool(
        raw: str, expected: bool, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("KUBE_FEATURE_AtomicFIFO", raw)
    gates = features.FeatureGates()  # its own: the process's warns once per value
    assert gates.enabled(ATOMIC_FIFO) is expected
    # not a boolean: the default, and one warning saying so (once, however often asked)
    assert gates.enabled(ATOMIC_FIFO) is expected
    warned = [r for r in caplog.records if "is not a boolean" in r.getMessage()]
    assert len(warned) == (1 if raw in ("nope", "") else 0)
    assert feature_gates().enabled(ATOMIC_FIFO) is expected


def test_a_default_informer_is_in_order_atomic_and_unlocked() -> None:
    built = informer()
    assert (built.use_real_fifo, built.atomic_relist) == (True, True)
    queue = built._new_queue()
    assert isinstance(queue, RealFIFO) and queue.atomic_events and queue._unlock
    assert queue._bookmarks


def test_the_v0_32_informer_is_one_switch_away(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    assert (informer(use_real_fifo=False).use_real_fifo,
            informer(use_real_fifo=False).atomic_relist) == (False, False)
    caplog.set_level(logging.WARNING, "client_cache.util.features")
    monkeypatch.setattr(features, "_GATES", features.FeatureGates())  # a fresh warn-once
    monkeypatch.setenv("KUBE_FEATURE_InOrderInformers", "false")
    built = informer()
    assert (built.use_real_fifo, built.atomic_relist) == (False, False)
    assert type(built._new_queue()).__name__ == "DeltaFIFO"
    assert any("locks this gate" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="locked to True"):
        feature_gates().set(IN_ORDER_INFORMERS, False)


def test_each_gate_and_option_chooses_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    gates = feature_gates()
    with gates.set_for_testing(ATOMIC_FIFO, False):
        built = informer()
        assert (built.use_real_fifo, built.atomic_relist) == (True, False)
        queue = built._new_queue()
        assert isinstance(queue, RealFIFO) and not queue.atomic_events
    with gates.set_for_testing(UNLOCK_WHILE_PROCESSING_FIFO, False):
        assert not informer()._new_queue()._unlock
    assert informer(atomic_relist=False).atomic_relist is False
    with pytest.raises(ValueError, match="atomic_relist needs the RealFIFO"):
        informer(use_real_fifo=False, atomic_relist=True)
    assert gates.enabled(ATOMIC_FIFO)  # set_for_testing put it back


def test_the_store_reports_the_resource_version_it_has_seen() -> None:
    """Go ``LastStoreSyncResourceVersion``: the last write, a replace's version, a
    bookmark, a delete with its object; "" with the AtomicFIFO gate off."""
    def pod(name: str, rv: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}
    store = new_store(deletion_handling_meta_namespace_key_func)
    assert store.last_store_sync_resource_version() == ""  # type: ignore[attr-defined]
    store.replace([pod("a", "3")], "10")
    assert store.last_store_sync_resource_version() == "10"  # type: ignore[attr-defined]
    store.add(pod("b", "11"))
    assert store.last_store_sync_resource_version() == "11"  # type: ignore[attr-defined]
    store.bookmark("15")  # type: ignore[attr-defined]
    assert store.last_store_sync_resource_version() == "15"  # type: ignore[attr-defined]
    store.delete(pod("b", "16"))
    assert store.last_store_sync_resource_version() == "16"  # type: ignore[attr-defined]
    store.delete(DeletedFinalStateUnknown("ns/a", pod("a", "3")))  # a tombstone: kept
    assert store.last_store_sync_resource_version() == "16"  # type: ignore[attr-defined]
    with feature_gates().set_for_testing(ATOMIC_FIFO, False):
        assert store.last_store_sync_resource_version() == ""  # type: ignore[attr-defined]
