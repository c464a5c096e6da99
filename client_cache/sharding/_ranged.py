"""Server-assigned sharding, one member's side (``ShardingConfig(mode="server")``): the
shard selector its primary informer sends, the relist when its range moves, and the
check that the API server applies the selector.

A :class:`RangeShare` is what the controller runtime's gate
(:class:`~client_cache.runtime.sharded.ShardGate`) asks in server mode. The keys of the
member are objects' uids (:class:`~client_cache.sharding._ranges.RangeRing`); which of
them it may start is the member's answer, over the same views, claims and drains as
hash mode. What this adds is the cache: the informer's list and watch carry the
selector of the member's range in its *target* view, and when that range moves the
informer fills its cache again (:meth:`~client_cache.reflector.Reflector.reconnect`
with ``relist``). Every key the member may start is in its target range (a key is
started only when the published and the target view both give it), so the cache holds
every object the member may start, once the relist is in; before that, an object not
yet cached is not started (nothing triggers it until its add arrives). The selector is
changed before the relist is asked, so no fill goes out with the old one after it.

Children are not filtered (their informers cache every child, as in label mode): a
child's hash is its own uid, not its owner's.

(KEP-5866 leaves how clients split the space to them; client-go, controller-runtime
and kube-rs have no sharding.)
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlencode

from client_cache.api.lists import list_shard_selector
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json, resource_path
from client_cache.client.transport import Transport
from client_cache.errors import ClientCacheError, StopRequestedError
from client_cache.sharding._membership import ShardMember
from client_cache.shared_informer import SharedIndexInformer
from client_cache.util._logs import log_visibly

__all__ = ["FILTER_CHECK_TIMEOUT", "RangeShare"]

_log = logging.getLogger(__name__)

FILTER_CHECK_TIMEOUT = 5.0
"""How long the one LIST that checks the server applies shard selectors may take."""


class RangeShare:
    """One server-mode member's selector (see the module documentation). ``member`` is
    this replica's :class:`ShardMember` (``mode="server"``); ``gvr`` and ``namespace``
    are the primary resource's; ``name`` names the controller in logs."""

    def __init__(self, member: ShardMember, api_client: Any, gvr: GroupVersionResource,
                 namespace: str, name: str) -> None:
        if not member.config.by_server:
            raise ValueError("RangeShare needs a member of a ring with mode='server'")
        self.member = member
        self._api = api_client
        self._gvr = gvr
        self._namespace = namespace
        self._name = name
        self._lock = threading.Lock()
        self._selector = ""  # what the informer sends; set at its first fill
        self._informer: SharedIndexInformer[Any] | None = None

    def selector(self) -> str:
        """The selector the primary informer sends now ("" before its first fill)."""
        with self._lock:
            return self._selector

    def tweak(self, options: Any) -> None:
        """Set this member's shard selector on a list or watch request's options."""
        with self._lock:
            if not self._selector:
                self._selector = self.member.target_selector()
            options.shard_selector = self._selector

    def watch(self, informer: SharedIndexInformer[Any]) -> None:
        """Relist ``informer`` (the primary one, built with :meth:`tweak`) whenever the
        member's range moves."""
        with self._lock:
            self._informer = informer

    def member_changed(self) -> None:
        """The member's state changed: when its target range moved, send the new
        selector and fill the cache again."""
        selector = self.member.target_selector()
        with self._lock:
            if not self._selector or selector == self._selector or self._informer is None:
                return
            self._selector, informer = selector, self._informer
        _log.info("controller %s: shard %s: range moved; listing %s again with %s",
                  self._name, self.member.identity, self._gvr.label(), selector)
        informer.reconnect("the shard range moved", relist=True)

    def check_filtering(self, stop: threading.Event) -> bool | None:
        """Whether the API server applies shard selectors to the primary resource (one
        LIST of at most one object; its answer carries ``metadata.shardInfo`` where the
        selector was applied). False logs a WARNING: the member then caches every
        object, and still starts only its range's. None when the check itself failed
        (logged at INFO) or was stopped."""
        query = urlencode({"limit": "1", "shardSelector": self.member.target_selector()})
        path = f"{resource_path(self._gvr, self._namespace)}?{query}"
        transport = Transport(self._api)  # so that the stop abandons it at once
        try:
            status, body = request_json(self._api, "GET", path, timeout=FILTER_CHECK_TIMEOUT,
                                        transport=transport, stop=stop)
        except StopRequestedError:
            return None
        except ClientCacheError as err:
            _log.info("controller %s: checking that the server filters shards failed: %s",
                      self._name, err)
            return None
        finally:
            transport.close()
        if status != 200 or not isinstance(body, dict):
            _log.info("controller %s: checking that the server filters shards: HTTP %d",
                      self._name, status)
            return None
        if list_shard_selector(body):
            return True
        log_visibly(_log, logging.WARNING, "controller %s: the API server ignores shard "
                    "selectors on %s (its ShardedListAndWatch feature gate is off?): shard "
                    "%s caches every object and reconciles its range's only", self._name,
                    self._gvr.label(), self.member.identity)
        return False
