"""The closed sets some settings take: report formats, gate thresholds, and the two that are
states the code branches on (enums, so that no branch compares a bare string)."""

from __future__ import annotations

from enum import StrEnum

OUTPUTS = ("text", "json", "sarif", "codequality", "markdown")
FAIL_ON = ("info", "minor", "major", "critical", "blocker", "never")


class ReviewMode(StrEnum):
    """What a forge review covers: the whole change, or what changed since its last review."""

    FULL = "full"
    INCREMENTAL = "incremental"


class FindingsFormat(StrEnum):
    """How the finding pass asks (docs/precision.md): the forced `report_findings` call, the
    same after an analysis inside the grammar, a free review then its findings, or free JSON."""

    TOOL = "tool"
    REASON = "reason"
    TWO_STEP = "two-step"
    JSON = "json"


FINDINGS_FORMATS = tuple(FindingsFormat)
ENUMS = {"mode": ReviewMode, "findings_format": FindingsFormat}
CHOICES = {"output": OUTPUTS, "fail_on": FAIL_ON, "inline_min_severity": FAIL_ON[:-1],
           **{name: tuple(enum) for name, enum in ENUMS.items()}}
