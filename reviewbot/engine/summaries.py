"""Whether a chunk's summary names a problem beside an empty findings list (a small model's
habit): then the chunk is asked once more for the problems it named (Passes.named)."""

from __future__ import annotations

import re

# what a summary that names a problem says (a descriptive one, "refactors the handler", does
# not ask for another request), and what a clean one says
_PROBLEM = re.compile(r"\b(bug|vulnerab\w*|inject\w*|risk\w*|unsafe|insecure|leak\w*|crash\w*|"
                      r"race|overflow\w*|incorrect\w*|wrong|missing|fails?|breaks?|exception|"
                      r"division|divides? by|zero|null|undefined|security|problem|issues?|flaw"
                      r"\w*|error\w*|unclosed|never closed|not closed|deadlock\w*)\b",
                      re.IGNORECASE)
_CLEAN = re.compile(r"\b(no (obvious |apparent |real )?(issues?|problems?|bugs?|defects?|concerns?"
                    r"|errors?)|looks? (good|correct|fine|ok)|nothing (wrong|to report))\b",
                    re.IGNORECASE)


# a clause that denies problems: a negation before every problem word, as when a small model
# echoes the prompt's checklist ("does not introduce any new bugs, crashes, … or security
# problems"). Not a denial: a negation that is itself the problem ("does not check for null",
# "is never closed", "without escaping"), or a clause that goes on to a consequence.
_NEGATION = re.compile(r"\b(?:no|not|never|none|nor|without|neither|n't)\b\W*"
                       r"(?:(?:be|been|being|properly|correctly|always|yet)\W+)*(\w*)",
                       re.IGNORECASE)
_MISSING_ACT = re.compile(r"(check|validat|verif|handl|clos|escap|sanitiz|free|releas|lock|"
                          r"await|catch|initiali[sz]|reset|call)\w*", re.IGNORECASE)
_CONSEQUENCE = re.compile(r"\b(which|so|caus\w*|lead\w*|but|however|because)\b", re.IGNORECASE)
_CLAUSES = re.compile(r"[.;!?]+(?:\s|$)|\n")


def _denies(clause: str) -> bool:
    negation = _NEGATION.search(clause)
    first_problem = _PROBLEM.search(clause)
    return bool(negation and first_problem and negation.start() < first_problem.start()
                and not _MISSING_ACT.fullmatch(negation.group(1))
                and not _CONSEQUENCE.search(clause))


def names_a_problem(summary: str) -> bool:
    """Whether a chunk's summary names a problem (then an empty findings list is asked about
    once more): one of its clauses speaks of one without denying it, and the summary does not
    say the change is fine."""
    if _CLEAN.search(summary):
        return False
    return any(_PROBLEM.search(c) and not _denies(c) for c in _CLAUSES.split(summary))
