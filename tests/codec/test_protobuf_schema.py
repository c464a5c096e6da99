"""The protobuf schema shipped with the package is the one ``tools/protoschema`` writes
from ``k8s.io/api`` (never edited by hand), and covers what the informers read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from client_cache.codec._protobuf_schema import SCHEMA_FILE, schema
from tests.fixtures import go_program

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_knows_the_built_in_kinds_and_lists() -> None:
    for api_version, kind in (("v1", "Pod"), ("v1", "PodList"), ("apps/v1", "Deployment"),
                              ("coordination.k8s.io/v1", "Lease"), ("v1", "Status"),
                              ("events.k8s.io/v1", "Event"), ("batch/v1", "JobList")):
        assert schema().message(api_version, kind).fields
    assert schema().message("v1", "PodList").items_field() is not None
    assert schema().message("v1", "Pod").items_field() is None


def test_the_shipped_schema_is_what_the_generator_writes() -> None:
    written = subprocess.run([str(go_program("protoschema"))], capture_output=True,
                             check=True, timeout=600).stdout
    shipped = (ROOT / "client_cache" / "codec" / SCHEMA_FILE).read_bytes()
    assert json.loads(written) == json.loads(shipped)
    assert schema().api_version == json.loads(shipped)["k8s.io/api"]
