"""pytest fixtures for testing your own controller (controller-runtime's envtest, kopf's
``KopfRunner``): an embedded API server, the real kube-apiserver + etcd, an API client,
and a controller running on a thread that must stop within 1 s after the test.

Enable it in a ``conftest.py`` with ``pytest_plugins = ["client_cache.testing.pytest_plugin"]``
(or ``pytest -p client_cache.testing.pytest_plugin``); it is not loaded by itself, so
its fixture names never shadow yours. Needs ``pytest`` (the ``[test]`` extra).

- ``kube_server``: a fresh :class:`~client_cache.testing.apiserver.EmbeddedApiServer`
  per test, with its fault injection (``send_watch_error(410)``, ``abort_watches()``,
  ``fail_next(1, 409)``...).
- ``kube_control_plane``: one :class:`~client_cache.testing.envtest.ControlPlane` for the
  session; the test is skipped, saying how to build it, when ``make envtest`` (or
  ``python -m client_cache.testing.envtest build``) has not run.
- ``kube_cluster``: each test that uses it runs twice, on the embedded server and on the
  real one (that run skipped as above); ``kube_api`` is its ``kubernetes`` API client.
- ``run_controller(controller, reconcile, ...)``: starts ``controller.run`` on a named
  daemon thread and returns a :class:`RunningController`; after the test it is stopped
  and the test fails if its thread is still alive 1 s later, or if ``run`` raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.testing.envtest import ControlPlane
from client_cache.testing.envtest_build import cache_dir, find_binaries

__all__ = ["STOP_WITHIN", "RunningController", "kube_api", "kube_cluster",
           "kube_control_plane", "kube_server", "run_controller"]

STOP_WITHIN = 1.0
"""Seconds a controller's thread has to end after its stop, before the test fails."""


class RunningController:
    """A controller's ``run`` on its own thread: :meth:`stop` ends it and returns its
    :class:`~client_cache.runtime.RunSummary`, raising what ``run`` raised."""

    def __init__(self, controller: Any, reconcile: Callable[..., Any],
                 error_policy: Callable[..., Any] | None, data: Any) -> None:
        self.stopping = threading.Event()
        self.summary: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(controller, reconcile, error_policy, data),
            name=f"test-controller-{getattr(controller, 'name', 'controller')}", daemon=True)
        self.thread.start()

    def _run(self, controller: Any, reconcile: Callable[..., Any],
             error_policy: Callable[..., Any] | None, data: Any) -> None:
        try:
            self.summary = controller.run(reconcile, error_policy, data, stop=self.stopping)
        except BaseException as error:  # handed to the test by stop()
            self.error = error

    def stop(self, within: float = STOP_WITHIN) -> Any:
        """Stop the run and wait ``within`` seconds for its thread; raises
        ``AssertionError`` if it is still alive, or what ``run`` raised."""
        self.stopping.set()
        self.thread.join(within)
        if self.thread.is_alive():
            raise AssertionError(f"{self.thread.name} still running {within} s after its stop")
        if self.error is not None:
            raise self.error
        return self.summary


@pytest.fixture
def kube_server() -> Iterator[EmbeddedApiServer]:
    """A fresh embedded API server, stopped after the test."""
    with EmbeddedApiServer() as server:
        yield server


@pytest.fixture(scope="session")
def kube_control_plane() -> Iterator[ControlPlane]:
    """The real kube-apiserver + etcd for the session, or a skip saying how to build it."""
    binaries = find_binaries()
    if binaries is None:
        pytest.skip(f"the real kube-apiserver and etcd are not built in {cache_dir()}: run "
                    "`python -m client_cache.testing.envtest build` (needs Go)")
    with ControlPlane(binaries) as plane:
        yield plane


@pytest.fixture(params=["embedded", "envtest"])
def kube_cluster(request: pytest.FixtureRequest) -> Any:
    """The embedded server, then the real one: a test using it runs on both."""
    if request.param == "embedded":
        return request.getfixturevalue("kube_server")
    return request.getfixturevalue("kube_control_plane")


@pytest.fixture
def kube_api(kube_cluster: Any) -> Any:
    """A ``kubernetes.client.ApiClient`` of ``kube_cluster``."""
    return kube_cluster.api_client()


@pytest.fixture
def run_controller() -> Iterator[Callable[..., RunningController]]:
    """``run_controller(controller, reconcile, error_policy=None, data=None)``: the
    controller runs on a thread until the test ends (or :meth:`RunningController.stop`)."""
    running: list[RunningController] = []

    def start(controller: Any, reconcile: Callable[..., Any],
              error_policy: Callable[..., Any] | None = None,
              data: Any = None) -> RunningController:
        run = RunningController(controller, reconcile, error_policy, data)
        running.append(run)
        return run

    yield start
    for run in running:
        if not run.stopping.is_set() or run.thread.is_alive():
            run.stop()
