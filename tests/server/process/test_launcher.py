"""Starting vLLM: the likely cause of an early exit, the key kept off the command line, the CPU
dtype."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot_server.process.launcher import likely_cause


@pytest.mark.parametrize(("line", "cause"), [
    ("torch.OutOfMemoryError: CUDA out of memory.", "out of memory"),
    ("api_server.py: error: unrecognized arguments: --bogus", "a bad vLLM flag"),
    ("ValueError: Model architectures ['Foo'] are not supported for now.",
     "an unsupported model architecture"),
    ("OSError: [Errno 98] Address already in use", "the port is in use"),
])
def test_likely_cause(line: str, cause: str) -> None:
    assert likely_cause(["INFO starting", line, "INFO shutting down"], 1) == cause


def test_the_api_key_reaches_vllm_in_its_environment_never_its_command_line(
        tmp_path: Path) -> None:
    """`ps` shows every process's argv to every user of the machine."""
    import json
    import sys
    import time

    from reviewbot_server.process.launcher import LaunchSpec, VllmProcess, free_port

    seen = tmp_path / "seen.json"
    fake = tmp_path / "python"
    # written aside, then renamed: `seen` exists only once whole (stop() may kill the writer)
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"with open({str(seen)!r} + '.part', 'w') as out:\n"
                    f"    json.dump({{'argv': sys.argv, 'key': os.environ.get('VLLM_API_KEY')}}, out)\n"
                    f"os.replace({str(seen)!r} + '.part', {str(seen)!r})\n")
    fake.chmod(0o755)
    (tmp_path / "model").mkdir()
    spec = LaunchSpec(model_dir=tmp_path / "model", port=free_port(), extra_args=(
        "--api-key", "sk-never-in-argv-0123"))
    process = VllmProcess(spec, log_path=tmp_path / "vllm.log", python=str(fake))
    assert "sk-never-in-argv-0123" not in " ".join(process.argv)
    process.start()
    deadline = time.monotonic() + 20
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.stop()
    got = json.loads(seen.read_text())
    assert got["key"] == "sk-never-in-argv-0123"
    assert not any("sk-never-in-argv" in word or word == "--api-key" for word in got["argv"])


def test_the_cpu_build_serves_bfloat16_only_where_the_cpu_computes_it() -> None:
    from reviewbot_server.process.launcher import cpu_dtype

    amd = "flags\t\t: fpu vme avx avx2 fma bmi2 sha_ni\n"
    sapphire = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
    graviton = "Features\t: fp asimd sve bf16 i8mm\n"
    assert [cpu_dtype(c) for c in (amd, sapphire, graviton)] == ["float32", "bfloat16", "bfloat16"]
    assert cpu_dtype() in ("float32", "bfloat16")  # this machine's, read from /proc/cpuinfo
