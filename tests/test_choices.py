"""The closed sets of settings (reviewbot.choices): the two the code branches on arrive as
enums whatever their source, and anything else is refused as before."""

from __future__ import annotations

import pytest

from reviewbot.choices import FindingsFormat, ReviewMode
from reviewbot.config import resolve
from reviewbot.errors import UsageError


def test_a_flag_a_file_or_the_environment_gives_an_enum() -> None:
    from_flag = resolve({"findings_format": "two-step", "mode": "full"}, env={},
                        config_path="/dev/null")
    from_env = resolve({}, env={"REVIEWBOT_FINDINGS_FORMAT": "reason",
                                "REVIEWBOT_MODE": "incremental"}, config_path="/dev/null")
    assert from_flag.findings_format is FindingsFormat.TWO_STEP
    assert from_flag.mode is ReviewMode.FULL
    assert from_env.findings_format is FindingsFormat.REASON
    assert from_env.mode is ReviewMode.INCREMENTAL
    default = resolve({}, env={}, config_path="/dev/null")
    assert default.findings_format is FindingsFormat.JSON and default.mode is ReviewMode.INCREMENTAL


@pytest.mark.parametrize("key, value", [("findings_format", "free"), ("mode", "FULL")])
def test_a_value_outside_the_set_is_one_usage_error(key: str, value: str) -> None:
    with pytest.raises(UsageError, match=f"{key} must be one of"):
        resolve({key: value}, env={}, config_path="/dev/null")
