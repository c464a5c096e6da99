"""Where the examples connect: the embedded API server by default, a real cluster with
``--kubeconfig PATH`` or ``--in-cluster`` (then the examples only read)."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient

from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.signals import SignalRelay


@dataclass
class Cluster:
    api_client: Any
    embedded: EmbeddedApiServer | None  # None on a real cluster: do not write there

    @property
    def read_only(self) -> bool:
        return self.embedded is None


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with the connection options."""
    result = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    result.add_argument("--kubeconfig", help="use this cluster instead (read-only)")
    result.add_argument("--in-cluster", action="store_true",
                        help="use the pod's service account (read-only)")
    return result


@contextmanager
def connect(args: argparse.Namespace, **server_options: Any) -> Iterator[Cluster]:
    """The cluster the arguments name; the embedded server is stopped on exit."""
    if args.in_cluster:
        kube_config.load_incluster_config()
        yield Cluster(ApiClient(), None)
    elif args.kubeconfig:
        yield Cluster(kube_config.new_client_from_config(config_file=args.kubeconfig), None)
    else:
        with EmbeddedApiServer(**server_options) as server:
            yield Cluster(server.api_client(), server)


def stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C or SIGTERM (the examples' stop channel), from the signal
    relay's thread: a handler setting it could deadlock on the event's own lock."""
    stop = threading.Event()
    SignalRelay(lambda _: stop.set(), name="example").start()  # for the process's life
    return stop
