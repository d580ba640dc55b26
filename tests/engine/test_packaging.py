"""The review path stays light: a CI job installs reviewbot without torch or vLLM."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_review_path_imports_neither_torch_nor_vllm() -> None:
    code = (
        "import sys\n"
        "import reviewbot.cli, reviewbot.commands.review, reviewbot.engine.orchestrator, reviewbot.flow.posting\n"
        "import reviewbot.forges.gitlab.forge, reviewbot.forges.github.forge, reviewbot.report.sarif\n"
        "heavy = sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_vllm_is_a_dependency_of_the_server_package_only() -> None:
    client = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    everything = " ".join([*client["dependencies"],
                           *(d for ds in client["optional-dependencies"].values() for d in ds)])
    assert "vllm" not in everything.lower() and "torch" not in everything.lower()
    server = tomllib.loads((ROOT / "server" / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("vllm") for dep in server["dependencies"])
    assert not any(dep.startswith("reviewbot") for dep in server["dependencies"])


def test_prompts_ship_inside_the_package() -> None:
    from importlib import resources

    names = {p.name for p in resources.files("reviewbot.prompts").iterdir()}
    assert {"system.j2", "chunk.j2"} <= names


def test_imports_point_down_no_cycles() -> None:
    """No import cycle in either package, counting imports inside functions (they hide cycles)."""
    import ast

    mods = {}
    roots = {ROOT / "reviewbot": ROOT, ROOT / "server" / "reviewbot_server": ROOT / "server"}
    for root, path in ((root, p) for package, root in roots.items() for p in package.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in mods and t != "reviewbot"}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, "import cycle: " + " -> ".join(path + [m, n])
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_the_openai_client_loads_only_when_a_model_is_asked() -> None:
    """openai's types take a second to import: `--help` and every usage error answer without."""
    code = ("import sys, reviewbot.cli, reviewbot.commands.review, reviewbot.flow.service\n"
            "print('openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
