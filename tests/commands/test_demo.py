"""`reviewbot demo`'s own parts (the demo itself runs in tests/server/test_package.py)."""

from __future__ import annotations

import os
from pathlib import Path

from reviewbot.commands.demo import KEPT_LOGS, run_log


def test_each_run_gets_its_own_log_and_old_ones_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    for age in range(KEPT_LOGS + 3):
        (folder / f"vllm-old{age}.log").parent.mkdir(exist_ok=True)
        (folder / f"vllm-old{age}.log").write_text("x")
        os.utime(folder / f"vllm-old{age}.log", (1000 - age, 1000 - age))
    log = run_log(folder)
    assert str(os.getpid()) in log.name and not log.exists()
    kept = sorted(p.name for p in folder.iterdir())
    assert len(kept) == KEPT_LOGS and "vllm-old0.log" in kept  # the newest stay
    assert "vllm-old7.log" not in kept
