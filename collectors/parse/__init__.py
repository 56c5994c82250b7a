"""Parse one torch.profiler (Kineto) trace file into Arrow tables, fast and exactly.

How: the file is read once (gzip or plain). The events array is found and cut into slices
of about CHUNK_BYTES at the commas between events, without decoding it first; each slice is
decoded on its own into typed structs with the cyclic GC off (it makes decoding super-linear
on big traces), by this process and, for a big file, a forked helper. A bad cut (inside a
string, say) makes a slice invalid JSON, never wrong events; such a document, and one whose
shape the quick look cannot vouch for, is decoded the general way: split into raw values
first. Timestamps keep their decimal text until they
become integer nanoseconds, so no event is shifted by float rounding. Event `args` are
decoded per category in one call per chunk. An event whose fields are invalid is counted
(with an example) and, where it has no usable time, left out; nothing is dropped silently.

Modules: `entry` (parse_trace: the sliced path, else the whole document), `document` (the
file's bytes, its top level, the cuts and slices), `events` (the msgspec structs and their
decoding), `tables` (the per-category builder of Arrow tables), `columns` (ns timestamps,
durations, ints, raw JSON text), `helper` (the forked helper process), `rank_trace`
(RankTrace and a file's rank).
"""

from collectors.parse.columns import metadata_json
from collectors.parse.document import CHUNK_BYTES, Progress, read_bytes
from collectors.parse.entry import parse_trace
from collectors.parse.rank_trace import RankTrace

__all__ = ["CHUNK_BYTES", "Progress", "RankTrace", "metadata_json", "parse_trace", "read_bytes"]
