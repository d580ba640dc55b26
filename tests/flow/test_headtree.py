"""The repository at the head commit for every source (reviewbot.flow.headtree): a local clone that
holds the head (fetched into a shallow one), else the forge's archive through its API, else the
forge's files; and `--mr`/`--pr` prompts that carry the same context as `--git`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gitlab
import pytest

from reviewbot.archive import ArchiveCache
from reviewbot.flow.headtree import Trees, fetch_commit, has_commit
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.forge import GitHubForge
from reviewbot.forges.gitlab.forge import GitLabForge
from tests.fake_openai import FakeOpenAI, Reply, user_text
from tests.forges.fake_github import FakeGitHub, Server
from tests.forges.fake_gitlab import FakeGitLab
from tests.forges.github_repo import GitRepo
from tests.forges.gitrepo import Repo

TOKEN = "glpat-SECRET-t0ken-1234"
UTIL = "".join(f"# filler {i}\n" for i in range(30)) + (
    "def normalize(text):\n    \"\"\"Lower-case, trimmed.\"\"\"\n    return text.strip().lower()\n")
APP_OLD = "".join(f"value_{i} = {i}\n" for i in range(60))
APP_NEW = APP_OLD.replace("value_30 = 30\n", "value_30 = normalize(' X ')\nvalue_31b = 3\n")
AGENTS = "Prefer explicit names.\n"


def _history(repo: Repo) -> tuple[str, str]:
    repo.write({"src/util.py": UTIL, "src/app.py": APP_OLD, "AGENTS.md": AGENTS})
    base = repo.commit("base")
    repo.checkout("feature", create=True)
    repo.write({"src/app.py": APP_NEW})
    return base, repo.commit("use normalize")


def _trees(tmp_path: Path, cwd: Path, max_bytes: int = 2**24) -> Trees:
    return Trees(ArchiveCache(tmp_path / "cache", 2**30), max_bytes, cwd=str(cwd))


def _gitlab(url: str) -> GitLabForge:
    return GitLabForge(gitlab.Gitlab(url, private_token=TOKEN), 42, 7)


def test_a_clone_holding_the_head_is_used_whatever_is_checked_out(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    _, head = _history(repo)
    repo.checkout("main")  # as a CI job that checked out another commit
    tree = _trees(tmp_path, repo.root).at(None, head)
    assert tree.source == "clone" and tree.files is not None and tree.definitions is not None
    assert tree.files("src/app.py") == APP_NEW


def test_a_shallow_clone_fetches_the_head_it_lacks(tmp_path: Path) -> None:
    origin = Repo(tmp_path / "origin")
    _, head = _history(origin)
    origin.checkout("main")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch", "main",
                    f"file://{origin.root}", str(shallow)], check=True, timeout=60)
    assert not has_commit(head, str(shallow))
    assert fetch_commit(head, str(shallow))
    tree = _trees(tmp_path, shallow).at(None, head)
    assert tree.source == "clone" and tree.files and tree.files("src/app.py") == APP_NEW


def test_without_a_clone_the_gitlab_archive_is_unpacked_and_cached(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    base, head = _history(repo)
    elsewhere = tmp_path / "laptop"
    elsewhere.mkdir()
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        trees = _trees(tmp_path, elsewhere)
        tree = trees.at(_gitlab(state.url), head)
        assert tree.source == "archive" and tree.files and tree.definitions
        assert tree.files("src/app.py") == APP_NEW
        found = tree.definitions(["normalize"], lambda p: (tree.files(p) or "").splitlines())
        assert [(d.path, d.first) for d in found] == [("src/util.py", 31)]
        again = trees.at(_gitlab(state.url), head)  # the listener's next review of this head
        assert again.files and again.files("src/util.py") == UTIL
        assert sum("/repository/archive" in r.path for r in state.requests) == 1


def test_an_archive_over_the_bound_leaves_the_forge_files_and_a_note(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    base, head = _history(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        tree = _trees(tmp_path, tmp_path, max_bytes=100).at(_gitlab(state.url), head)
    assert tree.source == "forge files" and tree.definitions is None
    assert tree.files is not None and tree.files("src/app.py") == APP_NEW
    assert "max_archive_mb" in tree.note and "no definitions" in tree.note


def test_a_hostile_gitlab_archive_cannot_plant_files_outside(tmp_path: Path) -> None:
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, kind, link in [("p-x/evil", tarfile.SYMTYPE, "/etc"),
                                 ("p-x/../../../planted", tarfile.REGTYPE, ""),
                                 ("p-x/src/app.py", tarfile.REGTYPE, "")]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            data = b"hostile\n" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    repo = Repo(tmp_path / "repo")
    base, head = _history(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        state.archive = buf.getvalue()
        tree = _trees(tmp_path, tmp_path).at(_gitlab(state.url), head)
    assert tree.source == "archive" and tree.files is not None
    assert tree.files("evil/passwd") is None and tree.files("src/app.py") == "hostile\n"
    assert not list(tmp_path.rglob("planted"))


def test_an_archive_cut_short_leaves_the_forge_files_and_a_note(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    base, head = _history(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        whole = repo.archive(head, "p-x/")
        state.archive = whole[:len(whole) // 2]  # a dropped connection, or a hostile server
        tree = _trees(tmp_path, tmp_path).at(_gitlab(state.url), head)
    assert tree.source == "forge files" and "could not be read" in tree.note
    assert tree.files is not None and tree.files("src/app.py") == APP_NEW
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # nothing half kept


def _github(tmp_path: Path) -> tuple[FakeGitHub, str]:
    repo = GitRepo(tmp_path / "gh")
    repo.write("src/util.py", UTIL)
    repo.write("src/app.py", APP_OLD)
    base = repo.commit("base")
    repo.write("src/app.py", APP_NEW)
    head = repo.commit("head")
    fake = FakeGitHub(repo)
    fake.open_pull(base, head, number=7)
    return fake, head


def _gh_forge(fake: FakeGitHub) -> GitHubForge:
    return GitHubForge(ForgeSettings(fake.base_url, fake.token, True, 30, 2), fake.full_name, 7,
                       seconds_between_writes=0, seconds_between_requests=0, backoff=0.01)


def test_the_github_tarball_link_is_followed_without_the_token(tmp_path: Path) -> None:
    fake, head = _github(tmp_path)
    with Server(fake):
        tree = _trees(tmp_path, tmp_path).at(_gh_forge(fake), head)
    assert tree.source == "archive" and tree.files and tree.files("src/app.py") == APP_NEW
    assert fake.codeload_auth == [""]  # the API token never went to the download host


def test_a_github_archive_link_off_the_forge_is_not_followed(tmp_path: Path) -> None:
    fake, head = _github(tmp_path)
    fake.archive_link = "http://127.0.0.2:9/_codeload/elsewhere.tar.gz"
    with Server(fake):
        tree = _trees(tmp_path, tmp_path).at(_gh_forge(fake), head)
    assert tree.source == "forge files" and "could not be read" in tree.note
    assert fake.codeload_auth == []


# --- the same context as --git ------------------------------------------------------------

def _review(cwd: Path, args: list[str], cache: Path,
            secrets: dict[str, str] | None = None) -> list[str]:
    """One `reviewbot review` process against a server answering "no findings": the user
    messages of its finding requests."""
    seen: list[str] = []

    def script(body: dict[str, Any], attempt: int) -> Reply:
        seen.append(user_text(body))
        return Reply(tool_args={"summary": "", "findings": []})

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    env.update(PYTHONPATH=str(Path(__file__).parents[2]), REVIEWBOT_TREE_CACHE=str(cache),
               **(secrets or {}))
    with FakeOpenAI(script, max_model_len=16000) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", *args, "--base-url", server.base_url,
             "--config", "/dev/null", "--no-progress"],
            cwd=cwd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    return seen


def _context_part(user: str) -> str:
    """What the head tree decides: the diff, the code around it and the definitions (the
    intent before it differs by source: commit messages or the merge request's words)."""
    return user[user.index("\nReview ") + 1:]


@pytest.mark.parametrize("where", ["laptop", "clone"])
def test_mr_prompts_carry_the_same_context_as_git(tmp_path: Path, where: str) -> None:
    repo = Repo(tmp_path / "repo")
    base, head = _history(repo)
    git = _review(repo.root, ["--git", f"{base}..{head}"], tmp_path / "c1")
    cwd = repo.root if where == "clone" else tmp_path
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        mr = _review(cwd, ["--mr", "7", "--project", "42", "--gitlab-url", state.url,
                           "--mode", "full", "--dry-run"], tmp_path / "c2",
                     {"REVIEWBOT_GITLAB_TOKEN": TOKEN})
        archived = any("/repository/archive" in r.path for r in state.requests)
    assert archived == (where == "laptop")
    assert len(git) == len(mr) == 1
    assert "(definition of normalize, head, not in the diff)" in git[0]
    assert "|def normalize(text):" in git[0] and "> Prefer explicit names." in git[0]
    assert _context_part(mr[0]) == _context_part(git[0])
    assert "> Prefer explicit names." in mr[0]  # AGENTS.md from the target in both


def test_pr_prompts_carry_the_same_context_as_git(tmp_path: Path) -> None:
    fake, head = _github(tmp_path)
    base = fake.pulls[7].base
    git = _review(fake.repo.path, ["--git", f"{base}..{head}"], tmp_path / "c1")
    with Server(fake):
        pr = _review(tmp_path, ["--pr", "7", "--repo", fake.full_name, "--github-url",
                                fake.base_url, "--mode", "full", "--dry-run"], tmp_path / "c2",
                     {"GITHUB_TOKEN": fake.token})
    assert fake.codeload_auth == [""]  # the head tree came from the archive
    assert len(git) == len(pr) == 1
    assert "(definition of normalize, head, not in the diff)" in git[0]
    assert _context_part(pr[0]) == _context_part(git[0])


CONFIG_TS = """export interface ConfigParameters {
  targetDir: string;
  debugMode: boolean;
}

export class Config {
  private readonly targetDir: string;
  private readonly debugMode: boolean;

  constructor(params: ConfigParameters) {
    this.targetDir = params.targetDir;
    this.debugMode = params.debugMode;
  }

  getTargetDir(): string {
    return this.targetDir;
  }

  getDebugMode(): boolean {
    return this.debugMode;
  }
}
"""
WRITE_OLD = """import { Config } from '../config/config.js';

export class WriteFileTool {
  constructor(private readonly config: Config) {}

  validate(filePath: string): string | null {
""" + "".join(f"    // check {i}\n" for i in range(40)) + """    return null;
  }
}
"""
WRITE_NEW = WRITE_OLD.replace("    // check 20\n", """    // check 20
    if (!filePath.startsWith(this.config.getTargetDir())) {
      return `File path must be within the root directory: ${filePath}`;
    }
""")


def test_mr_shows_a_typescript_method_defined_in_another_package_as_git(tmp_path: Path) -> None:
    """The case that --mr once missed: a method of a class in another folder, called from the
    changed file (`this.config.getTargetDir()`), reached over the forge's archive."""
    repo = Repo(tmp_path / "repo")
    repo.write({"packages/core/src/config/config.ts": CONFIG_TS,
                "packages/core/src/tools/write-file.ts": WRITE_OLD})
    base = repo.commit("base")
    repo.checkout("feature", create=True)
    repo.write({"packages/core/src/tools/write-file.ts": WRITE_NEW})
    head = repo.commit("check the target dir")
    git = _review(repo.root, ["--git", f"{base}..{head}"], tmp_path / "c1")
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        mr = _review(tmp_path, ["--mr", "7", "--project", "42", "--gitlab-url", state.url,
                                "--mode", "full", "--dry-run"], tmp_path / "c2",
                     {"REVIEWBOT_GITLAB_TOKEN": TOKEN})
        assert any("/repository/archive" in r.path for r in state.requests)
    assert "(definition of getTargetDir, head, not in the diff)" in git[0], git[0]
    assert _context_part(mr[0]) == _context_part(git[0])


def test_without_git_an_archive_gives_files_and_says_why_no_definitions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reviewbot.flow.headtree import in_directory

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    tree = in_directory(tmp_path)
    assert tree.files is not None and tree.files("a.py") is not None
    assert tree.definitions is None and "git is not installed" in tree.note


class _FlakyForge:
    """A forge whose file endpoint fails for one path and sends an oversized answer for
    another; a third is simply absent at the head (a deleted file)."""

    def file_at(self, path: str, ref: str) -> str | None:
        from reviewbot.errors import ForgeError
        from reviewbot.tree import MAX_FILE_BYTES

        if path == "src/broken.py":
            raise ForgeError("500 Internal Server Error")
        if path == "src/huge.py":
            return "x" * (MAX_FILE_BYTES + 1)
        return "ok\n" if path == "src/fine.py" else None


def test_forge_files_remember_what_could_not_be_read_for_the_notes() -> None:
    from reviewbot.context import Context
    from reviewbot.flow.headtree import forge_files

    files = forge_files(_FlakyForge(), "a" * 40)  # type: ignore[arg-type]
    assert files is not None
    assert [files(p) for p in ("src/fine.py", "src/broken.py", "src/huge.py", "src/gone.py",
                               "src/broken.py")] == ["ok\n", None, None, None, None]
    assert files.unread() == ["src/broken.py", "src/huge.py"]  # once each; absent is not unread
    notes = Context(files=files, notes=("no definitions from other files: …",)).notes_after()
    assert notes[0].startswith("no definitions")
    assert "2 file(s) could not be read from the forge (src/broken.py, src/huge.py)" in notes[1]
