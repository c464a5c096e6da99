"""Conversions between wire dicts and kubernetes.client models."""

from __future__ import annotations

import datetime

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from client_cache.codec.objects import to_model, to_wire

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "x", "namespace": "d", "labels": {"app": "web"},
                    "creationTimestamp": "2026-11-23T12:00:00Z"},
       "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i",
                                                  "imagePullPolicy": "Always"}]},
       "status": {"phase": "Running"}}


def test_a_wire_dict_round_trips_through_a_model() -> None:
    model = to_model(POD, "V1Pod")
    assert isinstance(model, V1Pod)
    assert model.spec.node_name == "n" and model.spec.containers[0].image_pull_policy == \
        "Always"
    assert model.metadata.creation_timestamp == datetime.datetime(
        2026, 11, 23, 12, tzinfo=datetime.timezone.utc)
    assert to_wire(model) == POD
    assert to_model(POD, V1Pod) == model


def test_to_wire_uses_the_servers_names_and_leaves_out_unset_fields() -> None:
    model = V1Pod(metadata=V1ObjectMeta(name="m"),
                  spec=V1PodSpec(node_name="n", containers=[V1Container(name="c")]))
    assert to_wire(model) == {"metadata": {"name": "m"},
                              "spec": {"nodeName": "n", "containers": [{"name": "c"}]}}
    wire = to_wire(POD)
    assert wire == POD and wire is not POD and wire["metadata"] is not POD["metadata"]


def test_to_model_does_not_touch_its_input_and_refuses_unknown_models() -> None:
    before = repr(POD)
    to_model(POD, "V1Pod")
    assert repr(POD) == before
    with pytest.raises(TypeError, match="V1Podz"):
        to_model(POD, "V1Podz")
