"""The msgspec structs a trace's events and their `args` decode into, and the decoding of a
chunk of events (an invalid event or args value is counted, never dropped silently).

Integers are bounded by the column they land in (I32, I64): msgspec reads any size of
integer, and one beyond the column's range would wrap or stop the ingest, so it fails the
event's (or its args') validation instead and is counted like any invalid value.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated, Any, TypeVar

import msgspec

from collectors.parse.rank_trace import RankTrace
from collectors.parse.utf8 import is_utf8, replaced

I32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

# The default of raw fields, one shared value: a default_factory made decoding cpu_op args
# 25 % slower (a new object per absent field).
_ABSENT = msgspec.Raw()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: I64 | str | None = None
    tid: I64 | str | None = None
    ts: msgspec.Raw = _ABSENT
    dur: float | None = None
    args: msgspec.Raw = _ABSENT


def _f(key: str) -> Any:
    return msgspec.field(name=key, default=None)


def _raw(key: str) -> Any:
    """A field kept as raw JSON text (msgspec.Raw allows no None; empty means absent)."""
    return msgspec.field(name=key, default=_ABSENT)


class GpuArgs(msgspec.Struct, gc=False):
    external_id: I64 | None = _f("External id")
    external_id_legacy: I64 | None = _f("external id")
    device: I32 | None = None
    stream: I64 | str | None = None
    correlation: I64 | None = None
    registers: I32 | None = _f("registers per thread")
    shared_memory: I64 | None = _f("shared memory")
    blocks_per_sm: float | None = _f("blocks per SM")
    warps_per_sm: float | None = _f("warps per SM")
    grid: list[I32] | None = None
    block: list[I32] | None = None
    occupancy: float | None = _f("est. achieved occupancy %")
    bytes: I64 | None = None
    graph_id: I64 | None = _f("graph id")
    graph_node_id: I64 | None = _f("graph node id")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: I64 | None = _f("In msg nelems")
    out_nelems: I64 | None = _f("Out msg nelems")
    group_size: I32 | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class RuntimeArgs(msgspec.Struct, gc=False):
    correlation: I64 | None = None
    external_id: I64 | None = _f("External id")
    external_id_legacy: I64 | None = _f("external id")
    cbid: I32 | None = None


class OpArgs(msgspec.Struct, gc=False):
    external_id: I64 | None = _f("External id")
    external_id_legacy: I64 | None = _f("external id")
    record_function_id: I64 | None = _f("Record function id")
    sequence_number: I64 | None = _f("Sequence number")
    fwd_thread_id: I64 | None = _f("Fwd thread id")
    input_dims: msgspec.Raw = _raw("Input Dims")
    input_types: msgspec.Raw = _raw("Input type")
    input_strides: msgspec.Raw = _raw("Input Strides")
    concrete_inputs: msgspec.Raw = _raw("Concrete Inputs")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: I64 | None = _f("In msg nelems")
    out_nelems: I64 | None = _f("Out msg nelems")
    group_size: I32 | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class MemoryArgs(msgspec.Struct, gc=False):
    device_type: I32 | None = _f("Device Type")
    device_id: I32 | None = _f("Device Id")
    addr: I64 | None = _f("Addr")
    bytes: I64 | None = _f("Bytes")
    total_allocated: I64 | None = _f("Total Allocated")
    total_reserved: I64 | None = _f("Total Reserved")


class PythonArgs(msgspec.Struct, gc=False):
    python_id: I64 | None = _f("Python id")
    python_parent_id: I64 | None = _f("Python parent id")


_ArgsT = TypeVar("_ArgsT", bound=msgspec.Struct)

_EVENTS = msgspec.json.Decoder(list[Event])
_EVENT = msgspec.json.Decoder(Event)
RAWS = msgspec.json.Decoder(list[msgspec.Raw])
_ARGS = attrgetter("args")


def decode_chunk(trace: RankTrace, chunk: bytearray) -> list[Event]:
    """A JSON array of events; an invalid event is counted and left out, one whose text is
    not UTF-8 is repaired (U+FFFD) and counted. Raises msgspec.DecodeError if the chunk is
    not a JSON array."""
    if not is_utf8(chunk):
        chunk = _repaired(trace, chunk)
    try:
        events = _EVENTS.decode(chunk)
    except msgspec.ValidationError:
        pass
    else:
        trace.events_total += len(events)
        return events
    raws = RAWS.decode(chunk)
    trace.events_total += len(raws)
    out: list[Event] = []
    for raw in raws:
        try:
            out.append(_EVENT.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            trace.note_malformed(f"event {bytes(raw)[:80]!r}: {short_error(err)}")
    return out


def _repaired(trace: RankTrace, chunk: bytearray) -> bytearray:
    """The chunk with each event that is not UTF-8 repaired, and counted (splitting a chunk
    into raw values does not look inside its strings, so it works on the invalid bytes)."""
    fixed: list[bytes] = []
    for raw in RAWS.decode(chunk):
        text = bytes(raw)
        if not is_utf8(text):
            text = replaced(text)
            trace.note_malformed(f"event {text[:80]!r}: invalid UTF-8 replaced with U+FFFD")
        fixed.append(text)
    return bytearray(b"[" + b",".join(fixed) + b"]")


def decode_args(
    trace: RankTrace, events: list[Event], kind: type[_ArgsT], label: str
) -> list[_ArgsT]:
    decoder = msgspec.json.Decoder(list[kind])  # type: ignore[valid-type]
    raws: list[msgspec.Raw | bytes] = list(map(_ARGS, events))
    if not all(raws):  # an event without args
        raws = [raw or b"{}" for raw in raws]
    try:
        return decoder.decode(b"[" + b",".join(raws) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    one = msgspec.json.Decoder(kind)
    out: list[_ArgsT] = []
    for e, raw in zip(events, raws, strict=True):
        try:
            out.append(one.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            trace.note_malformed(f"{label} {e.name[:60]!r}: args {short_error(err)}")
            out.append(kind())
    return out


def short_error(e: Exception) -> str:
    return str(e).splitlines()[0][:200]
