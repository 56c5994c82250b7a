"""Names no file system or archive format forbids: bytes that are not UTF-8 in a path, a run
name or a tag; archive members whose paths clash, run past the disk's name limit, hold a NUL,
are encrypted or use a compression zipfile lacks. Each once ended in "unexpected
UnicodeEncodeError / ValueError / RuntimeError / NotImplementedError", or in an error naming
a temporary path. A name that is not text is stored and shown with U+FFFD where its bytes
were; an archive that cannot be read is one line naming it, exit 2, and nothing written.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers.cli import one_line, run_cli, run_module, store_snapshot
from helpers.paths import SAMPLES

from data.store import Store

SMALL = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"  # a real H200 trace, 270 kB
DDP = SAMPLES / "ddp_gpt_bf16_2rank"  # two real H200 ranks
NOT_UTF8 = b"\xff".decode("utf-8", "surrogateescape")  # how Python hands over the byte 0xff


def _stored(data: Path, sql: str) -> list[dict[str, object]]:
    store = Store(data)
    try:
        return store.rows(sql)
    finally:
        store.close()


def test_paths_names_and_tags_that_are_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / f"runs{NOT_UTF8}"
    folder.mkdir()
    (folder / f"rank0{NOT_UTF8}.pt.trace.json.gz").write_bytes(SMALL.read_bytes())
    data = tmp_path / "store"
    got = run_cli(folder, "--data", data, "--name", f"x{NOT_UTF8}y", "--tag", f"k{NOT_UTF8}=v")
    assert got.returncode == 0, got.stderr
    [run] = _stored(data, "SELECT name, source, tags FROM runs")
    assert run["name"] == "x\ufffdy"
    assert json.loads(str(run["source"])) == [str(tmp_path / "runs\ufffd")]
    assert json.loads(str(run["tags"])) == {"k\ufffd": "v"}
    assert _stored(data, "SELECT file_name FROM ranks") == [
        {"file_name": "rank0\ufffd.pt.trace.json.gz"}
    ]
    # the same bytes on a later command line find the run, and the report shows the name
    got = run_module("analysis.report", f"x{NOT_UTF8}y", "--format", "md", "--data", data)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("# GPU performance report: x\ufffdy\n")
    got = run_module("analysis.report", f"none{NOT_UTF8}", "--format", "json", "--data", data)
    assert got.returncode == 2
    assert one_line(got.stderr) == f"error: none\ufffd: no run with this id or name in {data}"


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo("placeholder")
            info.size = len(data)
            info.pax_headers = {"path": name}  # pax carries any name, a NUL included
            tf.addfile(info, io.BytesIO(data))
    return path


def test_archive_members_with_clashing_long_and_odd_paths(tmp_path: Path) -> None:
    """A member's path may be a folder another member's path needs, its name longer than a
    file name can be, or hold a NUL or bytes that are not UTF-8: each is a rank all the same,
    under its own name where the disk takes it, else under a stand-in."""
    ranks = [(DDP / f"rank{r}.pt.trace.json.gz").read_bytes() for r in (0, 1)]
    clash = tmp_path / "clash.zip"
    with zipfile.ZipFile(clash, "w") as zf:
        zf.writestr("run/rank0.json.gz", ranks[0])
        zf.writestr("run/rank0.json.gz/rank1.json.gz", ranks[1])
    trace = SMALL.read_bytes()
    cases = {
        clash: ["rank0.json.gz", "rank1.json.gz"],
        _tar(tmp_path / "long.tar", {"x" * 300 + ".json": gzip.decompress(trace)}): ["member.json"],
        _tar(tmp_path / "nul.tar", {"a\0b.json.gz": trace}): ["member.json.gz"],
        _tar(tmp_path / "bytes.tar", {f"caf{NOT_UTF8}.json.gz": trace}): ["caf\ufffd.json.gz"],
    }
    for archive, names in cases.items():
        data = tmp_path / f"store_{archive.stem}"
        got = run_cli(archive, "--data", data, "--json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["ranks"] == len(names)
        stored = _stored(data, "SELECT file_name FROM ranks ORDER BY rank")
        assert [r["file_name"] for r in stored] == names


def _zip_flagged(path: Path, *, flag_bits: int = 0, method: int | None = None) -> Path:
    """A one-member zip of a real trace, its headers changed as another tool would write them."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("rank0.json.gz", SMALL.read_bytes())
    raw = bytearray(buf.getvalue())
    for sig, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central header
        at = raw.find(sig) + flags_at
        raw[at] |= flag_bits
        if method is not None:
            raw[at + 2 : at + 4] = method.to_bytes(2, "little")
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize(
    ("flag_bits", "method", "reason"),
    [
        (1, None, "encrypted (no password is asked for)"),
        (0, 99, "That compression method is not supported"),
    ],
    ids=["encrypted", "aes_method"],
)
def test_a_zip_member_that_cannot_be_read(
    tmp_path: Path, flag_bits: int, method: int | None, reason: str
) -> None:
    data = tmp_path / "store"
    run_cli(SMALL, "--data", data)
    before = store_snapshot(data)
    archive = _zip_flagged(tmp_path / "odd.zip", flag_bits=flag_bits, method=method)
    got = run_cli(archive, "--data", data)
    assert got.returncode == 2, got.stderr
    assert one_line(got.stderr) == f"error: {archive}:rank0.json.gz: {reason}"
    assert store_snapshot(data) == before


def test_recording_and_ceilings_files_named_with_bytes_not_utf8(tmp_path: Path) -> None:
    recording = tmp_path / f"rec{NOT_UTF8}.csv"
    recording.write_bytes((SAMPLES / "nvml_phases_h200.csv").read_bytes())
    data = tmp_path / "store"
    got = run_module(
        "collectors.nvml", "--replay", recording, "--keep-time", "--data", data,
        "--tag", f"job={NOT_UTF8}",
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    [inventory] = _stored(data, "SELECT DISTINCT name, tags FROM gpu_inventory")
    assert inventory == {"name": "replay of rec\ufffd.csv", "tags": '{"job": "\\ufffd"}'}
    ceilings = tmp_path / f"ceilings{NOT_UTF8}.json"
    ceilings.write_bytes((SAMPLES / "ceilings_h200.json").read_bytes())
    got = run_module("collectors.calibrate", "--import", ceilings, "--data", data, "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["source"] == "import:ceilings\ufffd.json"


def test_json_sidecars_that_escape_a_lone_surrogate(tmp_path: Path) -> None:
    """ "\\udcff" is valid JSON and no text: an inventory or ceilings file holding it is
    refused with one line, as a trace holding it is (msgspec)."""
    recording = tmp_path / "rec.csv"
    recording.write_bytes((SAMPLES / "nvml_phases_h200.csv").read_bytes())
    side = tmp_path / "rec.inventory.json"
    side.write_text('[{"gpu": 0, "name": "H\\udcff"}]')
    got = run_module("collectors.nvml", "--replay", recording, "--keep-time", "--data",
                     tmp_path / "s")  # fmt: skip
    assert got.returncode == 2
    assert one_line(got.stderr).startswith(f"error: {side}: gpu 0: 'utf-8' codec can't encode")
    doc = json.loads((SAMPLES / "ceilings_h200.json").read_text())
    doc["device"]["name"] = "H\udcff"
    ceilings = tmp_path / "ceilings.json"
    ceilings.write_text(json.dumps(doc))
    got = run_module("collectors.calibrate", "--import", ceilings, "--data", tmp_path / "c")
    assert got.returncode == 2
    assert one_line(got.stderr).startswith(f"error: {ceilings}: cannot read a ceilings JSON")
    assert not (tmp_path / "c").exists()  # refused before any store was made
