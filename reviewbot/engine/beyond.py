"""The passes beyond the diff, each one forced call after the chunks: does the change do what
its linked issues ask, and which of the team's scanners' results on its lines are real.

Everything in these prompts came from someone else (the issues, the scanners' messages, the
code) and is framed as data. A result or an issue without a usable verdict is never taken as
dismissed: an issue stays `unknown`, a scanner result makes the review incomplete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from reviewbot.context import LinkedIssue
from reviewbot.diff import ChangeSet, Side
from reviewbot.engine import templates
from reviewbot.engine.messages import (
    QUESTION_CHARS_PER_TOKEN,
    QUESTION_OVERHEAD,
    Messages,
    Requests,
    diff_text,
)
from reviewbot.engine.prompttext import framed, label, quoted
from reviewbot.engine.tools import Prop, _object, _tool, keyed
from reviewbot.findings import Finding, Severity
from reviewbot.modeltext import clean, one_line
from reviewbot.result import IssueCheck, IssueVerdict, ScannerDismissal, Usage
from reviewbot.scanners import ScannerResult

ISSUES_TOOL = "issue_verdicts"
TRIAGE_TOOL = "triage_results"
ANSWER_TOKENS = 1024
# a triage's verdicts, asked before the reason: the 1.5B model wrote a reason that described
# the problem, then dismissed it (docs/real-model.md)
REAL, FALSE_POSITIVE = "real_problem", "false_positive"
PER_REQUEST = 20  # scanner results asked about in one request
AROUND = 6  # lines of code shown on each side of a scanner's line
SEVERITY = {"error": Severity.MAJOR, "warning": Severity.MINOR, "note": Severity.INFO,
            "none": Severity.INFO}

Verdicts = dict[str, tuple[str, str]]  # id → (verdict, reason or what is missing)
# a forced call with its attempts: (the first usable parse, the usage of every attempt, the
# requests sent); (None, …) when none was usable
Call = Callable[[Messages, list[dict[str, object]], str, int,
                 Callable[[list[tuple[str, str]]], Verdicts | None]],
                tuple[Verdicts | None, Usage, int]]


def issues_tool(refs: list[str]) -> dict[str, object]:
    item = (Prop("verdict", "string", enum=("addressed", "partly", "not")),
            Prop("missing", "string", max_chars=400))
    return _tool(ISSUES_TOOL, "For every issue, by its reference, say whether this change does "
                 "what it asks; when it does not fully, say what is missing.",
                 (Prop("verdicts", "object", ref="verdicts"),),
                 {"verdict": _object(item), "verdicts": keyed(refs, "verdict")})


def triage_tool(ids: list[str]) -> dict[str, object]:
    item = (Prop("verdict", "string", enum=(REAL, FALSE_POSITIVE)),
            Prop("reason", "string", max_chars=300))
    return _tool(TRIAGE_TOOL, "For every scanner result, by its id: is it a real problem in the "
                 "code shown, or a false positive here (and why).",
                 (Prop("verdicts", "object", ref="verdicts"),),
                 {"verdict": _object(item), "verdicts": keyed(ids, "verdict")})


def _verdicts(calls: list[tuple[str, str]], name: str, text: str, allowed: set[str],
              verdicts: set[str]) -> Verdicts:
    """{key: (verdict, text)} from the first call of tool `name`; unknown keys and malformed
    items left out."""
    for called, arguments in calls:
        try:
            args = json.loads(arguments, strict=False) if called == name else None
        except (json.JSONDecodeError, RecursionError):
            args = None
        items = args.get("verdicts") if isinstance(args, dict) else None
        if not isinstance(items, dict):
            continue
        return {key: (item["verdict"], one_line(clean(item.get(text), 400)))
                for key, item in items.items()
                if key in allowed and isinstance(item, dict) and item.get("verdict") in verdicts}
    return {}


@dataclass
class Beyond:
    """The two passes, over one `call` (Passes.forced)."""

    requests: Requests
    call: Call
    usage: Usage = field(default_factory=Usage)
    requests_sent: int = 0

    def _ask(self, messages: Messages, tool: dict[str, object], name: str,
             parse: Callable[[list[tuple[str, str]]], Verdicts]) -> Verdicts:
        found, usage, sent = self.call(messages, [tool], name, ANSWER_TOKENS,
                                       lambda calls: parse(calls) or None)
        self.usage += usage
        self.requests_sent += sent
        return found or {}

    def issues(self, changes: ChangeSet, issues: tuple[LinkedIssue, ...]) -> list[IssueCheck]:
        refs = [i.ref for i in issues]
        room = int((self.requests.context - ANSWER_TOKENS - QUESTION_OVERHEAD
                    - sum(len(i.body) for i in issues) // 2) * QUESTION_CHARS_PER_TOKEN)
        diff, cut = diff_text(changes, room)
        text = templates.render(
            "issues.j2", self.requests.settings.prompts_dir, diff=framed(diff), cut=cut,
            issues=[(label(i.ref), label(i.title), quoted(i.body) if i.body else "")
                    for i in issues])
        found = self._ask([{"role": "user", "content": text}], issues_tool(refs), ISSUES_TOOL,
                          lambda calls: _verdicts(calls, ISSUES_TOOL, "missing", set(refs),
                                                  {"addressed", "partly", "not"}))
        return [IssueCheck(i.ref, i.title, IssueVerdict(found[i.ref][0]) if i.ref in found
                           else IssueVerdict.UNKNOWN, found.get(i.ref, ("", ""))[1])
                for i in issues]

    def triage(self, changes: ChangeSet, results: list[ScannerResult]
               ) -> tuple[list[Finding], list[ScannerDismissal], list[ScannerResult]]:
        """(confirmed as findings, dismissed, without a usable verdict)."""
        confirmed: list[Finding] = []
        dismissed: list[ScannerDismissal] = []
        undecided: list[ScannerResult] = []
        for start in range(0, len(results), PER_REQUEST):
            batch = {f"S{start + n + 1}": r for n, r in enumerate(results[start:start
                                                                             + PER_REQUEST])}
            text = templates.render(
                "triage.j2", self.requests.settings.prompts_dir,
                results=[(ident, label(r.tool), label(r.rule), r.level, label(r.path), r.line,
                          quoted(r.message), framed(_around(changes, r)))
                         for ident, r in batch.items()])
            ids = set(batch)
            found = self._ask([{"role": "user", "content": text}], triage_tool(list(batch)),
                              TRIAGE_TOOL, partial(_verdicts, name=TRIAGE_TOOL, text="reason",
                                                   allowed=ids, verdicts={REAL, FALSE_POSITIVE}))
            for ident, r in batch.items():
                verdict, reason = found.get(ident, ("", ""))
                if verdict == REAL:
                    confirmed.append(_finding(r, reason))
                elif verdict == FALSE_POSITIVE:
                    dismissed.append(ScannerDismissal(r.tool, r.rule, r.path, r.line, reason))
                else:
                    undecided.append(r)
        return confirmed, dismissed, undecided


def _around(changes: ChangeSet, r: ScannerResult) -> str:
    """The new-side lines of the hunk around the result's line, numbered, its line marked."""
    for f in changes.files:
        if f.path != r.path:
            continue
        for h in f.hunks:
            lines = [ln for ln in h.lines if ln.new is not None]
            at = next((i for i, ln in enumerate(lines) if ln.new == r.line), None)
            if at is not None:
                shown = lines[max(0, at - AROUND):at + AROUND + 1]
                return "\n".join(f"{'>' if ln.new == r.line else ' '}{ln.new:>6} {ln.text}"
                                 for ln in shown)
    return ""


def _finding(r: ScannerResult, reason: str) -> Finding:
    body = (f"{reason}\n\n" if reason else "") + \
        f"Reported by {r.tool} (rule `{r.rule}`); the model's triage confirmed it here."
    return Finding(path=r.path, line=r.line, side=Side.NEW, severity=SEVERITY[r.level],
                   title=one_line(f"{r.tool} {r.rule}: {r.message}")[:120], body=body,
                   category="security")
