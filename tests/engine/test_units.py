"""Review units: a file and its tests in one request, code first; a pair too large for one
request is split and the stats say so."""

from __future__ import annotations

import pytest

from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.diff import ChangeSet, parse
from reviewbot.engine.build import make_engine
from reviewbot.engine.tokens import EstimateTokenCounter
from reviewbot.engine.units import pairs, subject_of
from tests.engine.test_chunking import engine
from tests.fake_openai import FakeOpenAI, Reply


@pytest.mark.parametrize(("path", "subject"), [
    ("tests/test_store.py", "store"), ("pkg/store_test.py", "store"), ("x/store_test.go", "store"),
    ("web/store.test.ts", "store"), ("web/store.spec.jsx", "store"),
    ("src/test/java/StoreTest.java", "Store"), ("TestStore.java", "Store"),
    ("spec/store_spec.rb", "store"), ("lib/store_unittest.cc", "store"),
    ("tests/store.rs", "store"), ("web/__tests__/store.ts", "store"),
    ("src/store.py", None), ("src/contest.py", None), ("src/Contest.java", None),
    ("conftest.py", None),
])
def test_a_test_file_names_its_subject(path: str, subject: str | None) -> None:
    assert subject_of(path) == subject


def _added(path: str, lines: int, word: str = "x") -> str:
    body = "".join(f"+{word}_{i} = {i}\n" for i in range(lines))
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{lines} @@\n{body}")


def _change(files: dict[str, int]) -> ChangeSet:
    return parse("".join(_added(p, n) for p, n in files.items()))


def test_pairs_by_name_in_the_same_language_and_directory_when_ambiguous() -> None:
    changes = _change({"a/index.ts": 2, "b/index.ts": 2, "a/index.test.ts": 2,
                       "src/store.py": 2, "tests/test_store.py": 2, "tests/test_other.py": 2,
                       "web/store.test.ts": 2})
    assert pairs(changes.files) == {"a/index.test.ts": "a/index.ts",
                                    "tests/test_store.py": "src/store.py"}


def test_a_file_and_its_tests_share_a_request_code_first() -> None:
    """In diff order src/alpha.py and tests/test_alpha.py are far apart, with other files
    between them that fill a request; units keep the pair together."""
    changes = _change({"src/alpha.py": 30, "src/beta.py": 30, "src/gamma.py": 30,
                       "src/delta.py": 30, "tests/test_alpha.py": 30})
    e = engine(EstimateTokenCounter(), 8192, chunk_tokens=3000)
    chunks = e.fitting.chunks(changes, Context())
    assert len(chunks) > 1
    holding = [[p.file.path for p in c.pieces] for c in chunks]
    with_test = next(paths for paths in holding if "tests/test_alpha.py" in paths)
    assert "src/alpha.py" in with_test
    assert with_test.index("src/alpha.py") < with_test.index("tests/test_alpha.py")
    assert sum(c.changed_lines for c in chunks) == changes.changed_lines


def test_a_pair_too_large_for_one_request_is_split_and_counted() -> None:
    changes = _change({"src/alpha.py": 200, "tests/test_alpha.py": 200})
    with FakeOpenAI(lambda body, n: Reply(tool_args={"summary": "", "findings": []})) as server:
        e = make_engine(resolve({"base_url": server.base_url, "max_output_tokens": 256,
                                 "chunk_tokens": 3600, "verify": False}, env={}))
        result = e.review(changes, Context())
    assert result.stats.chunks > 1
    assert (result.stats.test_pairs, result.stats.test_pairs_split) == (1, 1)
    assert any("too large for one request" in n for n in result.stats.notes)
