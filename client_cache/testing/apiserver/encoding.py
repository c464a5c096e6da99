"""encoding: the embedded server's content negotiation, JSON or protobuf, as the real
server does it for the built-in kinds.

A request's ``Accept`` header lists media types in the client's order; the server answers
in the first one it can: protobuf (``application/vnd.kubernetes.protobuf``) for the kinds
:mod:`client_cache.codec.protobuf` knows, JSON (``application/json``, ``*/*``, no header) for
every kind. A client that accepts only protobuf for a custom resource gets 406. Bodies and
watch events the store holds as JSON are encoded into protobuf on the way out
(:func:`client_cache.codec.protobuf.encode`): the client decodes them into the form the real
server would send, with Go's zero values written and empty fields left out.
"""

from __future__ import annotations

import json
from typing import Any

from client_cache.codec import protobuf
from client_cache.codec._protobuf_schema import schema
from client_cache.errors import ApiStatusError

__all__ = ["GARBLED_FRAME", "answers_protobuf", "body_bytes", "watch_bytes"]

JSON_TYPES = ("application/json", "application/*", "*/*")
GARBLED_FRAME = b"\x00\x00\x00\x03bad"
"""A protobuf watch frame that is no watch event (the protobuf form of a garbled line)."""


def _known(api_version: str, kind: str) -> bool:
    try:
        schema().message(api_version, kind)
    except ValueError:
        return False
    return True


def answers_protobuf(accept: str | None, api_version: str, kind: str) -> bool:
    """Whether a request with this ``Accept`` header, for objects of this kind, is
    answered in protobuf (else JSON). Raises a 406 ApiStatusError when it accepts neither
    what the kind has."""
    if not accept or not accept.strip():
        return False
    for media in accept.split(","):
        name = media.split(";")[0].strip().lower()
        if name == protobuf.CONTENT_TYPE and _known(api_version, kind):
            return True
        if name in JSON_TYPES:
            return False
    raise ApiStatusError(406, "NotAcceptable",
                         f"only the following media types are accepted: application/json "
                         f"(for {kind}), not {accept}")


def body_bytes(obj: Any) -> bytes:
    """``obj`` (a wire dict of a kind the schema knows) as a protobuf body."""
    return protobuf.encode(obj)


def watch_bytes(lines: list[bytes]) -> bytes:
    """Watch events the store holds as JSON lines, as protobuf frames."""
    frames = []
    for line in lines:
        event = json.loads(line)
        frames.append(protobuf.encode_watch_event(event["type"], event["object"]))
    return b"".join(frames)
