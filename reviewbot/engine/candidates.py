"""From candidate findings to the ones worth posting (pure): agreement across samples, and the
verifier's verdicts applied.

Agreement: N finding passes sampled in one request; two candidates of different samples are the
same issue when they share path, side and category and their line ranges overlap (widened by
`NEAR` lines). A cluster is kept when at least ⌈N/2⌉ samples found it; its representative is the
member of the earliest sample, with the share of agreeing samples folded into its confidence.
"""

from __future__ import annotations

import math
from dataclasses import replace

from reviewbot.engine.answers import Verdict
from reviewbot.findings import Finding, capped_severity
from reviewbot.withheld import Dropped, DropStage

NEAR = 2  # lines: two samples rarely pick exactly the same line of a multi-line problem


def _span(f: Finding) -> tuple[int, int]:
    start = f.line or 0
    return start, max(f.end_line or start, start)


def same_issue(a: Finding, b: Finding) -> bool:
    if (a.path, a.side, a.category) != (b.path, b.side, b.category):
        return False
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 - NEAR <= b1 and b0 - NEAR <= a1


def agree(samples: list[list[Finding]]) -> tuple[list[Finding], list[Dropped]]:
    """Candidates that at least half of the samples agree on, and the rest as dropped."""
    if len(samples) == 1:
        return list(samples[0]), []
    need = math.ceil(len(samples) / 2)
    clusters: list[list[tuple[int, Finding]]] = []
    for index, findings in enumerate(samples):
        for f in findings:
            home = next((c for c in clusters if all(i != index for i, _ in c)
                         and any(same_issue(f, g) for _, g in c)), None)
            if home is None:
                clusters.append([(index, f)])
            else:
                home.append((index, f))
    kept: list[Finding] = []
    dropped: list[Dropped] = []
    for cluster in clusters:
        votes = len(cluster)
        first = cluster[0][1]
        if votes >= need:
            share = votes / len(samples)
            kept.append(replace(first, confidence=(first.confidence or 1.0) * share))
        else:
            dropped.append(Dropped(first, DropStage.AGREEMENT,
                                   f"found by {votes} of {len(samples)} samples"))
    return kept, dropped


def apply_verdicts(candidates: list[Finding], verdicts: dict[int, Verdict]
                   ) -> tuple[list[Finding], list[Dropped], int]:
    """(kept with the verifier's severity and confidence, dropped with its reason, how many had
    no verdict). A candidate without a verdict is kept as it was: the verifier's silence is not
    evidence against it, and min_confidence still applies to it."""
    kept: list[Finding] = []
    dropped: list[Dropped] = []
    missing = 0
    for cid, f in enumerate(candidates, 1):
        v = verdicts.get(cid)
        if v is None:
            missing += 1
            kept.append(f)
        elif v.keep:
            severity = capped_severity(f.category, v.severity, f.path, f"{f.title} {f.body}")
            kept.append(replace(f, severity=severity, confidence=v.confidence))
        else:
            dropped.append(Dropped(replace(f, confidence=v.confidence), DropStage.VERIFY,
                                   v.reason or "dropped by the verifier"))
    return kept, dropped, missing
