"""The msgspec structs a trace's events and their `args` decode into, and the decoding of a
chunk of events (an invalid event or args value is counted, never dropped silently)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, TypeVar

import msgspec

from collectors.parse.rank_trace import RankTrace

# The default of raw fields, one shared value: a default_factory made decoding cpu_op args
# 25 % slower (a new object per absent field).
_ABSENT = msgspec.Raw()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: msgspec.Raw = _ABSENT
    dur: float | None = None
    args: msgspec.Raw = _ABSENT


def _f(key: str) -> Any:
    return msgspec.field(name=key, default=None)


def _raw(key: str) -> Any:
    """A field kept as raw JSON text (msgspec.Raw allows no None; empty means absent)."""
    return msgspec.field(name=key, default=_ABSENT)


class GpuArgs(msgspec.Struct, gc=False):
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    device: int | None = None
    stream: int | str | None = None
    correlation: int | None = None
    registers: int | None = _f("registers per thread")
    shared_memory: int | None = _f("shared memory")
    blocks_per_sm: float | None = _f("blocks per SM")
    warps_per_sm: float | None = _f("warps per SM")
    grid: list[int] | None = None
    block: list[int] | None = None
    occupancy: float | None = _f("est. achieved occupancy %")
    bytes: int | None = None
    graph_id: int | None = _f("graph id")
    graph_node_id: int | None = _f("graph node id")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: int | None = _f("In msg nelems")
    out_nelems: int | None = _f("Out msg nelems")
    group_size: int | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class RuntimeArgs(msgspec.Struct, gc=False):
    correlation: int | None = None
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    cbid: int | None = None


class OpArgs(msgspec.Struct, gc=False):
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    record_function_id: int | None = _f("Record function id")
    sequence_number: int | None = _f("Sequence number")
    fwd_thread_id: int | None = _f("Fwd thread id")
    input_dims: msgspec.Raw = _raw("Input Dims")
    input_types: msgspec.Raw = _raw("Input type")
    input_strides: msgspec.Raw = _raw("Input Strides")
    concrete_inputs: msgspec.Raw = _raw("Concrete Inputs")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: int | None = _f("In msg nelems")
    out_nelems: int | None = _f("Out msg nelems")
    group_size: int | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class MemoryArgs(msgspec.Struct, gc=False):
    device_type: int | None = _f("Device Type")
    device_id: int | None = _f("Device Id")
    addr: int | None = _f("Addr")
    bytes: int | None = _f("Bytes")
    total_allocated: int | None = _f("Total Allocated")
    total_reserved: int | None = _f("Total Reserved")


class PythonArgs(msgspec.Struct, gc=False):
    python_id: int | None = _f("Python id")
    python_parent_id: int | None = _f("Python parent id")


_ArgsT = TypeVar("_ArgsT", bound=msgspec.Struct)

_EVENTS = msgspec.json.Decoder(list[Event])
_EVENT = msgspec.json.Decoder(Event)
RAWS = msgspec.json.Decoder(list[msgspec.Raw])
_ARGS = attrgetter("args")


def decode_chunk(trace: RankTrace, chunk: bytearray) -> list[Event]:
    """A JSON array of events; an invalid event is counted and left out. Raises
    msgspec.DecodeError if the chunk is not a JSON array."""
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
