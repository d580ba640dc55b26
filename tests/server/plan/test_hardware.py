"""GPU specs as a user writes them: unknown cards, unsupported ones and a missing count are refused
with a hint."""

from __future__ import annotations

import pytest

from reviewbot_server.errors import UsageError
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan


@pytest.mark.parametrize("spec, hint", [("4xK80", "3.7"), ("2xB300", "known"), ("fourT4", "COUNT")])
def test_bad_gpu_specs(spec: str, hint: str) -> None:
    with pytest.raises(UsageError, match=hint):
        plan(spec, load_model("Qwen2.5-Coder-7B"))
