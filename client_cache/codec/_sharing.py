"""What the list-watch does to each object it decodes before anything holds it: share
repeated strings between cached objects, give dicts of the same keys one key table, and
take the object out of the cyclic garbage collector's sight (port additions; Go's
decoder gives each object its own strings too, but a Go string costs 16 bytes plus its
bytes, a Python one 40 to 80 bytes plus its bytes, and Go's collector does not walk a
cache of long-lived objects over and over).

Most of a cached object's strings repeat from one object to the next: ``"v1"``,
``"Running"``, ``"True"``, ``"IfNotPresent"``, label values, image names, node names,
timestamps written in the same second. A JSON decoder makes a new ``str`` for every one
(it shares dict keys, not values). :func:`share` walks a freshly decoded object and puts
in place of each such string an equal one it has seen before, so the cache holds one copy.
The list-watch does it to every object it decodes (LIST items, watch events; dicts and
struct mode's structs) unless told not to (``ClientListerWatcher(share_strings=False)``,
or ``CLIENT_CACHE_SHARE_STRINGS=0`` in the environment for every list-watch); a LIST
body is decoded and shared one item at a time, as it arrives (:class:`ListSplitter`;
:func:`split_list` says why one at a time). Measured on
the embedded server's sample pods: the objects alone (tracemalloc) went from 11,476 to
8,527 bytes per pod as dicts and from 6,957 to 4,243 as structs, for 3-4 us per pod on
top of a 9-12 us decode; a whole informer synced by a LIST of 50,000 pods, in RSS per
pod, from 13,795 to 10,357 as dicts and from 8,733 to 5,570 as structs.

What is shared, and what it costs:

* str values (not dict keys) of 2 to 64 characters, inside dicts, lists, tuples and
  ``msgspec`` structs, walked in place (a tuple, which cannot change, is replaced by an
  equal one);
  other objects (``kubernetes`` models among them) are not entered;
* the strings seen are kept in a fixed table of 32,768 entries, two per bucket, the
  most recent first: it never grows (about 2.5 MB when full of typical strings), a string
  that keeps coming back stays, and one seen once is soon replaced. A missed share costs
  nothing but memory;
* the walk is C (``client_cache.codec._codec``, built when the package is installed where a
  C compiler is). Without it, :data:`AVAILABLE` is False and :func:`share` returns its
  argument untouched: a walk in Python would cost more than the decode it follows;
* objects are changed in place, so only freshly decoded objects nobody else holds yet
  should be given; equal strings are interchangeable, so the values read are the same.
  The walk holds the GIL and runs no Python code (on a free-threaded build, importing the
  C part turns the GIL back on, as CPython does for every extension that does not declare
  otherwise).

Out of the collector's sight (:func:`untrack`): a cache is long-lived, and CPython's
cyclic collector examines every container it tracks, young ones after each couple of
thousand allocations and all of them in each full pass, although objects decoded from
JSON can hold no cycle. CPython already stops tracking a dict or tuple that holds
nothing trackable, but a decoded object is a tree of dicts and lists holding dicts and
lists. The same walk takes each of them out, innermost first, applying CPython's rule
to containers of containers: a dict, list or tuple is untracked when everything in it is
untracked or atomic (a container holding anything else, such as a model object, stays
tracked, and so does everything above it). The list-watch does it to every object it
decodes unless told not to (``ClientListerWatcher(untrack=False)``, or
``CLIENT_CACHE_UNTRACK=0``), as struct mode's structs are never tracked. Measured from
the replay source, one handler, 10,000 pods, 7 alternated runs each on Python 3.11:
median 19.7k events/s tracked, 21.7k untracked (structs, 2 runs each: 19.1k, 21.4k).
The sync is not changed by it: the collector is paused over a sync anyway. Reference
counting still frees every object the moment its last reference goes; what the
collector no longer does is find cycles through these objects. Cached objects are read
only by contract (Go's too), so nothing makes one; but a cycle made through one (an
object put into a cached object that refers back to it) lives until the reference is
removed again: a dict re-tracks itself when a container is put in it, as CPython's dicts
always do, but the dicts and lists above it stay untracked and hide the cycle.

Dicts of the same keys with one key table (:func:`compact`): a decoded dict carries its
own table of keys, 184 bytes on CPython 3.11-3.13 for up to five keys and 272 for up to
ten, although the dicts of a kind of object have the same keys in the same order (every
container's ``env`` entry is ``name``, ``value``; every condition ``type``, ``status``,
``lastTransitionTime``). CPython keeps the attribute dicts of a class's instances in
dicts that share one key table and hold only their values (PEP 412's key-sharing
dictionaries): 80 bytes plus 8 per key. The walk puts in place of each decoded dict of 1
to 29 str keys such a dict, equal to it and of type ``dict`` (``type(d) is dict``, same
order, same equality, same JSON), made by copying a prototype dict of the same keys and
setting the values. The prototypes are kept in a fixed table of 2,048 entries (four per
bucket, the most recent first: an object's shapes come round again with each object of
its kind, and three of them in a bucket of two would push each other out for the life of
the process); a sequence of keys gets one the second time it is seen, so maps whose keys
are seen once (unique labels) are left as decoded and cost nothing but the look-up.
CPython shares only interned keys, so a shape's keys are interned when it gets its
prototype. Python 3.12 never frees an interned string: there
the walk interns at most 8,192 keys that were not interned already over the process's
life (about 0.5 MB), and after that makes no new prototypes; other versions free an
interned string with its last reference and have no limit.
``CLIENT_CACHE_SHAPE_KEYS_BUDGET`` (read when the extension is imported) sets the limit on
any version (-1: none). A dict with a key that starts with two underscores, a key
that is not a str, or more than 29 keys is left as it is; so is every dict where the
extension is not installed. Measured on the embedded server's sample pods, one thread,
the collector off (Python 3.11): the objects alone (tracemalloc) 8,796 bytes per pod
shared and untracked, 5,427 compacted too (5,579 on 3.10, 5,294 on 3.12, 5,543 on
3.13); the walk costs 7.7 us more per pod (4.0 to 11.7 us, about 36 dicts), most of it
the new dict and the freeing of the decoded one. ``make bench`` (2026-11-25, medians of
3): replay S2 with one handler 25,428 events/s with ``CLIENT_CACHE_COMPACT_DICTS=0`` and
22,424 compacted; the embedded server's 50,000-pod sync 10,388 bytes of RSS per pod with
key tables of their own and 6,630 compacted (peak 655 to 475 MB). The list-watch
compacts what it caches as dicts or structs (their maps) unless told not to
(``ClientListerWatcher(compact_dicts=False)``, or ``CLIENT_CACHE_COMPACT_DICTS=0`` for
every list-watch); objects decoded into
``kubernetes`` models are not compacted, as their dicts do not last. A cached dict may
still be changed by a transform or a test as any dict, and the dicts sharing its table
are not changed with it (CPython gives a dict its own table when a change needs one), but
cached objects are read only by contract.

Equal immutable values, one object (struct mode): with strings shared, the walk also
puts in place of each frozen ``msgspec`` struct (:func:`client_cache.codec.structs.struct_type`
makes frozen classes by default) and each tuple that holds only immutable values (None,
bools, ints, floats, strs, and such structs and tuples) an equal one it has seen before,
innermost first, so cached objects hold one copy of the parts they have alike: the
tolerations, owner references, ports and security context of the pods of one template, a
pending pod's status. A struct or tuple holding a dict (labels, resource limits) or a
mutable struct is never shared, nor is the object at the top of the walk (a cached object
stays its own). Equal means the same type, and each field or item the same object or,
for strs, ints and floats, the same value of the same type (floats by their bits: ``-0.0``
is not ``0.0``). The values seen are kept in a fixed table of 8,192 entries, two per
bucket, the most recent first, as the strings; a part that holds a string seen for the
first time is not looked up (nothing held can equal it), so what is unique to one object
never enters the table. Shared parts are frozen, so they cannot be changed through one
object; a struct class made with ``frozen=False`` is walked as before and never shared.
A shared part is the one first seen, in or out of the collector's sight as the walk that
first saw it left it, so a list-watch made with ``untrack=False`` may be given parts
another one untracked: they can hold no cycle, and the collector would untrack such a
tuple itself in its first pass over it.
Measured on the embedded server's sample pods (Python 3.11, one thread): the objects
alone (tracemalloc) 4,183 to 3,064 bytes per pod; a 50,000-pod informer synced by a LIST,
RSS per pod, 5,029 to 3,821; on the real apiserver's pods, of 3,589 bytes per pod
(``sys.getsizeof``, strings shared) what still repeats from pod to pod went from 996 to
216 (the resource limits, which are dicts). The decode and walk of one real apiserver
pod cost the same within the noise (20 alternated rounds: median 18.1 us per pod with
frozen classes, 18.1 us with mutable ones); a 50,000-pod struct LIST from the embedded
server took about 3 us more per pod (8 rounds alternated with the commit before: median
4.61 s against 4.45 s, the same fastest run).

In one pass (:func:`decoder`): where the list-watch decodes with the default JSON
decoder, the C part decodes each watch event and LIST item itself and does the walk as it
goes (``client_cache/codec/csrc/decode.c``): a string the table holds is taken from it without a
new one being made, a dict whose keys have a prototype is made from it directly, and each
container is untracked as soon as it is whole. The objects are the same as the JSON
decoder and the walk give (checked by the tests on generated documents: values, types,
tracking, key tables); what the C decoder is unsure of goes that way instead.
``make bench-micro`` shows both on one pod event.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from client_cache.codec import _extension as extension
from client_cache.codec import _wire as wire
from client_cache.codec.errors import DecodeError
from client_cache.codec.skip_paths import drop_members

__all__ = ["AVAILABLE", "COMPACT_DICTS_ENV", "REUSE_UNCHANGED_ENV", "SHARE_STRINGS_ENV",
           "UNTRACK_ENV", "ChunkDecoder", "ListSplitter", "clear_table", "compact",
           "compacted_by_default", "decoder", "line_decoder", "reused_by_default", "share",
           "shared_by_default", "split_list", "table_stats", "untrack",
           "untracked_by_default", "walker"]

T = TypeVar("T")

#: The environment variable that turns sharing off for every list-watch when it is "0".
SHARE_STRINGS_ENV = "CLIENT_CACHE_SHARE_STRINGS"

#: The environment variable that, when "0", leaves what every list-watch decodes in the
#: collector's sight.
UNTRACK_ENV = "CLIENT_CACHE_UNTRACK"

#: The environment variable that, when "0", leaves every list-watch's decoded dicts with
#: key tables of their own.
COMPACT_DICTS_ENV = "CLIENT_CACHE_COMPACT_DICTS"

#: The environment variable that, when "0", has no informer's watch events take the
#: unchanged parts of the objects they replace (see :func:`decoder`'s ``previous``).
REUSE_UNCHANGED_ENV = "CLIENT_CACHE_REUSE_UNCHANGED"

#: Whether the C walker is installed (else :func:`share` does nothing).
AVAILABLE = extension.AVAILABLE


def _enabled(variable: str) -> bool:
    return AVAILABLE and os.environ.get(variable, "1").strip() != "0"


def shared_by_default() -> bool:
    """Whether list-watches share strings by default: the C walker is installed and
    ``CLIENT_CACHE_SHARE_STRINGS`` is not ``0``."""
    return _enabled(SHARE_STRINGS_ENV)


def untracked_by_default() -> bool:
    """Whether list-watches take what they decode out of the collector's sight by
    default: the C walker is installed and ``CLIENT_CACHE_UNTRACK`` is not ``0``."""
    return _enabled(UNTRACK_ENV)


def compacted_by_default() -> bool:
    """Whether list-watches give the dicts they cache shared key tables by default: the
    C walker is installed and ``CLIENT_CACHE_COMPACT_DICTS`` is not ``0``."""
    return _enabled(COMPACT_DICTS_ENV)


def reused_by_default() -> bool:
    """Whether shared informers have their watch events take the unchanged parts of the
    objects they replace: the C part is installed and ``CLIENT_CACHE_REUSE_UNCHANGED`` is
    not ``0``."""
    return _enabled(REUSE_UNCHANGED_ENV)


def walk_flags(strings: bool, untrack: bool, compact: bool) -> int:
    """The C walk's flags for what is asked (0 where the C part is not installed)."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return 0
    return ((extension.codec.SHARE if strings else 0) | (extension.codec.UNTRACK if untrack else 0)
            | (extension.codec.COMPACT if compact else 0))


def walker(strings: bool, untrack: bool, compact: bool = False) -> Callable[[T], T] | None:
    """One function doing what is asked in a single walk: share strings (``strings``),
    take containers out of the collector's sight (``untrack``), both in place, and put
    dicts sharing their key tables in place of decoded ones (``compact``). It returns
    what takes its argument's place: the argument itself, or an equal dict when the
    argument is a dict compacted. None when nothing is asked or the C walker is not
    installed."""
    if not extension.AVAILABLE or not (strings or untrack or compact):
        return None
    flags = walk_flags(strings, untrack, compact)
    # the C function with its flags bound: no Python frame per walked object
    return cast(Callable[[T], T], functools.partial(extension.codec.walk, flags))


def _asked(walk: Callable[[Any], Any] | None, skip: dict[str, Any] | None,
           previous: Callable[[str], Any] | None) -> bool:
    """Whether the C decoder is there and has something to do while decoding: a walk,
    members to leave out or a previous object to read beside."""
    return extension.AVAILABLE and (walk is not None or skip is not None
                                     or previous is not None)


def decoder(loads: Callable[[bytes], Any], strings: bool, untrack: bool,
            compact: bool = False, skip: dict[str, Any] | None = None,
            previous: Callable[[str], Any] | None = None, whole: bool = False,
            added: bool = False) -> Callable[[bytes], Any] | None:
    """A JSON decoder giving what ``walker(strings, untrack, compact)`` gives for what
    ``loads`` decodes, in one pass where it can: the C decoder (``decode.c``) builds
    each object already walked, so a string the table holds is never made twice and a
    dict of a known shape is made straight from its prototype (one handler from the
    replay source: see the CHANGELOG for what it measured). It takes the JSON Kubernetes
    sends and declines what it would have to round or is not sure of (malformed JSON, an
    integer of more than 18 digits, a float not finite or written in more than 63
    characters, a lone surrogate escape, invalid UTF-8, a repeated key, nesting deeper
    than the walk goes, a ``str``); those, and documents of
    :data:`client_cache.codec._wire.GC_PAUSE_THRESHOLD` bytes or more (which ``loads`` decodes
    with the collector paused), go through ``loads`` and the walk, which give the same
    result or raise ``loads``'s error. ``skip`` (a node of a
    :class:`~client_cache.codec.skip_paths.SkipTree`) leaves its members out: passed over by
    the C decoder, dropped after ``loads``. None when nothing is asked or the C part is
    not installed.

    ``previous`` (for watch events, ``{"type": ..., "object": ...}``) takes a cache key
    (``namespace/name``, or ``name`` without a namespace, read from the event object's
    metadata before it is built) and gives the object cached under it, or None. The C
    decoder then reads the event's object beside that one: each string, number, array
    and object equal to the one in the same place (same type, same keys in the same
    order) is taken as it is rather than built again, so the parts an update leaves
    unchanged are shared between the old object and the new one, and are neither built
    nor freed (a port addition; objects are read only by contract). Every part is
    compared, so any object ``previous`` gives is safe: a stale or unrelated one costs
    the compares, and the result is always what the JSON says; what ``loads`` decodes
    (a declined document) shares nothing. With ``whole``, each document is itself the
    object looked up (a LIST item read for a relist: its key from its own metadata), and
    a document equal to the whole object ``previous`` gives decodes to that object. With
    ``added``, the objects of ``ADDED`` events are looked up too (a watch-list's relist,
    whose initial events are ``ADDED``)."""
    if whole and added:
        raise ValueError("whole documents are no events: whole and added both asked")
    walk = walker(strings, untrack, compact)
    if not _asked(walk, skip, previous):
        return None
    flags = walk_flags(strings, untrack, compact)
    c = extension.codec
    decode, declined, limit = c.decode, c.DECLINED, wire.GC_PAUSE_THRESHOLD
    mode = c.LOOK_UP_WHOLE if whole else c.LOOK_UP_ADDED if added else c.LOOK_UP_EVENTS

    if skip is None and previous is None:
        def decoded(data: bytes) -> Any:
            if len(data) < limit:
                result = decode(flags, data)
                if result is not declined:
                    return result
            return walk(loads(data)) if walk else loads(data)
        return decoded

    def decoded_with(data: bytes) -> Any:
        if len(data) < limit:
            result = decode(flags, data, skip, previous, mode)
            if result is not declined:
                return result
        obj = loads(data) if skip is None else drop_members(loads(data), skip)
        return walk(obj) if walk else obj
    return decoded_with


ChunkDecoder = Callable[[bytes, int], tuple[list[Any], int, int]]
"""What :func:`line_decoder` gives: ``lines(data, pos)`` is ``(events, pos, stuck)``."""


def line_decoder(strings: bool, untrack: bool, compact: bool = False,
                 skip: dict[str, Any] | None = None,
                 previous: Callable[[str], Any] | None = None, added: bool = False, *,
                 event_class: Callable[[Any, Any], Any], types: dict[str, Any],
                 ) -> ChunkDecoder | None:
    """The decoder of a whole buffer of JSON watch lines in one call (a port addition:
    the reader thread of a JSON watch made a few Python calls per event to cut and
    decode its lines). ``lines(data, pos)`` reads the whole lines of ``data``
    (bytes-like; a str is refused) from offset ``pos`` on, each decoded as
    ``decoder(wire.loads, strings, untrack, compact, skip=skip, previous=previous,
    added=added)`` decodes it, and makes each
    ``{"type": t, "object": o}`` the event ``event_class(types[t], o)``; blank lines are
    passed over. It returns ``(events, pos, stuck)``: ``stuck`` is -1 when it read every
    whole line (``pos`` is then where the unfinished rest begins), else the offset of the
    newline ending the line at ``pos``, which it leaves to the caller: a line of
    :data:`client_cache.codec._wire.GC_PAUSE_THRESHOLD` bytes or more, one the C decoder
    declines or fails on, or one that is not such an event. The caller decodes that line
    its own way (what the C decoder declines, the JSON decoder decodes or rejects) and
    calls again after it. None when :func:`decoder` would be None."""
    if not _asked(walker(strings, untrack, compact), skip, previous):
        return None
    flags = walk_flags(strings, untrack, compact)
    mode = extension.codec.LOOK_UP_ADDED if added else extension.codec.LOOK_UP_EVENTS
    decode_lines, limit = extension.codec.decode_lines, wire.GC_PAUSE_THRESHOLD

    def lines(data: bytes, pos: int) -> tuple[list[Any], int, int]:
        found: tuple[list[Any], int, int] = decode_lines(
            flags, data, pos, skip, previous, mode, limit, event_class, types)
        return found
    return lines


def share(obj: T) -> T:
    """``obj`` with its short string values, and below the top its frozen structs and
    tuples of immutable values, replaced, in place, by equal ones seen before (see the
    module documentation); ``obj`` itself is returned, or an equal new tuple when ``obj``
    is a tuple whose parts were replaced. Untouched when the C walker is not
    installed."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return obj
    result: T = extension.codec.walk(extension.codec.SHARE, obj)
    return result


def untrack(obj: T) -> T:
    """``obj`` with its dicts, lists and tuples taken out of the cyclic collector's
    sight where they hold nothing it tracks (see the module documentation), in place;
    ``obj`` itself is returned. Untouched when the C walker is not installed."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return obj
    result: T = extension.codec.walk(extension.codec.UNTRACK, obj)
    return result


def compact(obj: T) -> T:
    """``obj`` with the dicts inside it replaced by equal dicts that share their key
    tables with the dicts of the same keys (see the module documentation): the dicts
    inside lists, dicts, tuples and ``msgspec`` structs are replaced in place, and what
    takes ``obj``'s own place is returned (an equal dict when ``obj`` is a dict). ``obj``
    itself when the C walker is not installed."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return obj
    result: T = extension.codec.walk(extension.codec.COMPACT, obj)
    return result


def split_list(body: bytes) -> tuple[bytes, list[memoryview]] | None:
    """A LIST body as its envelope (the body with its ``items`` array emptied: kind,
    apiVersion, metadata) and each item's JSON, a view into ``body``; None when the body
    is not an object with one ``items`` array, or the C part is not installed.

    Why: decoding a whole LIST body at once and sharing afterwards frees the decoder's
    copies only when all the items exist, scattered among them, so the process keeps the
    memory (a 50,000-pod LIST measured the same RSS with sharing as without). Decoded and
    shared one item at a time, each item's freed copies are reused by the next. Only the
    structure is followed here (strings with their escapes, nesting); the decoder that
    reads the envelope and the items checks them."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return None
    found = extension.codec.list_items(body)
    if found is None:
        return None
    start, end, spans = found
    view = memoryview(body)
    envelope = b"".join((view[:start], b"[]", view[end:]))
    bounds = iter(spans)
    return envelope, [view[s:e] for s, e in zip(bounds, bounds, strict=False)]  # pairs


class ListSplitter:
    """A LIST body split into its items as it arrives, piece by piece, so that each item
    can be decoded while the rest of the body is still on its way (the list-watch's LIST;
    a port addition). :meth:`feed` takes the next piece of the body and returns the items
    array's elements that it completed, each as its JSON bytes, in order; :meth:`finish`,
    once the body has ended, returns the envelope: the body with its items array emptied
    (``kind``, ``apiVersion``, ``metadata``), for the decoder.

    A body that is not an object with an ``items`` array (a ``Status``, or anything else)
    is not split: :meth:`feed` returns nothing and :meth:`finish` returns the whole body,
    with ``split`` False, to be decoded whole. So is a body whose ``items`` key comes
    after more than :attr:`HEAD_LIMIT` bytes of other fields. Only the structure is
    followed (as :func:`split_list`); the decoder checks each item and the envelope.
    Raises ValueError when the items array is not well formed, and from :meth:`finish`
    when the body ended inside it. Needs the C walker (:data:`AVAILABLE`); RuntimeError
    without it. Not thread-safe: one body, one reader."""

    HEAD_LIMIT = 1 << 20
    """The most bytes looked through for the ``items`` key before giving up splitting."""

    def __init__(self) -> None:
        if not extension.AVAILABLE:
            raise RuntimeError("ListSplitter needs client_cache.codec._codec (not built)")
        self._pending = b""  # not yet consumed: the head so far, then a cut item
        self._head: bytes | None = None  # the body before the items array's '['
        self._state: int = extension.codec.AFTER_OPEN
        self._tail: list[bytes] = []  # after the array's ']'
        self._whole: list[bytes] | None = None  # not split: every piece, in order

    def feed(self, piece: bytes) -> list[bytes]:
        """The items that ``piece`` (the body's next bytes) completed."""
        if self._whole is not None:
            self._whole.append(piece)
            return []
        if self._state == extension.codec.CLOSED:
            self._tail.append(piece)
            return []
        data = self._pending + piece if self._pending else piece
        position = 0
        if self._head is None:
            found: int = extension.codec.list_head(data)
            if found == extension.codec.MORE and len(data) <= self.HEAD_LIMIT:
                self._pending = data
                return []
            if found < 0:  # not a list, or its items key too far in: decoded whole
                self._whole, self._pending = [data], b""
                return []
            self._head, position = data[:found - 1], found
        items: list[bytes]
        position, self._state, items = extension.codec.list_scan(data, position, self._state)
        if self._state == extension.codec.CLOSED:
            self._tail.append(data[position:])
            self._pending = b""
        else:
            self._pending = data[position:]
        return items

    def later_items(self) -> bool:
        """Whether the object goes on, after the items array it was split at, with another
        ``items`` member (once the body has ended). JSON decoders (and Go's) keep the last
        of repeated members, so such a body is decoded whole, never split. What follows
        the array is read as the rest of an object; ValueError when it is not one."""
        rest = b"".join(self._tail).lstrip()
        if self._head is None or not rest.startswith(b","):
            return False
        return "items" in wire.loads(b"{" + rest[1:])

    def finish(self) -> tuple[bytes, bool]:
        """``(envelope, True)`` for a split body; ``(body, False)`` for one decoded whole
        (see the class documentation). Raises ValueError when the body ended inside its
        items array."""
        if self._head is None:
            return b"".join(self._whole if self._whole is not None else [self._pending]), False
        if self._state != extension.codec.CLOSED:
            raise DecodeError("the LIST body ended inside its items array")
        return b"".join((self._head, b"[]", *self._tail)), True


def table_stats() -> dict[str, int]:
    """The tables' counters: ``hits`` (strings replaced), ``misses`` (strings kept and
    remembered), ``held`` (entries in use), ``slots`` and ``max_length`` of the strings';
    ``compacted`` (dicts made sharing a key table), ``shapes`` (sequences of keys with a
    prototype), ``shape_slots``, ``interned_keys`` (keys the walk interned that were not
    interned before; never reset) and ``intern_budget`` (the most it may intern, -1 for no
    limit) of the key tables'; ``values`` (entries in use), ``value_slots``, ``value_hits``
    (structs and tuples replaced) and ``value_misses`` (remembered) of the immutable
    values'. All 0 when the C walker is not installed."""
    if not extension.AVAILABLE:  # pragma: no cover - depends on the installation
        return {"hits": 0, "misses": 0, "held": 0, "slots": 0, "max_length": 0,
                "compacted": 0, "shapes": 0, "shape_slots": 0, "interned_keys": 0,
                "intern_budget": 0, "values": 0, "value_slots": 0, "value_hits": 0,
                "value_misses": 0}
    counters: dict[str, int] = extension.codec.stats()
    return counters


def clear_table() -> None:
    """Forget every string, value and prototype the tables hold and reset their counters
    (objects already walked keep what they were given)."""
    if extension.AVAILABLE:
        extension.codec.clear()

