"""Packaging as a self-hoster meets it (issue 30, items 3, 4 and 7): `.env.example` generated from the
settings model, runtime dependencies declared exactly as imported, `make serve` without the dev tools,
the Dockerfile, compose file and Caddyfile, and the license."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from outreach_app.ops.settings_example import env_example
from outreach_core.kernel.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_PACKAGES = ("outreach_core", "http_api", "mcp_server", "workers", "outreach_app")
DECLARED_BUT_NOT_IMPORTED = {
    "aiosqlite": "SQLAlchemy's SQLite driver, chosen by the database URL (sqlite+aiosqlite://)",
    "asyncpg": "SQLAlchemy's PostgreSQL driver, chosen by the database URL (postgresql+asyncpg://)",
    "httpx": "the HTTP client of Stripe's library (stripe.HTTPXClient in outreach_app/adapters)",
    "httptools": "uvicorn's C HTTP parser, picked by uvicorn itself when installed (outreach serve)",
    "sniffio": "httpcore asks it which event loop runs on every request",
    "tzdata": "time zone data for zoneinfo where the system has none (slim containers)",
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_env_example_is_what_the_command_prints() -> None:
    committed = (ROOT / ".env.example").read_text()
    assert committed == env_example(), "run `outreach settings example > .env.example`"
    for name in Settings.model_fields:
        assert f"# OUTREACH_{name.upper()}=" in committed


def test_the_settings_command_prints_the_example() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "outreach_app", "settings", "example"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == (ROOT / ".env.example").read_text()


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> files importing it, over the runtime packages (tests and bench excluded)."""
    own = set(RUNTIME_PACKAGES)
    found: dict[str, set[str]] = {}
    for package in RUNTIME_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_runtime_dependencies_are_declared_exactly_as_used() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_norm(re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0]) for d in project["dependencies"]}
    distributions = packages_distributions()
    imported: dict[str, str] = {}
    for module, files in _third_party_imports().items():
        for dist in distributions.get(module, [module]):
            imported[_norm(dist)] = f"{module} ({sorted(files)[0]})"
    undeclared = {d: where for d, where in imported.items() if d not in declared}
    assert undeclared == {}, "imported by the service but not a runtime dependency (make serve lacks it)"
    unused = declared - set(imported) - set(DECLARED_BUT_NOT_IMPORTED)
    assert unused == set(), "declared but never imported: remove, or say why in DECLARED_BUT_NOT_IMPORTED"
    assert set(DECLARED_BUT_NOT_IMPORTED) <= declared
    dev_tools = {
        _norm(re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0]) for d in project["optional-dependencies"]["dev"]
    }
    assert {"pytest", "ruff", "mypy"} <= dev_tools and not dev_tools & declared


def test_make_serve_installs_only_what_serving_needs() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "-B", "serve"], cwd=ROOT, capture_output=True, text=True, timeout=30
    ).stdout
    installs = [line for line in plan.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all("-q -e ." in line and "[dev]" not in line for line in installs), plan
    assert "outreach: installing" in plan  # says what it does instead of pip's pages
    tests = subprocess.run(["make", "-n", "-B", "test"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert '-e ".[dev]"' in tests.stdout


def test_license_is_stated() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    assert "MIT" in (ROOT / "README.md").read_text().split("## License", 1)[1]
