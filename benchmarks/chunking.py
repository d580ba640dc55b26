"""Parse + filter + chunk on a release-sized diff, with a local tokenizer.json: the engine issue's
Performance item (targets: < 1 s CPU; chunks within 10% of the minimum for the token total; fixed
prompt overhead < 10% of all prompt tokens).

    .venv/bin/python benchmarks/chunking.py [--source all|auto|pip|synthetic] [--tokenizer tiny|PATH]
                                            [--repeat N] [--write-docs] [--profile]

The diff, made with git in a temp repository (`git diff --binary --find-renames`):
- `pip`: a real release range, pip 23.0.1 -> 23.2.1, when both source trees are installed on
  this machine (the system's dist-packages and this venv); about 1.2 MB, 26k lines, 178 files;
- `synthetic`: deterministic generated Python/JS sources (seeded), 1.3 MB, 28k lines, 186 files,
  a fraction of lines changed across many hunks; available everywhere.
`all` (the default) runs both (`pip` where available); `auto` takes `pip` when it can, else
`synthetic`.

The tokenizer defaults to the project's own (`--tokenizer tiny`: server/reviewbot_server/tinymodel.py, the
byte-level BPE the demo model serves, trained on reviewbot's sources); pass `--tokenizer PATH`
(repeatable) for a real model's tokenizer.json, e.g. Qwen's as rebuilt offline by
benchmarks/qwen_tokenizer.py.
No server is contacted: `Engine.chunks` only needs settings, a counter and the context size.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from reviewbot import diff
from reviewbot.config import Settings
from reviewbot.context import Context, Intent
from reviewbot.engine import filters
from reviewbot.engine.chunking import Chunk, file_header
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import LocalTokenCounter

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "performance.md"
SECTION = "## Parse, filter and chunk"
ENGINE_FILES = tuple(f"reviewbot/{m}.py" for m in (
    "diff", "filters", "tokens", "chunking", "tools", "review", "templates")) + (
    "prompts/system.j2", "prompts/chunk.j2")
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "LC_ALL": "C"}


# -- the diff --------------------------------------------------------------------------------

def git(repo: Path, *args: str) -> bytes:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True).stdout


def commit_tree(repo: Path, files: dict[str, bytes], message: str) -> None:
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for rel, data in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def range_diff(old: dict[str, bytes], new: dict[str, bytes]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="bench-repo-") as tmp:
        repo = Path(tmp)
        git(repo, "init", "-q", "-b", "main")
        commit_tree(repo, old, "old")
        commit_tree(repo, new, "new")
        return git(repo, "-c", "core.quotePath=false", "diff", "--no-color", "--binary",
                   "--find-renames", "HEAD~1", "HEAD")


def read_tree(root: Path, prefix: str) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(root).as_posix()}": p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def pip_trees() -> tuple[str, dict[str, bytes], dict[str, bytes]] | None:
    """Two installed pip source trees of different versions (system and this venv), if present."""
    found: dict[str, Path] = {}
    dirs = {Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    dirs |= {Path("/usr/lib/python3/dist-packages"), *Path("/usr/local/lib").glob("python3*/*-packages")}
    for site in sorted(dirs):
        for info in sorted(site.glob("pip-*.dist-info")):
            version = info.name[len("pip-"):-len(".dist-info")]
            if (site / "pip").is_dir():
                found.setdefault(version, site / "pip")
    if len(found) < 2:
        return None
    key = lambda v: tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", v))
    old, new = sorted(found, key=key)[:2]
    return f"pip {old}..{new}", read_tree(found[old], "src/pip"), read_tree(found[new], "src/pip")


WORDS = ("account", "user", "order", "total", "price", "item", "cache", "retry", "limit",
         "config", "path", "value", "result", "buffer", "index", "count", "name", "token",
         "session", "request", "response", "handler", "queue", "batch", "stream", "record",
         "schema", "field", "parser", "client", "server", "worker", "event", "payload", "header",
         "status", "message")


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(WORDS, rng.randint(1, 3)))


def python_module(rng: random.Random, functions: int) -> list[str]:
    out = ['"""' + " ".join(rng.sample(WORDS, 8)).capitalize() + '."""', "",
           "from __future__ import annotations", "", "import json", "import logging",
           "from dataclasses import dataclass, field", "", "log = logging.getLogger(__name__)", ""]
    cls = "".join(w.capitalize() for w in rng.sample(WORDS, 2))
    out += ["", "@dataclass", f"class {cls}:", f"    {_ident(rng)}: int = 0",
            f"    {_ident(rng)}: str = {rng.choice(WORDS)!r}",
            f"    {_ident(rng)}: list[str] = field(default_factory=list)", ""]
    for _ in range(functions):
        name, arg, other = _ident(rng), _ident(rng), _ident(rng)
        out += ["", f"def {name}({arg}: dict, {other}: int = {rng.randint(0, 100)}) -> list[str]:",
                f'    """Return the {rng.choice(WORDS)} of {arg} for {other}."""',
                "    result: list[str] = []",
                f"    for key, value in sorted({arg}.items()):",
                f"        if value is None or key.startswith({rng.choice(WORDS)!r}):",
                "            continue",
                "        try:",
                f"            result.append(json.dumps({{key: value, {rng.choice(WORDS)!r}: {other}}}))",
                "        except (TypeError, ValueError) as exc:",
                "            log.warning('cannot encode %s: %s', key, exc)",
                f"    if len(result) > {other}:",
                f"        result = result[:{other}]  # {' '.join(rng.sample(WORDS, 4))}",
                "    return result"]
    return out


def js_module(rng: random.Random, functions: int) -> list[str]:
    out = ["'use strict';", "", f"const {_ident(rng)} = require('./{rng.choice(WORDS)}');", ""]
    for _ in range(functions):
        name, arg = _ident(rng), _ident(rng)
        out += ["", f"/** {' '.join(rng.sample(WORDS, 6))}. */",
                f"function {name}({arg}, options = {{}}) {{",
                f"  const limit = options.limit ?? {rng.randint(1, 500)};",
                "  const out = [];",
                f"  for (const [key, value] of Object.entries({arg})) {{",
                f"    if (value == null || key.startsWith('{rng.choice(WORDS)}')) continue;",
                f"    out.push({{ key, value, {rng.choice(WORDS)}: limit }});",
                "  }",
                "  return out.slice(0, limit);",
                "}",
                f"module.exports.{name} = {name};"]
    return out


def mutate(rng: random.Random, lines: list[str], rate: float) -> list[str]:
    """Change about `rate` of the lines, in clusters, as a release does."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if rng.random() < rate / 3:
            kind, size = rng.random(), rng.randint(1, 4)
            if kind < 0.5:  # rewrite a few lines
                out += [re.sub(r"\b[a-z]+_[a-z]+\b", _ident(rng), l) + "  # " + rng.choice(WORDS)
                        if l.strip() else l for l in lines[i:i + size]]
                i += size
                continue
            if kind < 0.8:  # insert lines
                out += [f"    {_ident(rng)} = {_ident(rng)}({rng.randint(0, 9)})" for _ in range(size)]
            else:  # delete lines
                i += size
                continue
        out.append(lines[i])
        i += 1
    return out


def synthetic_trees(seed: int = 2026) -> tuple[str, dict[str, bytes], dict[str, bytes]]:
    """~1.3 MB / ~28k lines / 186 files of diff, the same bytes on every machine."""
    rng = random.Random(seed)
    old: dict[str, bytes] = {}
    new: dict[str, bytes] = {}
    for i in range(184):  # + a lock file and a minified bundle = 186 files
        pkg = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}"
        if i % 4 == 3:
            path, lines = f"web/{rng.choice(WORDS)}/{_ident(rng)}_{i}.js", js_module(rng, rng.randint(14, 44))
        else:
            path, lines = f"{pkg}/{_ident(rng)}_{i}.py", python_module(rng, rng.randint(14, 44))
        if i % 31 == 5:  # a new file
            new[path] = ("\n".join(lines) + "\n").encode()
            continue
        old[path] = ("\n".join(lines) + "\n").encode()
        if i % 47 == 11:  # a deleted file
            continue
        new[path] = ("\n".join(mutate(rng, lines, 0.12)) + "\n").encode()
    # the usual companions of a release: a lock file, a minified bundle, a pure rename
    old["package-lock.json"] = b'{\n  "lockfileVersion": 3\n}\n'
    new["package-lock.json"] = b'{\n  "lockfileVersion": 3,\n  "packages": {}\n}\n'
    new["web/dist/app.min.js"] = ("var a=" + "1+" * 12_000 + "1;\n").encode()
    moved = next(p for p in sorted(old) if p.endswith(".py") and p in new)
    new[moved.replace("src/", "lib/", 1)] = old[moved]
    del new[moved]
    return "synthetic", old, new


# -- the measurement -------------------------------------------------------------------------

@dataclass
class Figures:
    source: str
    tokenizer: str
    diff_bytes: int
    diff_lines: int
    files: int
    reviewed: int
    skipped: int
    changed_lines: int
    cpu_seconds: list[float]
    wall_seconds: list[float]
    chunks: int
    total_prompt: int
    fixed_per_chunk: int
    diff_tokens: int
    budget: int
    coverage: float
    anchor_tokens: int  # the tool schema's anchor ranges, all chunks
    header_tokens: int  # the file headers, all chunks
    load_seconds: float = 0.0  # loading the tokenizer.json, once per process (not in cpu_seconds)

    @property
    def min_chunks(self) -> int:
        return math.ceil(self.total_prompt / self.budget)

    @property
    def min_chunks_content(self) -> int:
        """The fewest chunks for the diff's own tokens if each chunk paid only the fixed part."""
        return math.ceil(self.diff_tokens / (self.budget - self.fixed_per_chunk))

    @property
    def overhead_share(self) -> float:
        return (self.total_prompt - self.diff_tokens) / self.total_prompt

    @property
    def cpu(self) -> float:
        """The best run: the least disturbed by other work on the machine."""
        return min(self.cpu_seconds)


_LOADED: dict[str, LocalTokenCounter] = {}


def run_once(raw: bytes, tokenizer: str, context: int, output_tokens: int) -> tuple[Engine, object, list[Chunk]]:
    # the tokenizer is loaded once, outside the measurement (a one-time start-up cost, reported
    # on its own); its count cache starts cold on every run, as in a real review
    if tokenizer not in _LOADED:
        _LOADED[tokenizer] = LocalTokenCounter(tokenizer)
    counter = _LOADED[tokenizer].fresh()
    engine = Engine(settings=Settings(max_context=context, max_output_tokens=output_tokens),
                    client=None, counter=counter, model="bench", context=context)  # type: ignore[arg-type]
    changes = diff.parse(raw)
    reviewed, skipped = filters.split(changes)
    chunks = engine.fitting.chunks(reviewed, Context(Intent("Release"))) if reviewed.files else []
    return engine, (changes, reviewed, skipped), chunks


def measure(source: str, raw: bytes, tokenizer: tuple[str, str], context: int, output_tokens: int,
            repeat: int) -> Figures:
    cpu: list[float] = []
    wall: list[float] = []
    load = time.process_time()
    _LOADED.setdefault(tokenizer[0], LocalTokenCounter(tokenizer[0]))
    load = time.process_time() - load
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        engine, (changes, reviewed, skipped), chunks = run_once(raw, tokenizer[0], context,
                                                                output_tokens)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    counter = engine.counter
    sizes = [counter.count_request(m, t) for m, t in
             (engine.requests.request(c, Context(Intent("Release"))) for c in chunks)]
    empty_messages, empty_tools = engine.requests.request(Chunk(0, ()), Context(Intent("Release")))
    fixed = counter.count_request(empty_messages, empty_tools)
    empty_tool = empty_tools[-1]  # the finding tool: the one with per-chunk rows
    diff_tokens = sum(p.tokens for c in chunks for p in c.pieces)
    base_tool = counter.count_texts([json.dumps(empty_tool, ensure_ascii=False)])[0]
    anchors = sum(counter.count_texts([json.dumps(engine.requests.request(c, Context(Intent("Release")))[1][-1],
                                                  ensure_ascii=False)])[0] - base_tool
                  for c in chunks)
    headers = sum(counter.count_texts([file_header(f) + "\n"])[0]
                  for c in chunks for f, _ in c.by_file())
    assert max(sizes) <= engine.requests.budget, "a request exceeds the budget"
    return Figures(
        source=source, tokenizer=tokenizer[1], diff_bytes=len(raw), diff_lines=raw.count(b"\n"), files=len(changes.files),
        reviewed=len(reviewed.files), skipped=len(skipped), changed_lines=reviewed.changed_lines,
        cpu_seconds=cpu, wall_seconds=wall, chunks=len(chunks), total_prompt=sum(sizes),
        fixed_per_chunk=fixed, diff_tokens=diff_tokens, budget=engine.requests.budget,
        coverage=sum(c.changed_lines for c in chunks) / max(reviewed.changed_lines, 1),
        anchor_tokens=anchors, header_tokens=headers, load_seconds=load)


def table(f: Figures, context: int, output_tokens: int) -> str:
    ok = lambda good: "ok" if good else "MISSED"
    rows = [
        ("diff", f"{f.source}: {f.diff_bytes / 1e6:.2f} MB, {f.diff_lines:,} lines, {f.files} files", ""),
        ("tokenizer", f.tokenizer, ""),
        ("files reviewed / skipped", f"{f.reviewed} / {f.skipped}", ""),
        ("changed lines (reviewed files)", f"{f.changed_lines:,}; sent {f.coverage:.0%}",
         ok(f.coverage == 1)),
        ("parse + filter + chunk, CPU", (f"{f.cpu:.2f} s best of {len(f.cpu_seconds)} "
         f"(runs {', '.join(f'{s:.2f}' for s in f.cpu_seconds)}; "
         f"wall {statistics.median(f.wall_seconds):.2f} s)"),
         ok(f.cpu < 1.0) + " (< 1 s)"),
        ("budget per request", f"{f.budget:,} prompt tokens ({context:,} context - {output_tokens:,} output - 16)", ""),
        ("prompt tokens, all requests", f"{f.total_prompt:,} (diff text {f.diff_tokens:,})", ""),
        ("chunks", (f"{f.chunks} vs minimum {f.min_chunks} = ceil(total / budget); "
                    f"{f.min_chunks_content} for the diff text alone"),
         ok(f.chunks <= 1.1 * f.min_chunks) + " (within 10%)"),
        ("fixed overhead share", (f"{f.overhead_share:.1%} (system prompt + tool schema + wrapper "
                                  f"{f.fixed_per_chunk:,}/request, file headers, anchor ranges)"),
         ok(f.overhead_share < 0.10) + " (< 10%)"),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{name:<{width}}  {value}  {verdict}".rstrip() for name, value, verdict in rows)


def engine_revision() -> str:
    try:
        head = git(ROOT, "rev-parse", "--short", "HEAD").decode().strip()
        dirty = git(ROOT, "status", "--porcelain", "--", *ENGINE_FILES).decode().split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    changed = [p for p in dirty if p in ENGINE_FILES]
    return head + (f" with uncommitted changes in {', '.join(changed)}" if changed else "")


def markdown(runs: list[Figures], context: int, output_tokens: int, command: str,
             tokenizer_notes: list[str]) -> str:
    f0 = runs[0]
    head = "| Figure | " + " | ".join(f"{f.source}, {f.tokenizer}" for f in runs) + " | Target |"
    rule = "|---|" + "---|" * len(runs) + "---|"

    def mark(text: str, good: bool) -> str:
        return text + ("" if good else " **missed**")

    rows = [
        ("diff", [f"{f.diff_bytes / 1e6:.2f} MB, {f.diff_lines:,} lines, {f.files} files"
                  for f in runs], ""),
        ("files reviewed / skipped", [f"{f.reviewed} / {f.skipped}" for f in runs], ""),
        ("changed lines sent", [mark(f"{f.coverage:.0%} of {f.changed_lines:,}", f.coverage == 1)
                                for f in runs], "100%"),
        (f"parse + filter + chunk, CPU, best of {len(f0.cpu_seconds)} (median)",
         [mark(f"{f.cpu:.2f} s ({statistics.median(f.cpu_seconds):.2f} s)", f.cpu < 1) for f in runs],
         "< 1 s"),
        ("loading the tokenizer.json (once per process, not included above)",
         [f"{f.load_seconds:.2f} s" for f in runs], ""),
        ("chunks (minimum = ceil(total / budget))",
         [mark(f"{f.chunks} (minimum {f.min_chunks})", f.chunks <= 1.1 * f.min_chunks) for f in runs],
         "within 10%"),
        ("prompt tokens, all requests", [f"{f.total_prompt:,}" for f in runs], ""),
        ("fixed prompt overhead", [mark(f"{f.overhead_share:.1%}", f.overhead_share < 0.10)
                                   for f in runs], "< 10%"),
        ("... of which anchor ranges in the tool schema",
         [f"{f.anchor_tokens / f.total_prompt:.1%}" for f in runs], ""),
        ("... of which system prompt, tool schema, wrapper",
         [f"{f.fixed_per_chunk * f.chunks / f.total_prompt:.1%} ({f.fixed_per_chunk:,}/request)"
          for f in runs], ""),
        ("... of which file headers", [f"{f.header_tokens / f.total_prompt:.1%}" for f in runs], ""),
    ]
    lines = [head, rule] + [f"| {name} | " + " | ".join(vals) + f" | {target} |"
                            for name, vals, target in rows]
    method = _wrap(
        "Each diff is made with `git diff --binary --find-renames` in a temp repository: `pip` is "
        "a real release range (the pip 23.0.1 and 23.2.1 source trees installed on this machine, "
        "committed one after the other); `synthetic` is seeded, generated Python/JS sources with "
        "about 12% of their lines changed in clusters, plus a lock file, a minified bundle, new, "
        f"deleted and renamed files. Tokenizers: {'; '.join(tokenizer_notes)}. Budget: "
        f"{context:,} context - {output_tokens:,} reserved output - 16 = {f0.budget:,} prompt "
        "tokens per request. `Engine.chunks` with a `LocalTokenCounter` (loaded once; a cold "
        "count cache each run); "
        "CPU measured with `time.process_time` (the tokenizer's threads included).")
    machine = _wrap(
        f"Engine revision: {engine_revision()}; Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, 1-minute load average {os.getloadavg()[0]:.1f} when it finished: "
        "other work shared the machine, and CPU seconds grow with contention, so read them as an "
        "upper bound.")
    table_md = "\n".join(lines)
    return f"""{SECTION}

Command (from the repository root, no server needed):

    {command}

{method}

{machine}

{table_md}

Overhead is every prompt token that is not diff text (hunk headers and lines).
"""


def _wrap(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=96, break_on_hyphens=False)


def write_docs(section: str) -> None:
    """Replace (or add) only this section of docs/performance.md; other sections are left alone."""
    text = DOCS.read_text(encoding="utf-8") if DOCS.exists() else "# Performance\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("auto", "pip", "synthetic", "all"), default="all")
    ap.add_argument("--tokenizer", action="append",
                    help="a tokenizer.json, or `tiny` for the project's tiny model's (the "
                         "default); repeatable")
    ap.add_argument("--context", type=int, default=65536)
    ap.add_argument("--output-tokens", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write-docs", action="store_true", help=f"update '{SECTION}' in {DOCS}")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one run")
    args = ap.parse_args()

    sources = []
    if args.source in ("auto", "pip", "all"):
        trees = pip_trees()
        if trees is not None:
            sources.append(trees)
        elif args.source == "pip":
            print("two installed pip versions not found; use --source synthetic", file=sys.stderr)
            return 2
    if args.source == "synthetic" or args.source == "all" or not sources:
        sources.append(synthetic_trees())

    runs: list[Figures] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-tok-") as tmp:
        tokenizers: list[tuple[str, str]] = []
        if "tiny" in (args.tokenizer or ["tiny"]):
            from reviewbot_server.tinymodel import VOCAB_SIZE, build_tiny_model

            path = str(build_tiny_model(Path(tmp) / "tiny") / "tokenizer.json")
            tokenizers.append((path, f"tiny BPE {VOCAB_SIZE // 1024}K"))
            notes.append(f"`tiny BPE {VOCAB_SIZE // 1024}K` is the project's tiny-model tokenizer "
                         "(server/reviewbot_server/tinymodel.py, byte-level BPE trained on reviewbot's sources, the "
                         "one the demo model serves)")
        for path in [t for t in args.tokenizer or () if t != "tiny"]:
            from tokenizers import Tokenizer

            size = Tokenizer.from_file(path).get_vocab_size()
            label = f"{Path(path).parent.name} {round(size / 1000)}K"
            tokenizers.append((path, label))
            notes.append(f"`{label}` is `{path}` ({size:,} tokens)")
        raws = [(source, range_diff(old, new)) for source, old, new in sources]
        for tokenizer in tokenizers:
            for source, raw in raws:
                runs.append(measure(source, raw, tokenizer, args.context, args.output_tokens,
                                    args.repeat))
                if args.profile:
                    prof = cProfile.Profile()
                    prof.enable()
                    run_once(raw, tokenizer[0], args.context, args.output_tokens)
                    prof.disable()
                    out = io.StringIO()
                    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
                    print(out.getvalue())
                print(table(runs[-1], args.context, args.output_tokens) + "\n")

    if args.write_docs:
        argv = [a for a in sys.argv[1:] if a not in ("--write-docs", "--profile")]
        command = " ".join([".venv/bin/python", "benchmarks/chunking.py", *argv])
        write_docs(markdown(runs, args.context, args.output_tokens, command, notes))
        print(f"wrote '{SECTION}' in {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
