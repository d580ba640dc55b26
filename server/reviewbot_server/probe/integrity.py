"""Model integrity: a `sha256sum`-format manifest (SHA256SUMS) over weights, config and
tokenizer files. `pin` writes it; `verify_manifest` runs before launch and names the bad file.

A truncated or tampered download never serves reviews: a mismatch, a missing file, or a
weight/code file the manifest does not list (vLLM would load it) all refuse the launch.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import click

from reviewbot_server.errors import ManifestError, UsageError

MANIFEST = "SHA256SUMS"
# Files vLLM or transformers read: weights, configs, tokenizers, templates, remote code.
PINNED = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.json", "*.model",
          "*.tiktoken", "*.txt", "*.jinja", "*.py")
# An unlisted file of these kinds could be loaded, so it fails verification.
MUST_BE_LISTED = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.py")
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def _model_dir(model_dir: str | Path) -> Path:
    path = Path(model_dir).expanduser()
    if not path.is_dir():
        raise UsageError(f"model directory {path} does not exist")
    return path


def sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    return any(Path(rel).match(p) for p in patterns) and Path(rel).name != MANIFEST


def pinned_files(model_dir: Path, patterns: tuple[str, ...] = PINNED) -> list[str]:
    """Relative paths (forward slashes, sorted), skipping hidden files and folders (.cache)."""
    found = []
    for root, dirs, files in os.walk(model_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            rel = (Path(root) / name).relative_to(model_dir).as_posix()
            if not name.startswith(".") and _matches(rel, patterns):
                found.append(rel)
    return sorted(found)


def write_manifest(model_dir: str | Path, *, force: bool = False) -> tuple[int, int]:
    """Write SHA256SUMS; returns (files, bytes). Refuses to replace one unless forced."""
    root = _model_dir(model_dir)
    target = root / MANIFEST
    if target.exists() and not force:
        raise UsageError(f"{target} exists: verify with --verify, or replace it with --force")
    files = pinned_files(root)
    if not any(_matches(f, MUST_BE_LISTED) for f in files):
        raise UsageError(f"{root} has no weight files (*.safetensors, *.bin, …) to pin")
    lines = [f"{sha256(root / rel)}  {rel}\n" for rel in files]
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(target)
    return len(files), sum((root / rel).stat().st_size for rel in files)


def _read_manifest(path: Path) -> dict[str, str]:
    entries: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line)
        rel = match.group(2).removeprefix("./") if match else ""
        if not match or rel.startswith("/") or ".." in Path(rel).parts:
            raise ManifestError(f"{path} line {number} is not a sha256sum line inside the "
                                f"model directory: {line[:80]!r}")
        entries[rel] = match.group(1).lower()
    if not entries:
        raise ManifestError(f"{path} lists no files")
    return entries


def verify_manifest(model_dir: str | Path) -> None:
    """Check every file listed in SHA256SUMS; no manifest means nothing to verify."""
    root = _model_dir(model_dir)
    manifest = root / MANIFEST
    if not manifest.is_file():
        return
    entries = _read_manifest(manifest)
    problems = []
    for rel, expected in entries.items():
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: listed in {MANIFEST} but missing")
        elif (actual := sha256(path)) != expected:
            problems.append(f"{rel}: sha256 mismatch (expected {expected[:12]}…, "
                            f"got {actual[:12]}…; truncated or modified)")
    for rel in pinned_files(root, MUST_BE_LISTED):
        if rel not in entries:
            problems.append(f"{rel}: not listed in {MANIFEST} (vLLM would load it)")
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ManifestError(f"model {root} fails its {MANIFEST}: " + "; ".join(problems[:3])
                            + more)


@click.command("pin")
@click.option("--model", "model_dir", required=True, help="Local model directory.")
@click.option("--force", is_flag=True, help="Replace an existing SHA256SUMS.")
@click.option("--verify", "verify_only", is_flag=True, help="Only check the existing manifest.")
def pin(model_dir: str, force: bool, verify_only: bool) -> None:
    """Write (or --verify) SHA256SUMS over the model's weight, config and tokenizer files."""
    if verify_only:
        if not (Path(model_dir) / MANIFEST).is_file():
            raise UsageError(f"{model_dir} has no {MANIFEST}: write one with `reviewbot server pin`")
        verify_manifest(model_dir)
        click.echo(f"OK: every file in {Path(model_dir) / MANIFEST} matches")
        return
    count, size = write_manifest(model_dir, force=force)
    click.echo(f"wrote {Path(model_dir) / MANIFEST}: {count} files, {size / 2**30:.2f} GiB; "
               "`reviewbot server up` verifies it before every launch")
