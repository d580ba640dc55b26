"""`python -m reviewbot.constraints`, as a CI job runs it before any dependency is installed: one
line, the path of a pin file that pins every requirement exactly and pulls no torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_it_prints_a_file_of_exact_pins_for_the_review_path() -> None:
    proc = subprocess.run([sys.executable, "-S", "-m", "reviewbot.constraints"],
                          capture_output=True, text=True, timeout=60, check=True,
                          cwd=Path(__file__).parents[1])
    path = Path(proc.stdout.strip())
    assert proc.stdout.count("\n") == 1 and path.is_file()
    pins = [line.split(";")[0].strip() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert pins and all("==" in pin for pin in pins), pins
    names = {pin.split("==")[0].lower() for pin in pins}
    assert {"python-gitlab", "openai", "pygithub"} <= names and "torch" not in names
