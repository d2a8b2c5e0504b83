"""CSV files as people have them: `outreach leads import` / `export` and the `import_leads_csv` tool.

Files are written here in the encodings and delimiters spreadsheets and CRMs produce; what the user sees is
checked where they see it: the leads listed by the API, the command's output, the exported file."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from outreach_core.imports.csv_rows import CsvProblem, read_csv
from outreach_core.kernel.settings import Settings
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import merge_imports
from tests.test_cli import OUTREACH, ROOT, _env, run_cli

ROWS = [
    ("ada@example.com", "Ada", "Lovelace", "Analytical Engines", "Zürich"),
    ("bob@example.org", "Bob", "", "Babbage & Co", "Málaga"),
]


def _file(encoding: str, delimiter: str, *, title: bool = False, bom: bool = False) -> bytes:
    out = io.StringIO()
    if title:
        out.write("Leads from the fair\r\n\r\n")
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(["E-mail", "First Name", "Surname", "Company Name", "City"])
    writer.writerows(ROWS)
    data = out.getvalue().encode(encoding)
    return ("\ufeff".encode(encoding) if bom else b"") + data


@pytest.mark.parametrize(
    ("encoding", "bom", "delimiter", "read_as"),
    [
        ("utf-8", False, ",", "utf-8"),
        ("utf-8", True, ";", "utf-8-sig"),
        ("utf-16", False, "\t", "utf-16"),  # Python's utf-16 writes a BOM
        ("utf-16-le", False, ",", "utf-16-le"),  # no BOM: recognised by its zero bytes
        ("latin-1", False, ";", "windows-1252"),
        ("cp1252", False, "|", "windows-1252"),
    ],
)
def test_encodings_and_delimiters_are_recognised(
    encoding: str, bom: bool, delimiter: str, read_as: str
) -> None:
    read = read_csv(_file(encoding, delimiter, title=encoding == "latin-1", bom=bom))
    assert (read.encoding, read.delimiter) == (read_as, delimiter)
    ada = {"email": "ada@example.com", "firstName": "Ada", "lastName": "Lovelace"}
    bob = {"email": "bob@example.org", "firstName": "Bob", "company": "Babbage & Co"}
    assert read.rows == [
        {**ada, "company": "Analytical Engines", "custom": {"City": "Zürich"}},
        {**bob, "custom": {"City": "Málaga"}},
    ]
    assert read.columns.header_line == (3 if encoding == "latin-1" else 1)


def test_map_overrides_full_names_and_rows_too_long_to_store() -> None:
    text = "Who,Contact,Job\nada@example.com,Ada King Lovelace,CEO\nbob@example.org,Bob,"
    text += "x" * 301 + "\n,,\n"
    read = read_csv(text.encode(), {"email": "who"})
    assert read.rows == [
        {"email": "ada@example.com", "firstName": "Ada", "lastName": "King Lovelace", "title": "CEO"}
    ]
    assert read.rejected == [(3, "title is longer than 300 characters")]  # the blank row is no row at all
    with pytest.raises(CsvProblem, match="--map phone=Tel: no column 'Tel'"):
        read_csv(text.encode(), {"email": "Who", "phone": "Tel"})
    with pytest.raises(CsvProblem, match="no header row naming an email column"):
        read_csv(b"Name,Phone\nAda,1\n")


async def _merged(http: httpx.AsyncClient, ws: WorkspaceHandle, import_id: str) -> dict[str, Any]:
    await merge_imports(ws)
    got = (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()
    assert got["queued"] == 0 and got["status"] != "importing", got
    return dict(got)


async def test_the_tool_imports_a_small_file_and_says_how_it_read_it(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    text = (
        _file("utf-8", ";").decode() + "not-an-address;X;;;\n" + "carl@example.net;Carl;;" + "c" * 301 + ";\n"
    )
    got = await http.post(
        "/api/v1/leads/import/csv", headers=ws.headers, json={"csv": text, "list": {"name": "Fair"}}
    )
    assert got.status_code == 200, got.text
    answer = got.json()
    assert answer["columns"] == {"email": "E-mail", "firstName": "First Name", "lastName": "Surname",
                                 "company": "Company Name"}  # fmt: skip
    assert answer["custom"] == ["City"] and answer["rejected"] == [
        {"line": 5, "reason": "company is longer than 300 characters"}
    ]
    done = await _merged(http, ws, answer["import"]["id"])
    assert (done["rows"], done["created"], done["invalid"]) == (4, 2, 2)
    listed = (
        await http.get("/api/v1/leads", headers=ws.headers, params={"sort": "email", "dir": "asc"})
    ).json()
    assert [lead["email"] for lead in listed["leads"]] == ["ada@example.com", "bob@example.org"]
    detail = (await http.get(f"/api/v1/leads/{listed['leads'][0]['id']}", headers=ws.headers)).json()
    assert detail["custom"] == {"City": "Zürich"} and [x["name"] for x in detail["lists"]] == ["Fair"]

    too_many = "Email\n" + "".join(f"p{i}@example.com\n" for i in range(5_001))
    refused = await http.post("/api/v1/leads/import/csv", headers=ws.headers, json={"csv": too_many})
    assert (refused.status_code, refused.json()["error"]["code"]) == (413, "payload_too_large")
    unknown = await http.post("/api/v1/leads/import/csv", headers=ws.headers, json={"csv": "Name\nAda\n"})
    assert unknown.status_code == 422 and unknown.json()["error"]["details"]["fields"][0]["path"] == "csv"


def _big_file(path: Path, rows: int) -> None:
    with path.open("w", newline="", encoding="utf-8-sig") as out:
        writer = csv.writer(out, delimiter=";")
        writer.writerow(["Email", "First Name", "Score"])
        writer.writerows((f"lead{i}@example.com", f"Lead {i}", i) for i in range(rows))


async def test_the_command_imports_resumes_after_a_kill_and_exports_it_back(
    settings: Settings, make_workspace: MakeWorkspace, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    ws = await make_workspace(plan="pro")  # room for 50,000 contacts
    source = tmp_path / "leads.csv"
    _big_file(source, 20_000)
    states = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(states)}
    args = ["leads", "import", str(source), "--workspace", ws.slug, "--list", "Big"]
    killed = subprocess.Popen(
        [*OUTREACH, *args],
        env=_env(settings, **env),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    for _ in range(3000):  # killed as soon as the service has its first chunk
        if list(states.glob("outreach/imports/*.json")) or killed.poll() is not None:
            break
        await asyncio.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.read()  # type: ignore[union-attr]
    saved = json.loads(next(states.glob("outreach/imports/*.json")).read_text())

    resumed = await asyncio.to_thread(run_cli, settings, *args, **env)
    assert resumed.returncode == 0, resumed.stderr
    finished = json.loads(resumed.stdout)
    assert finished["id"] == saved["importId"]  # the same import, continued
    assert (finished["rows"], finished["created"], finished["duplicates"]) == (20_000, 20_000, 0), finished
    assert "20,000 rows" in resumed.stderr and "stored" in resumed.stderr
    assert not list(states.glob("outreach/imports/*.json"))
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    assert stats["total"] == 20_000

    exported = tmp_path / "out.csv"
    done = await asyncio.to_thread(run_cli, settings, "leads", "export", "--workspace", ws.slug, "--list",
                                   "Big", str(exported))  # fmt: skip
    assert done.returncode == 0, done.stderr
    with exported.open(encoding="utf-8-sig", newline="") as back:
        rows = list(csv.DictReader(back))
    assert len(rows) == 20_000 and {r["email"] for r in rows} == {
        f"lead{i}@example.com" for i in range(20_000)
    }
    ada = next(r for r in rows if r["email"] == "lead7@example.com")
    assert (ada["firstName"], ada["Score"], ada["status"]) == ("Lead 7", "7", "active")


def test_the_command_says_what_is_wrong_with_a_file(settings: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "names.csv"
    bad.write_text("Name,Phone\nAda,1\n")
    done = run_cli(settings, "leads", "import", str(bad), "--workspace", "nowhere")
    assert done.returncode == 1 and "no header row naming an email column" in done.stderr
    assert "Traceback" not in done.stderr
    odd = run_cli(settings, "leads", "import", str(bad), "--workspace", "x", "--map", "email")
    assert odd.returncode == 2 and "field=Column pairs" in odd.stderr
    helped = run_cli(settings, "leads", "import", "--help")
    assert "skip" in helped.stdout and "update" in helped.stdout, helped.stdout
