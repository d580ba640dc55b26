"""The error tree drawn in reviewbot/errors.py's docstring is the tree of its classes."""

from __future__ import annotations

import inspect
import re

from reviewbot import errors

_LINE = re.compile(r"^(?P<lead>[ │├└─]*)(?P<name>[A-Z]\w+)(?:\s+\(exit (?P<code>\d)\))?")


def _drawn() -> dict[str, tuple[str | None, int | None]]:
    """name → (parent, exit code stated), from the drawing."""
    doc = errors.__doc__ or ""
    lines = doc.split("\n\n", 1)[1].split("\n\n", 1)[0].split("\n")
    out: dict[str, tuple[str | None, int | None]] = {}
    parents: list[str] = []
    for line in lines:
        found = _LINE.match(line.strip("\n")[4:])
        assert found, line
        depth = len(found["lead"]) // 4
        parents = parents[:depth]
        code = int(found["code"]) if found["code"] else None
        out[found["name"]] = (parents[-1] if parents else None, code)
        parents.append(found["name"])
    return out


def test_the_drawn_error_tree_is_the_tree_of_the_classes() -> None:
    drawn = _drawn()
    classes = {name: cls for name, cls in inspect.getmembers(errors, inspect.isclass)
               if issubclass(cls, errors.ReviewbotError) and cls.__module__ == errors.__name__}
    assert set(drawn) == set(classes)
    for name, (parent, code) in drawn.items():
        cls = classes[name]
        if parent is not None:
            assert cls.__bases__ == (classes[parent],), name
            assert cls.exit_code == (code if code is not None else classes[parent].exit_code)
        else:
            assert code == cls.exit_code
