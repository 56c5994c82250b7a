"""The host time activation checkpointing costs, counted from a trace's raw JSON with the
standard library: a plain stack per thread, where the product uses ASOF joins and window
functions in SQL (data.reads_host.recomputed_forward).

- backward: each node op (`…Backward…`, not the engine's `evaluate_function`) that holds a
  recomputed forward op (numbered, not a backward op, the outermost such) takes its duration
  less its direct children that are not recomputations;
- forward: on the thread of the ProfilerStep ranges, each top-level checkpoint marker
  (`_NoopSaveInputs`, `CheckpointFunction`) takes the time from the end of the top-level op
  before it (an `aten::empty` the checkpoint makes for it aside) to the start of the next
  one, less its direct children.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.raw_trace import CPU_OP_CATS, CPU_STEP_CATS, _ns, load_trace_json, trace_events

_ENGINE = "autograd::engine::evaluate_function:"
_MARKERS = ("_NoopSaveInputs", "CheckpointFunction")


@dataclass
class _Op:
    name: str
    ts: int
    end: int
    numbered: bool
    parent: _Op | None = None

    @property
    def recomputed(self) -> bool:
        """A numbered forward op inside the backward pass."""
        forward = "backward" not in self.name.lower() and not self.name.startswith(_ENGINE)
        return self.numbered and forward and self._inside_engine()

    def _inside_engine(self) -> bool:
        p = self.parent
        while p is not None:
            if p.name.startswith(_ENGINE):
                return True
            p = p.parent
        return False


@dataclass(frozen=True)
class RawCheckpointing:
    backward_ns: int  # the nodes' time holding recomputations, less their own gradient work
    recomputed_ns: int  # the outermost recomputed ops' own time (part of backward_ns)
    forward_ns: int  # the checkpoint entries on the main thread
    markers: int


def _threads(events: list[Any]) -> tuple[dict[Any, list[_Op]], Any]:
    threads: dict[Any, list[_Op]] = defaultdict(list)
    main = None
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        name = str(e.get("name", ""))
        if name.startswith("ProfilerStep#"):
            main = e["tid"] if e.get("cat") in CPU_STEP_CATS else main
            continue
        if e.get("cat") not in (*CPU_OP_CATS, "user_annotation"):
            continue
        ts = _ns(e["ts"])
        numbered = "Sequence number" in (e.get("args") or {})
        threads[e["tid"]].append(_Op(name, ts, ts + _ns(e["dur"]), numbered))
    for ops in threads.values():
        ops.sort(key=lambda o: (o.ts, -o.end))
        stack: list[_Op] = []
        for op in ops:
            while stack and op.ts >= stack[-1].end:
                stack.pop()
            op.parent = stack[-1] if stack else None
            stack.append(op)
    return threads, main


def raw_checkpointing(path: Path) -> RawCheckpointing:
    threads, main = _threads(trace_events(load_trace_json(path)))
    backward = recomputed = forward = markers = 0
    for tid, ops in threads.items():
        children: dict[int, list[_Op]] = defaultdict(list)
        for op in ops:
            if op.parent is not None:
                children[id(op.parent)].append(op)
        tops = [o for o in ops if o.recomputed and not (o.parent and o.parent.recomputed)]
        holders: dict[int, _Op] = {}
        for top in tops:
            recomputed += top.end - top.ts
            p = top.parent
            while p is not None and not ("backward" in p.name.lower() and _ENGINE not in p.name):
                p = p.parent
            if p is not None:
                holders[id(p)] = p
        top_ids = {id(t) for t in tops}
        for h in holders.values():
            own = sum(c.end - c.ts for c in children[id(h)] if id(c) not in top_ids)
            backward += h.end - h.ts - own
        if tid != main:
            continue
        level = [o for o in ops if o.parent is None]
        for i, op in enumerate(level):
            if op.name not in _MARKERS or i + 1 >= len(level):
                continue
            before = [o.end for o in level[:i] if o.name != "aten::empty"]
            if not before:
                continue
            inner = sum(c.end - c.ts for c in children[id(op)])
            forward += level[i + 1].ts - max(before) - inner
            markers += 1
    return RawCheckpointing(backward, recomputed, forward, markers)
