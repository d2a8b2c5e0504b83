"""The pure parts of tracking: links rewritten and signed, targets read back, hits flagged."""

from __future__ import annotations

import datetime as dt
import re
import stat
from html import unescape
from pathlib import Path

import pytest

from outreach_core.kernel.settings import Settings
from outreach_core.tracking.journal import Journal
from outreach_core.tracking.rewrite import Tracking, track_email
from outreach_core.tracking.rules import Hit, flag_of, parse_networks
from outreach_core.tracking.tokens import (
    NotATrackingToken,
    click_url,
    location,
    open_url,
    read_click,
    read_open,
)

KEY = "current-key"
BASE = "https://links.example.com"
UNSUBSCRIBE = "https://links.example.com/u/abc.def"
SENT = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


def tracking(**overrides: object) -> Tracking:
    values: dict[str, object] = {
        "clicks": True,
        "opens": True,
        "secret": KEY,
        "base_url": BASE,
        "send_id": "snd_1",
        "unsubscribe_url": UNSUBSCRIBE,
    }
    values.update(overrides)
    return Tracking(**values)  # type: ignore[arg-type]


def token(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_every_web_link_is_signed_and_reads_back_to_its_target() -> None:
    markup = (
        '<p><a href="https://a.example/x?y=1&amp;z=2" rel="noopener">A</a> '
        '<a href="mailto:s@a.example">mail</a> <a href="#top">top</a> <a href="tel:+1555">call</a> '
        f'<a href="{UNSUBSCRIBE}">unsubscribe</a> <a href="HTTP://B.example/">B</a></p>'
    )
    text = f"A (https://a.example/x?y=1&z=2). See https://c.example/wiki/A_(b), or {UNSUBSCRIBE}"
    html_out, text_out = track_email(markup, text, tracking())
    assert 'href="mailto:s@a.example"' in html_out and 'href="#top"' in html_out
    assert 'href="tel:+1555"' in html_out and f'href="{UNSUBSCRIBE}"' in html_out
    assert 'rel="noopener"' in html_out and ">A</a>" in html_out  # the link text is untouched
    tracked = [unescape(h) for h in re.findall(r'href="([^"]*/l/[^"]*)"', html_out)]
    assert [read_click([KEY], token(u)).url for u in tracked] == [
        "https://a.example/x?y=1&z=2",
        "HTTP://B.example/",
    ]
    assert all(read_click([KEY], token(u)).send_id == "snd_1" for u in tracked)
    # the text part: punctuation after a URL stays outside it, a URL's own parentheses inside
    assert text_out.startswith(f"A ({tracked[0]}). See {BASE}/l/")
    wiki = text_out.split("See ", 1)[1].split(",", 1)[0]
    assert read_click([KEY], token(wiki)).url == "https://c.example/wiki/A_(b)"
    assert text_out.endswith(f", or {UNSUBSCRIBE}")
    assert html_out.count("<img") == 1 and f'src="{BASE}/o/' in html_out


def test_flags_off_change_nothing_and_one_flag_does_its_part_only() -> None:
    markup, text = '<p><a href="https://a.example/">A</a></p>', "https://a.example/"
    assert track_email(markup, text, tracking(clicks=False, opens=False)) == (markup, text)
    opened, same_text = track_email(markup, text, tracking(clicks=False))
    assert same_text == text and 'href="https://a.example/"' in opened and "/o/" in opened
    clicked, _ = track_email(markup, text, tracking(opens=False))
    assert "<img" not in clicked and "/l/" in clicked


def test_tokens_are_bound_to_their_purpose_and_key_and_survive_a_rotation() -> None:
    click = token(click_url(KEY, BASE, "snd_1", "https://a.example/"))
    pixel = token(open_url(KEY, BASE, "snd_1"))
    assert read_open(["new-key", KEY], pixel) == "snd_1"  # after a rotation, the previous key still verifies
    assert read_click(["new-key", KEY], click).url == "https://a.example/"
    for wrong in (
        lambda: read_click([KEY], pixel),
        lambda: read_open([KEY], click),
        lambda: read_click(["other"], click),
        lambda: read_click([KEY], click[:-1]),
        lambda: read_click([KEY], click + "A"),
        lambda: read_click([KEY], ""),
        lambda: read_click([KEY], "a" * 20_000),
    ):
        with pytest.raises(NotATrackingToken):
            wrong()
    # a signed target that is not a web URL is never redirected to
    javascript = token(click_url(KEY, BASE, "snd_1", "javascript:alert(1)"))
    with pytest.raises(NotATrackingToken):
        read_click([KEY], javascript)
    assert read_open([KEY], token(open_url(KEY, BASE, None))) is None  # a preview's pixel


def test_location_header_cannot_be_split_and_is_ascii() -> None:
    assert location("https://a.example/ü x\r\nSet-Cookie: a=b") == (
        "https://a.example/%C3%BC%20x%0D%0ASet-Cookie:%20a=b"
    )


def hit(kind: str = "click", *, after_s: float = 3600, agent: str = "Mozilla/5.0 (X11) Firefox/125.0",
        head: bool = False, address: str | None = "203.0.113.9") -> Hit:  # fmt: skip
    return Hit(kind, "snd_1", SENT + dt.timedelta(seconds=after_s), None, head, agent, address)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("the_hit", "flag"),
    [
        (hit(), None),
        (hit("open"), None),
        (
            hit(
                "open",
                agent="Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImage"
                "Proxy)",
            ),
            None,
        ),
        (hit(head=True), "head"),
        (hit("open", head=True), "head"),
        (hit(agent="Mozilla/5.0 (compatible; bingbot/2.0)"), "scanner"),
        (hit(agent="Barracuda Sentinel (EE)"), "scanner"),
        (hit(agent=""), "scanner"),
        (hit(agent="curl/8.5.0"), "scanner"),
        (hit(address="198.51.100.7"), "scanner"),  # in the configured scanner networks
        (hit("open", agent="Mozilla/5.0"), "apple_privacy"),
        (hit("open", address="17.58.1.2"), "apple_privacy"),
        (hit(after_s=4), "too_soon"),
        (hit(after_s=-1), "too_soon"),
        (hit("open", after_s=4), None),  # opens are not judged by time
    ],
)
def test_who_counts_as_a_person(the_hit: Hit, flag: str | None) -> None:
    networks = parse_networks("198.51.100.0/24, 2001:db8::/32")
    assert flag_of(the_hit, SENT, window_s=10, scanner_networks=networks) == flag


def test_the_journal_sits_beside_a_sqlite_database_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite = f"sqlite+aiosqlite:///{tmp_path}/o.db"
    postgres = "postgresql+asyncpg://u@127.0.0.1/db"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert Settings(database_url=sqlite).tracking_journal_dir == tmp_path / "tracking-journal"
    assert Settings(database_url="sqlite+aiosqlite:///:memory:").tracking_journal_dir is None
    assert Settings(database_url=sqlite, tracking_journal="off").tracking_journal_dir is None
    assert Settings(database_url=postgres, tracking_journal="off").tracking_journal_dir is None
    assert Settings(
        database_url=postgres, tracking_journal="/var/lib/outreach/j"
    ).tracking_journal_dir == Path("/var/lib/outreach/j")


def test_with_postgresql_each_database_has_its_own_journal_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auto` with PostgreSQL: one directory per database under $XDG_STATE_HOME/outreach/tracking-journal,
    so that the servers of two databases on one machine never replay each other's hits; the password is
    not part of the name (a rotated password keeps the journal), the driver spelling neither (normalised)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    journals = tmp_path / "state" / "outreach" / "tracking-journal"

    def auto(url: str) -> Path:
        directory = Settings(database_url=url).tracking_journal_dir
        assert directory is not None and directory.parent == journals
        assert re.fullmatch(r"[0-9a-f]{16}", directory.name)
        return directory

    one_url = "postgresql+asyncpg://outreach:secret@db.internal:5432/outreach"
    one = auto(one_url)
    assert auto("postgresql+asyncpg://outreach:rotated@db.internal:5432/outreach") == one
    assert auto("postgres://outreach:secret@db.internal:5432/outreach") == one
    others = [
        auto("postgresql+asyncpg://outreach:secret@db.internal:5432/outreach_staging"),
        auto("postgresql+asyncpg://outreach:secret@db2.internal:5432/outreach"),
        auto("postgresql+asyncpg://other:secret@db.internal:5432/outreach"),
        auto("postgresql+asyncpg://outreach:secret@db.internal:5433/outreach"),
    ]
    assert len({one, *others}) == 5
    assert "secret" not in str(one)

    # without XDG_STATE_HOME (or with a relative one, which the XDG specification says to ignore):
    # ~/.local/state
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in ("", "relative/state"):
        monkeypatch.setenv("XDG_STATE_HOME", unset)
        directory = Settings(database_url=one_url).tracking_journal_dir
        assert directory == tmp_path / "home/.local/state/outreach/tracking-journal" / one.name


def test_a_new_journal_directory_is_private_to_its_user(tmp_path: Path) -> None:
    directory = tmp_path / "state" / "outreach" / "tracking-journal" / "0123456789abcdef"
    journal = Journal(directory)
    for created in (directory, *list(directory.parents)[:3]):
        assert stat.S_IMODE(created.stat().st_mode) == 0o700, created
    journal.close()
