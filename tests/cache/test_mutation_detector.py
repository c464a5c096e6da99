"""mutation_detector.go (mutation_detector_test.go)."""

from __future__ import annotations

import importlib
import threading

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

import client_cache.mutation_detector as md
from client_cache.mutation_detector import (
    CacheMutationError,
    DefaultCacheMutationDetector,
    new_cache_mutation_detector,
)
from client_cache.store import DeletedFinalStateUnknown
from tests.fixtures import pod


def test_detects_mutation_of_wire_dict_in_run_loop() -> None:
    """TestMutationDetector: a mutation is reported through failure_func."""
    failures: list[str] = []
    reported = threading.Event()

    def failure(message: str) -> None:
        failures.append(message)
        reported.set()

    detector = DefaultCacheMutationDetector("pods", period=0.01, failure_func=failure)
    obj = pod("web", "ns", labels={"app": "web"})
    detector.add_object(obj)
    stop = threading.Event()
    runner = threading.Thread(target=detector.run, args=(stop,), name="test-detector",
                              daemon=True)
    runner.start()
    obj["metadata"]["labels"]["change"] = "true"  # the forbidden in-place mutation
    assert reported.wait(5)
    stop.set()
    runner.join(1)
    assert not runner.is_alive()
    assert failures[0] == "cache pods modified"


def test_detects_mutation_of_model_and_raises_without_failure_func() -> None:
    detector = DefaultCacheMutationDetector("V1Pod")
    model = V1Pod(metadata=V1ObjectMeta(name="m", labels={"a": "b"}))
    detector.add_object(model)
    detector.compare_objects()  # unchanged: fine
    model.metadata.labels["a"] = "c"
    with pytest.raises(CacheMutationError, match="cache V1Pod modified"):
        detector.compare_objects()


def test_ignores_tombstones_and_objects_without_meta() -> None:
    detector = DefaultCacheMutationDetector("x")
    detector.add_object(DeletedFinalStateUnknown("k", pod("a")))
    detector.add_object({"no": "meta"})
    assert detector.added_count() == 0
    detector.add_object(pod("a"))
    assert detector.added_count() == 1


def test_retained_objects_rotate() -> None:
    detector = DefaultCacheMutationDetector("x", period=0.0, retain_duration=0.0)
    obj = pod("a")
    detector.add_object(obj)
    stop = threading.Event()
    stop.set()
    detector.run(stop)  # one pass: moves added -> cached
    detector.run(stop)  # rotates cached -> retained, still compared
    obj["metadata"]["name"] = "changed"
    with pytest.raises(CacheMutationError):
        detector.compare_objects()


def test_env_var_enables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(new_cache_mutation_detector("x", enabled=True),
                      DefaultCacheMutationDetector)
    dummy = new_cache_mutation_detector("x", enabled=False)
    dummy.add_object(pod("a"))
    dummy.run(threading.Event())  # returns at once
    try:
        monkeypatch.setenv(md.ENV_VAR, "true")
        importlib.reload(md)
        assert md.mutation_detection_enabled()
        monkeypatch.setenv(md.ENV_VAR, "nope")
        importlib.reload(md)
        assert not md.mutation_detection_enabled()
    finally:
        monkeypatch.delenv(md.ENV_VAR, raising=False)
        importlib.reload(md)
