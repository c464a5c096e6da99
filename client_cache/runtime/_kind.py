"""The kind and scope of a controller's primary resource, and waiting until the server
serves it (kube-rs's controller learns both from its ``Resource`` type and retries a watch
whose resource is missing; controller-runtime asks its RESTMapper).

A built-in resource's kind and scope come from the generated tables when the controller
is built; any other's from discovery when it runs (building never asks the server),
waiting there, with backoff, for a resource not served yet (its CRD installed later).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from client_cache.api.schema import GroupVersionResource
from client_cache.client.discovery import DISCOVERY_TIMEOUT, discover
from client_cache.errors import StopRequestedError, describe_error
from client_cache.informers.accessors import builtin_group, builtin_kind
from client_cache.informers.factory import UnknownResourceError
from client_cache.util._logs import log_visibly

__all__ = ["PrimaryKind"]

_log = logging.getLogger("client_cache.runtime.controller")


class PrimaryKind:
    """What a controller reconciles: ``gvr``, its ``api_version``, ``kind`` and
    ``namespaced``. ``kind`` and ``namespaced`` given win over what the server says;
    ``pending`` while neither they nor the built-in tables settled both."""

    def __init__(self, gvr: GroupVersionResource, kind: str = "",
                 namespaced: bool | None = None) -> None:
        self.gvr = gvr
        self.api_version = gvr.group_version()
        self._given = (kind, namespaced)
        self.kind = kind
        self.namespaced = True if namespaced is None else namespaced
        self.pending = not kind or namespaced is None
        if self.pending:
            known = builtin_kind(gvr.group, gvr.version, gvr.resource)
            if known is not None:
                self._settle(known)

    def _settle(self, found: tuple[str, bool]) -> None:
        kind, namespaced = self._given
        self.kind = kind or found[0]
        self.namespaced = found[1] if namespaced is None else namespaced
        self.pending = False

    def resolve(self, api_client: Any, stop: threading.Event) -> bool:
        """Read the kind and scope by discovery, bounded by
        :data:`~client_cache.client.discovery.DISCOVERY_TIMEOUT` and abandoned at once when
        ``stop`` is set; False when the server does not serve the resource (yet). A plural
        that a served built-in group version does not have (``configmap`` for
        ``configmaps``) raises :class:`~client_cache.informers.factory.UnknownResourceError`
        naming the ones it does serve: no CustomResourceDefinition can add it, so waiting
        would be forever."""
        gvr = self.gvr
        resources = discover(api_client, gvr.group, gvr.version,
                             timeout=DISCOVERY_TIMEOUT, stop=stop)
        for r in resources:
            if r.get("name") == gvr.resource:
                self._settle((str(r.get("kind", "")), bool(r.get("namespaced", True))))
                return True
        if resources and builtin_group(gvr.group):
            raise UnknownResourceError(gvr, [str(r.get("name")) for r in resources
                                             if "/" not in str(r.get("name", "/"))])
        return False

    def await_served(self, api_client: Any, stop: threading.Event, name: str) -> None:
        """Wait, with backoff (0.2 s doubling to 5 s, woken by ``stop``), until the server
        serves the resource; one WARNING naming controller ``name`` when it starts waiting,
        one INFO when it ends. The informers run meanwhile (and are not ready), so the
        first reconciles start as soon as the resource is served and listed."""
        delay, waited = 0.2, False
        while not stop.is_set():
            try:
                if self.resolve(api_client, stop):
                    if waited:
                        _log.info("controller %s: %s is served now", name, self.gvr.label())
                    return
                reason = "not served"
            except UnknownResourceError:
                raise
            except StopRequestedError:
                return
            except Exception as err:  # unreachable: waited for in the same way
                reason = describe_error(err)
            if not waited:
                log_visibly(_log, logging.WARNING, "controller %s: waiting for the server to "
                            "serve %s (%s; is its CustomResourceDefinition installed?); not "
                            "ready meanwhile", name, self.gvr.label(), reason)
                waited = True
            stop.wait(delay)
            delay = min(delay * 2, 5.0)
