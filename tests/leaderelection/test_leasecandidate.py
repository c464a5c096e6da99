"""LeaseCandidate on the embedded server: it creates its object, answers a ping by
renewing at once (woken by its informer, not a timer), retries what fails, and stops
within a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from client_cache.leaderelection import LEASE_CANDIDATES, LeaseCandidate
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.timestamps import format_micro_time, parse_micro_time
from tests.fixtures import eventually


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


def stored(server: EmbeddedApiServer) -> dict[str, Any]:
    rtype = server.store.lookup(LEASE_CANDIDATES.group, LEASE_CANDIDATES.version,
                                LEASE_CANDIDATES.resource)
    assert rtype is not None
    return server.store.get(rtype, "ns", "me")


def test_a_candidate_stands_and_answers_a_ping(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    candidate = LeaseCandidate(api, "ns", "me", "target", "1.36.0", "1.35.0")
    stop = threading.Event()
    thread = threading.Thread(target=candidate.run, args=(stop,), name="test-candidate",
                              daemon=True)
    thread.start()
    try:
        eventually(lambda: server.store.names(server.store.lookup(
            "coordination.k8s.io", "v1beta1", "leasecandidates"), "ns") == ["me"], 10)
        spec = stored(server)["spec"]
        assert (spec["leaseName"], spec["binaryVersion"], spec["emulationVersion"],
                spec["strategy"]) == ("target", "1.36.0", "1.35.0", "OldestEmulationVersion")
        # the coordinator's ping: a pingTime after the renewal
        pinged = stored(server)
        ping = datetime.now(timezone.utc)
        pinged["spec"]["pingTime"] = format_micro_time(ping)
        rtype = server.store.lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
        assert rtype is not None
        server.store.update(rtype, "ns", "me", pinged)

        def renewed() -> bool:
            when = parse_micro_time(stored(server)["spec"].get("renewTime"))
            return when is not None and when >= ping
        eventually(renewed, 10, "the ping was not answered")
    finally:
        started = time.monotonic()
        stop.set()
        thread.join(2)
        api.close()
    assert not thread.is_alive() and time.monotonic() - started < 1.0


def test_a_candidate_needs_its_names() -> None:
    with pytest.raises(ValueError, match="needs a namespace, a name and a lease name"):
        LeaseCandidate(None, "ns", "", "target", "1.36.0", "1.36.0")


def test_a_renewal_over_a_stale_cache_reads_the_object_again(
        server: EmbeddedApiServer) -> None:
    """The coordinator's write raced the candidate's cache (the watch held back here):
    the renewal's conflict is answered by reading the object again, not by a failure."""
    api = server.api_client()
    candidate = LeaseCandidate(api, "ns", "me", "target", "1.36.0", "1.36.0")
    stop = threading.Event()
    thread = threading.Thread(target=candidate.run, args=(stop,), name="test-candidate",
                              daemon=True)
    thread.start()
    rtype = server.store.lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
    assert rtype is not None
    try:
        eventually(lambda: server.store.names(rtype, "ns") == ["me"], 10)
        eventually(lambda: candidate.wait_for_cache_sync(stop, 0) and bool(
            candidate._informer.get_indexer().list_keys()), 10)
        server.stall_watches()  # the candidate's cache keeps the version it has
        touched = stored(server)
        touched["metadata"]["labels"] = {"touched": "yes"}
        after = server.store.update(rtype, "ns", "me", touched)
        renewed = candidate.ensure()  # over the cached, now stale, version
        assert renewed["metadata"]["labels"] == {"touched": "yes"}  # the fresh one kept
        assert int(renewed["metadata"]["resourceVersion"]) > int(
            after["metadata"]["resourceVersion"])
    finally:
        server.stall_watches(False)
        stop.set()
        thread.join(2)
        api.close()
    assert not thread.is_alive()
