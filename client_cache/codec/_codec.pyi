"""Types of client_cache.codec._codec, the codec's native part (C in codec/csrc/).

Every function here has a Python twin in the codec's modules (client_cache.codec._sharing,
.list_body, .protobuf, .watch_decoders), which is its specification; tests/test_stubs.py
checks that this stub names exactly what the built module has."""

from collections.abc import Callable, Mapping
from typing import Any, Final

_Buffer = bytes | bytearray | memoryview

_Capsule = object
"""A compiled schema or plan table, opaque to Python."""

SHARE: Final[int]
UNTRACK: Final[int]
COMPACT: Final[int]
SOURCE_HASH: Final[str]
DECLINED: Final[object]
LOOK_UP_EVENTS: Final[int]
LOOK_UP_WHOLE: Final[int]
LOOK_UP_ADDED: Final[int]
AFTER_OPEN: Final[int]
AFTER_COMMA: Final[int]
AFTER_ITEM: Final[int]
CLOSED: Final[int]
MORE: Final[int]
NOT_LIST: Final[int]
PROTOBUF_KINDS: Final[tuple[str, ...]]

def walk(flags: int, obj: Any, /) -> Any: ...
def decode(flags: int, data: _Buffer, skip: dict[str, Any] | None = ...,
           previous: Callable[[str], Any] | None = ..., mode: int = ..., /) -> Any: ...
def decode_lines(flags: int, data: _Buffer, pos: int, skip: dict[str, Any] | None,
                 previous: Callable[[str], Any] | None, mode: int, limit: int,
                 event_class: Callable[[Any, Any], Any], types: Mapping[str, Any], /,
                 ) -> tuple[list[Any], int, int]: ...
def list_items(body: _Buffer, /) -> tuple[int, int, list[int]] | None: ...
def list_head(data: _Buffer, /) -> int: ...
def list_scan(data: _Buffer, pos: int, state: int, /) -> tuple[int, int, list[bytes]]: ...
def protobuf_struct_plans(schema: _Capsule, plans: tuple[tuple[Any, ...], ...], /,
                          ) -> _Capsule: ...
def protobuf_schema(types: tuple[tuple[int, int, int], ...],
                    messages: tuple[tuple[tuple[int, str, int, bool, bool, bool], ...], ...],
                    duration: Callable[[int], str], loads: Callable[[bytes], Any], /,
                    ) -> _Capsule: ...
def protobuf_decode(schema: _Capsule, flags: int, message: int, data: _Buffer, start: int,
                    end: int, /, *type_meta: str) -> dict[str, Any]: ...
def protobuf_object(schema: _Capsule, flags: int, kinds: Mapping[tuple[str, str], int],
                    data: _Buffer, /) -> dict[str, Any]: ...
def protobuf_event(schema: _Capsule, flags: int, kinds: Mapping[tuple[str, str], int],
                   frame: _Buffer, /, *plans: Any) -> tuple[str, Any]: ...
def protobuf_list_scan(schema: _Capsule, flags: int, item: int, items_number: int,
                       data: _Buffer, pos: int, end: int, /, *plans: Any,
                       ) -> tuple[int, list[Any], list[bytes]]: ...
def stats() -> dict[str, int]: ...
def clear() -> None: ...
