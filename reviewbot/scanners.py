"""The team's own scanners' results (SARIF 2.1.0: Semgrep, gitleaks, Bandit, CodeQL …), read as
untrusted input: bounded in size, depth and count, checked field by field, each text cleaned
and capped. Only results on added lines of the change go on to the model's triage.
"""

from __future__ import annotations

import json
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from reviewbot.diff import ChangeSet
from reviewbot.errors import UsageError
from reviewbot.modeltext import clean, one_line

MAX_BYTES = 20 * 1024 * 1024  # one SARIF file
MAX_RESULTS = 10_000  # in all files together; more is an error, not a silent cut
MAX_TRIAGED = 200  # results on changed lines the model is asked about in one review
MAX_MESSAGE = 500
MAX_NAME = 100
LEVELS = ("error", "warning", "note", "none")


@dataclass(frozen=True)
class ScannerResult:
    tool: str
    rule: str
    path: str  # relative to the repository's root, as the diff names it
    line: int  # new-file line
    level: str  # one of LEVELS
    message: str


def read_files(paths: tuple[str, ...], root: Path | None = None) -> tuple[ScannerResult, ...]:
    """Every result of the `--sarif-in` files, at most MAX_RESULTS in all (a usage error
    beyond: a silent cut would hide what the scanners said)."""
    out: list[ScannerResult] = []
    for path in paths:
        out += read_sarif(Path(path), root)
        if len(out) > MAX_RESULTS:
            raise UsageError(f"--sarif-in: more than {MAX_RESULTS:,} results in all")
    return tuple(out)


def read_sarif(path: Path, root: Path | None = None) -> list[ScannerResult]:
    """Every result of `path` that names a file and a line; a usage error (exit 2) for a file
    that is missing, too large, not JSON or not SARIF 2.1.0. `root`: where the scanner ran,
    to make its absolute `file://` URIs relative."""
    try:
        # a regular file only, read no further than the cap: a link to /dev/zero reports size
        # 0 and never ends, a FIFO blocks for ever
        if not stat.S_ISREG(path.stat().st_mode):
            raise UsageError(f"--sarif-in {path}: not a regular file")
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise UsageError(f"--sarif-in {path}: over the {MAX_BYTES:,}-byte limit")
        data = json.loads(raw)
    except OSError as exc:
        raise UsageError(f"--sarif-in {path}: cannot read it ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise UsageError(f"--sarif-in {path}: not JSON (or nested too deep)") from None
    try:
        return _results(data, root)
    except _NotSarif as exc:
        raise UsageError(f"--sarif-in {path}: not SARIF 2.1.0: {exc}") from None


class _NotSarif(ValueError):
    pass


def _get(obj: object, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise _NotSarif(f"{where}.{key} is missing or not a {kind.__name__}")
    return value


def _results(data: object, root: Path | None) -> list[ScannerResult]:
    if _get(data, "version", str, "the log") != "2.1.0":
        raise _NotSarif("version is not 2.1.0")
    out: list[ScannerResult] = []
    for r, run in enumerate(_get(data, "runs", list, "the log")):
        where = f"runs[{r}]"
        tool = _name(_get(_get(_get(run, "tool", dict, where), "driver", dict, f"{where}.tool"),
                          "name", str, f"{where}.tool.driver"))
        results = run.get("results") if isinstance(run, dict) else None
        if results is None:
            continue
        if not isinstance(results, list):
            raise _NotSarif(f"{where}.results is not a list")
        if len(out) + len(results) > MAX_RESULTS:
            raise _NotSarif(f"more than {MAX_RESULTS:,} results")
        for i, result in enumerate(results):
            found = _result(result, tool, f"{where}.results[{i}]", root)
            if found is not None:
                out.append(found)
    return out


def _result(result: object, tool: str, where: str, root: Path | None) -> ScannerResult | None:
    """One result, or None when it names no file and line (a finding about the project)."""
    if not isinstance(result, dict):
        raise _NotSarif(f"{where} is not an object")
    rule = result.get("ruleId")
    if not isinstance(rule, str) and isinstance(result.get("rule"), dict):
        rule = result["rule"].get("id")  # a reference to the rule instead of its id
    message = _get(_get(result, "message", dict, where), "text", str, f"{where}.message")
    level = result.get("level", "warning")
    if level not in LEVELS:
        raise _NotSarif(f"{where}.level is not one of {', '.join(LEVELS)}")
    locations = result.get("locations") or []
    if not isinstance(locations, list) or not locations or not isinstance(locations[0], dict):
        return None
    physical = locations[0].get("physicalLocation")
    if not isinstance(physical, dict):
        return None
    uri = _get(_get(physical, "artifactLocation", dict, where), "uri", str,
               f"{where}.artifactLocation")
    line = _get(_get(physical, "region", dict, where), "startLine", int, f"{where}.region")
    path = _relative(uri, root)
    if path is None or line < 1:
        return None
    return ScannerResult(tool, _name(rule if isinstance(rule, str) else "") or "unnamed", path,
                         line, level, one_line(clean(message, MAX_MESSAGE)))


def _name(text: str) -> str:
    """A tool's or rule's name, one short line without backticks (it is shown as code)."""
    return one_line(clean(text, MAX_NAME)).replace("`", "'")


def _relative(uri: str, root: Path | None) -> str | None:
    """The repository-relative path a URI names; None for one outside the repository (another
    host, `..`, an absolute path elsewhere)."""
    split = urlsplit(uri)
    if split.scheme not in ("", "file") or split.netloc not in ("", "localhost"):
        return None
    path = unquote(split.path)
    if path.startswith("/"):
        base = str((root or Path.cwd()).resolve()).rstrip("/") + "/"
        if not path.startswith(base):
            return None
        path = path[len(base):]
    path = posixpath.normpath(path)
    if path.startswith("../") or path in ("..", ".", "") or "\x00" in path:
        return None
    return path


def on_changed_lines(results: list[ScannerResult], changes: ChangeSet) -> list[ScannerResult]:
    """Those on an added line of `changes` (each once: two scanners' same rule on one line
    stay two; the same result twice is one)."""
    added = {(f.path, ln.new) for f in changes.files for h in f.hunks for ln in h.lines
             if ln.kind == "+"}
    return list(dict.fromkeys(r for r in results if (r.path, r.line) in added))

