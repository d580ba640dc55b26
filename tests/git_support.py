"""Real diffs for the tests: a throw-away git repository per test, driven by real git (the
fixtures are registered for every test folder by tests/conftest.py).

`git_repo` is a fresh repository (isolated from the user's and the system's git config, with
fixed author and dates so hashes are stable); `make_repo` makes more of them (for submodules).
`GitRepo.diff` is the command the bot itself runs for `--git RANGE`; `GitRepo.format_patch` is
what a mailing-list patch looks like. Both return bytes, as a pipe would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_ISOLATION = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00",
    "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


class GitRepo:
    """A git work tree in a temp directory, with helpers that return what git prints."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        for key, value in (("core.autocrlf", "false"), ("commit.gpgsign", "false"),
                           ("core.fileMode", "true"), ("core.safecrlf", "false")):
            self.git("config", key, value)

    def git(self, *args: str, config: tuple[str, ...] = ()) -> bytes:
        argv = ["git"]
        for item in config:
            argv += ["-c", item]
        proc = subprocess.run(argv + list(args), cwd=self.root, capture_output=True, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout

    # -- the work tree -------------------------------------------------------------------
    def write(self, path: str, content: bytes | str, executable: bool | None = None) -> Path:
        """Write bytes exactly as given (str is UTF-8 encoded; no newline translation)."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        if executable is not None:
            target.chmod(0o755 if executable else 0o644)
        return target

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def chmod(self, path: str, executable: bool) -> None:
        (self.root / path).chmod(0o755 if executable else 0o644)

    def remove(self, path: str) -> None:
        self.git("rm", "-q", "--", path)

    def move(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", "--", old, new)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").decode().strip()

    # -- what the bot reads --------------------------------------------------------------
    def diff(self, base: str, head: str, *extra: str, quote_path: bool = False) -> bytes:
        """`git -c core.quotePath=false diff --binary --find-renames BASE HEAD` (or quotePath=true)."""
        return self.git("diff", "--no-color", "--binary", "--find-renames", *extra, base, head,
                        config=(f"core.quotePath={'true' if quote_path else 'false'}",))

    def format_patch(self, base: str, head: str, *extra: str) -> bytes:
        """`git format-patch --stdout BASE..HEAD`: mail headers, message, diffstat, signature."""
        return self.git("format-patch", "--stdout", "--binary", "--find-renames", *extra,
                        f"{base}..{head}", config=("core.quotePath=false",))

    def file_lines(self, rev: str, path: str) -> list[bytes]:
        """The lines of PATH at REV, split on b"\\n" only (what diff line numbers count)."""
        data = self.git("show", f"{rev}:{path}")
        lines = data.split(b"\n")
        return lines[:-1] if data.endswith(b"\n") else lines


def isolate_git(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No user or system git config leaks in (from_git runs git with this environment too)."""
    (home / ".gitconfig").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for key, value in _ISOLATION.items():
        monkeypatch.setenv(key, value)
    for key in list(os.environ):
        if key.startswith("GIT_") and key not in _ISOLATION and key != "GIT_CONFIG_GLOBAL":
            monkeypatch.delenv(key, raising=False)


@pytest.fixture
def git_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def module_repos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], GitRepo]]:
    """`make_repo` for fixtures shared by a whole test module (git is isolated while it runs)."""
    root = tmp_path_factory.mktemp("module_repos")
    with pytest.MonkeyPatch.context() as mp:
        isolate_git(mp, tmp_path_factory.mktemp("home"))
        yield lambda name="repo": GitRepo(root / name)


@pytest.fixture
def make_repo(tmp_path: Path, git_env: None) -> Callable[[str], GitRepo]:
    def make(name: str = "repo") -> GitRepo:
        return GitRepo(tmp_path / name)

    return make


@pytest.fixture
def git_repo(make_repo: Callable[[str], GitRepo]) -> Iterator[GitRepo]:
    yield make_repo("repo")


def train_tokenizer(path: Path, vocab_size: int = 3000) -> Path:
    """A small byte-level BPE (GPT-2 style) trained on local Python sources, saved as tokenizer.json."""
    import sysconfig

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    roots = [Path(__file__).resolve().parents[1] / "reviewbot", Path(sysconfig.get_paths()["stdlib"])]
    texts: list[str] = []
    for root in roots:
        for source in sorted(root.glob("*.py"))[:60]:
            texts.append(source.read_text(encoding="utf-8", errors="replace"))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"])
    tok.train_from_iterator(texts, trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def tokenizer_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tokenizer") / "tokenizer.json")


def review_git(repo: GitRepo, range_: str, *flags: str,
               ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """`reviewbot review --git RANGE` run as a user runs it, in `repo`, against a scripted
    server that answers "no findings": the process, and the requests the server got."""
    from tests.fake_openai import FakeOpenAI, Reply

    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any], n: int) -> Reply:
        seen.append(body)
        return Reply(tool_args={"summary": "", "findings": []})

    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    env["PYTHONPATH"] = str(Path(__file__).parents[1])
    with FakeOpenAI(script, max_model_len=16000) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--git", range_, "--base-url",
             server.base_url, "--config", "/dev/null", *flags],
            cwd=repo.root, capture_output=True, text=True, timeout=120, env=env, check=False)
    return proc, seen
