"""The import rules of the layout, held by a test: the shared vocabulary at the top, the engine
below the entry points, and the server package (server/, installed on its own) beside the
review client, sharing only HTTP.

Imports inside functions count (lazy imports are still dependencies)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reviewbot"
SERVER = ROOT / "server" / "reviewbot_server"
SOURCES = [*PACKAGE.rglob("*.py"), *SERVER.rglob("*.py")]


def _module(path: Path) -> str:
    root = SERVER.parent if path.is_relative_to(SERVER) else ROOT
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = {_module(p): _imports(p) for p in SOURCES}


def _offenders(inside: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(f"{mod} imports {name}" for mod, names in MODULES.items()
                  if (mod == inside or mod.startswith(inside + ".")) and mod not in allowed
                  for name in names
                  if any(name == f or name.startswith(f + ".") for f in forbidden))


def test_the_engine_imports_no_entry_point_and_no_sink() -> None:
    assert _offenders("reviewbot.engine", ("reviewbot.commands", "reviewbot.forges",
                                           "reviewbot.webhook", "reviewbot.report",
                                           "reviewbot.cli", "reviewbot_server")) == []


def test_the_server_package_imports_nothing_of_the_review_client() -> None:
    assert _offenders("reviewbot_server", ("reviewbot",)) == []


def test_the_webhook_imports_no_command() -> None:
    assert _offenders("reviewbot.webhook", ("reviewbot.commands",)) == []


def test_nothing_but_the_demo_reaches_into_the_server_package() -> None:
    """The demo is the one command that runs both sides (a local vLLM and a review); the CLI
    names `reviewbot server` by string and says how to install it when it is missing."""
    assert _offenders("reviewbot", ("reviewbot_server",),
                      allowed=("reviewbot.commands.demo",)) == []


def test_only_the_model_client_imports_openai_on_the_review_side() -> None:
    """The server's probes may: they are clients of the server they test."""
    review_side = tuple(m for m in MODULES if not m.startswith("reviewbot_server"))
    users = sorted(m for m in review_side if any(n == "openai" or n.startswith("openai.")
                                                   for n in MODULES[m]))
    assert users == ["reviewbot.engine.llm"]


def test_the_review_path_loads_no_server_module() -> None:
    code = ("import sys, reviewbot.cli, reviewbot.commands.review, reviewbot.engine.build, "
            "reviewbot.flow.posting, reviewbot.webhook.app, reviewbot.webhook.runner\n"
            "print(sorted(m for m in sys.modules if m.startswith('reviewbot_server')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


VOCABULARY = ("reviewbot.anchoring", "reviewbot.config", "reviewbot.context", "reviewbot.diff",
              "reviewbot.discussion",
              "reviewbot.errors", "reviewbot.findings", "reviewbot.git", "reviewbot.headers", "reviewbot.modeltext",
              "reviewbot.rendering", "reviewbot.result", "reviewbot.rules",
              "reviewbot.tree", "reviewbot.archive", "reviewbot.checks", "reviewbot.withheld",
              "reviewbot.choices")
STEPS_AND_ENTRY_POINTS = ("reviewbot.engine", "reviewbot.forges", "reviewbot.webhook",
                          "reviewbot.commands", "reviewbot.report", "reviewbot_server",
                          "reviewbot.flow", "reviewbot.cli", "reviewbot.evaluation")


def test_the_shared_vocabulary_imports_only_itself() -> None:
    assert [m for m in VOCABULARY if m not in MODULES] == []  # the list keeps up with renames
    assert [o for m in VOCABULARY for o in _offenders(m, STEPS_AND_ENTRY_POINTS)] == []


def test_a_forge_host_imports_no_other_host_and_no_step_above_it() -> None:
    above = ("reviewbot.engine", "reviewbot.webhook", "reviewbot.commands", "reviewbot.report",
             "reviewbot.flow")
    assert _offenders("reviewbot.forges.gitlab", above + ("reviewbot.forges.github",)) == []
    assert _offenders("reviewbot.forges.github", above + ("reviewbot.forges.gitlab",)) == []


def test_the_forge_adapters_import_only_the_shared_vocabulary_and_forges_base() -> None:
    allowed = (*VOCABULARY, "reviewbot.redact", "reviewbot.deadline", "reviewbot.secrets",
               "reviewbot.forges")
    found = sorted(f"{m} imports {n}" for m, names in MODULES.items()
                   if m.startswith("reviewbot.forges.") for n in names
                   if n.startswith("reviewbot.") and not n.startswith(allowed))
    assert found == []


def test_entry_points_review_a_change_request_through_the_service() -> None:
    """The CLI and the listener send a typed order to flow/service.py; only it runs the flow."""
    assert sorted(m for m, names in MODULES.items() if "reviewbot.flow.posting" in names
                  and not m.startswith("reviewbot.forges")) == ["reviewbot.flow.service"]
    assert _offenders("reviewbot.webhook", ("reviewbot.flow.select", "reviewbot.flow.posting",
                                            "reviewbot.forges.gitlab", "reviewbot.forges.github",
                                            "reviewbot.cli")) == []
    assert _offenders("reviewbot.flow.service", ("reviewbot.commands", "reviewbot.webhook",
                                                 "reviewbot.cli", "reviewbot.report")) == []


ENTRY_POINTS = ("reviewbot.cli", "reviewbot.commands", "reviewbot.webhook")
STEPS = ("reviewbot.conversation", "reviewbot.engine", "reviewbot.report", "reviewbot.forges")


def test_imports_go_down_entry_points_then_the_flow_then_the_steps() -> None:
    """entry points → flow → conversation, engine, report, forges → the shared vocabulary."""
    assert _offenders("reviewbot.flow", ENTRY_POINTS) == []
    assert [o for step in STEPS for o in _offenders(step, ("reviewbot.flow", *ENTRY_POINTS))] \
        == []


def test_no_module_on_the_review_path_is_longer_than_300_lines() -> None:
    """The review path: everything but the server package and the listener's own plumbing."""
    long = {m: n for m, n in ((m, len(p.read_text(encoding="utf-8").splitlines()))
                              for m, p in ((_module(p), p) for p in SOURCES))
            if n > 300 and not m.startswith(("reviewbot_server", "reviewbot.webhook"))}
    assert long == {}


def test_no_function_is_longer_than_60_lines() -> None:
    long = sorted(f"{_module(p)}.{node.name}: {node.end_lineno - node.lineno + 1}"
                  for p in SOURCES
                  for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.end_lineno is not None and node.end_lineno - node.lineno >= 60)
    assert long == []


def test_every_package_is_in_its_wheel() -> None:
    """Each pyproject lists packages by hand: one left out installs from a checkout (editable)
    and fails from the wheel (the container image found reviewbot.conversation missing)."""
    import tomllib

    for package in (PACKAGE, SERVER):
        listed = set(tomllib.loads((package.parent / "pyproject.toml").read_text())["tool"]
                     ["setuptools"]["packages"])
        found = {_module(p.parent / "__init__.py") for p in package.rglob("__init__.py")}
        assert found - listed == set()


def _mirrored_test(module: str) -> Path:
    """reviewbot.flow.service → tests/flow/test_service.py; reviewbot_server.plan.model →
    tests/server/plan/test_model.py."""
    top, *middle, name = module.split(".")
    return ROOT / "tests" / ("server" if top == "reviewbot_server" else "") / Path(
        *middle, f"test_{name.lstrip('_')}.py")  # _reaper.py → test_reaper.py


def _has_logic(path: Path) -> bool:
    """A function or method with a body beyond a docstring, `pass` or `...`: a module of
    protocols, dataclasses and constants alone has nothing of its own to test."""
    def trivial(statement: ast.stmt) -> bool:
        return isinstance(statement, ast.Pass) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))

    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
               and not all(map(trivial, node.body))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_every_module_with_logic_has_a_test_at_its_mirrored_path() -> None:
    """Tests mirror the modules with logic one for one (end-to-end suites live beside them)."""
    modules = {_module(p) for p in SOURCES
               if p.name not in ("__init__.py", "__main__.py") and "templates" not in p.parts
               and _has_logic(p)}
    assert sorted(m for m in modules if not _mirrored_test(m).is_file()) == []


def test_the_servers_planner_imports_no_renderer() -> None:
    """render/ reads plans; the `plan` command (plan_command.py) joins the two."""
    assert _offenders("reviewbot_server.plan", ("reviewbot_server.render",)) == []
