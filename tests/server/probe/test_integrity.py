"""pin writes a manifest `sha256sum -c` accepts; verify_manifest names the bad file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reviewbot.cli import main
from reviewbot_server.errors import UsageError
from reviewbot_server.probe.integrity import (
    MANIFEST,
    ManifestError,
    verify_manifest,
    write_manifest,
)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    root = tmp_path / "model"
    (root / "original").mkdir(parents=True)
    (root / ".cache").mkdir()
    (root / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"]}')
    (root / "tokenizer.json").write_text('{"model": {}}')
    (root / "model-00001-of-00002.safetensors").write_bytes(b"\x01" * 4096)
    (root / "model-00002-of-00002.safetensors").write_bytes(b"\x02" * 4096)
    (root / "original" / "params.json").write_text("{}")
    (root / ".cache" / "lock").write_text("x")
    (root / "README.md").write_text("# notes")
    return root


def run_cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    return int(info.value.code or 0)


def test_pin_writes_sha256sum_format(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["server", "pin", "--model", str(model_dir)]) == 0
    lines = (model_dir / MANIFEST).read_text().splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    assert names == sorted(["config.json", "tokenizer.json", "model-00001-of-00002.safetensors",
                            "model-00002-of-00002.safetensors", "original/params.json"])
    assert "5 files" in capsys.readouterr().out
    sha256sum = shutil.which("sha256sum")
    assert sha256sum, "coreutils sha256sum missing"
    check = subprocess.run([sha256sum, "-c", MANIFEST], cwd=model_dir, capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    verify_manifest(model_dir)


def test_accepts_manifest_written_by_sha256sum(model_dir: Path) -> None:
    out = subprocess.run(["sha256sum", "-b", "config.json", "model-00001-of-00002.safetensors",
                          "model-00002-of-00002.safetensors"], cwd=model_dir,
                         capture_output=True, text=True, check=True).stdout
    (model_dir / MANIFEST).write_text(out)  # binary mode: "<hash> *<name>"
    verify_manifest(model_dir)


def test_truncated_weight_is_named(model_dir: Path) -> None:
    write_manifest(model_dir)
    shard = model_dir / "model-00002-of-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(ManifestError, match="model-00002-of-00002.safetensors: sha256 mismatch"):
        verify_manifest(model_dir)


def test_missing_file_is_named(model_dir: Path) -> None:
    write_manifest(model_dir)
    (model_dir / "tokenizer.json").unlink()
    with pytest.raises(ManifestError, match="tokenizer.json: listed in SHA256SUMS but missing"):
        verify_manifest(model_dir)


def test_unlisted_weight_or_code_file_fails(model_dir: Path) -> None:
    write_manifest(model_dir)
    (model_dir / "modeling_evil.py").write_text("import os")
    with pytest.raises(ManifestError, match="modeling_evil.py: not listed"):
        verify_manifest(model_dir)


def test_cli_verify_exit_codes(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["server", "pin", "--model", str(model_dir), "--verify"]) == 2  # no manifest
    write_manifest(model_dir)
    assert run_cli(["server", "pin", "--model", str(model_dir), "--verify"]) == 0
    (model_dir / "config.json").write_text("{}")
    assert run_cli(["server", "pin", "--model", str(model_dir), "--verify"]) == 3
    assert "config.json: sha256 mismatch" in capsys.readouterr().err


def test_existing_manifest_needs_force(model_dir: Path) -> None:
    write_manifest(model_dir)
    with pytest.raises(UsageError, match="--force"):
        write_manifest(model_dir)
    assert write_manifest(model_dir, force=True)[0] == 5


def test_bad_manifest_lines_and_escapes(model_dir: Path) -> None:
    (model_dir / MANIFEST).write_text(f"{'0' * 64}  ../../etc/passwd\n")
    with pytest.raises(ManifestError, match="line 1"):
        verify_manifest(model_dir)


def test_no_manifest_is_nothing_to_verify(model_dir: Path) -> None:
    verify_manifest(model_dir)
