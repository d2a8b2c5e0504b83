"""Reading IMAP responses as aioimaplib hands them over, including what Dovecot does not send but other
servers do (items in another order, literal folder names, SPECIAL-USE flags, unreadable answers)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from outreach_app.adapters import imap_parse as parse


def test_fetch_records_in_any_item_order_and_unreadable_ones() -> None:
    lines: list[bytes | bytearray] = [
        b'1 FETCH (UID 7 INTERNALDATE "24-Nov-2026 10:00:00 +0100" RFC822.SIZE 9 BODY[]<0> {5}',
        bytearray(b"Hello"),
        b")",
        b"2 FETCH (BODY[]<0> {3}",
        bytearray(b"abc"),
        b' UID 8 RFC822.SIZE 3000000 INTERNALDATE " 4-Nov-2026 23:59:59 -0800")',
        b"3 FETCH (FLAGS (\\Seen))",  # unsolicited: another client changed flags
        b'4 FETCH (UID 9 INTERNALDATE "garbage" RFC822.SIZE 1 BODY[]<0> {1}',
        bytearray(b"x"),
        b")",
    ]
    records = parse.fetch_records(lines)
    assert [r.uid() for r in records] == [7, 8, None, 9]
    assert records[0].body == b"Hello" and records[0].size() == 9
    assert records[0].arrived_at() == datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    assert records[1].body == b"abc" and records[1].size() == 3000000
    assert records[1].arrived_at() == datetime(2026, 11, 5, 7, 59, 59, tzinfo=UTC)
    assert records[3].arrived_at() is None  # logged and skipped by the session


def test_search_results_without_pushed_updates() -> None:
    assert parse.search_uids([b"3 9 4", b"12 EXISTS", b"SEARCH 15"]) == [3, 4, 9, 15]
    assert parse.search_uids([]) == []


def test_junk_folder_by_special_use_then_by_usual_names() -> None:
    listed = parse.list_folders(
        [
            b'(\\HasNoChildren) "/" INBOX',
            b'(\\HasNoChildren) "/" "Spam"',
            b'(\\HasNoChildren \\Junk) "/" {9}',
            bytearray(b"Unwanted!"),
            b'(\\Noselect \\HasChildren) "/" "[Gmail]"',
        ]
    )
    assert [f.name for f in listed] == ["INBOX", "Spam", "Unwanted!", "[Gmail]"]
    assert parse.junk_folder(listed) == "Unwanted!"
    assert parse.junk_folder(listed[:2]) == "Spam"
    gmail = parse.list_folders([b'LIST (\\HasNoChildren) "/" "[Gmail]/Spam"'])
    assert parse.junk_folder(gmail) == "[Gmail]/Spam"
    assert parse.junk_folder(parse.list_folders([b'(\\HasNoChildren) "." "INBOX.Sent"'])) is None


def test_sets_dates_and_quoting() -> None:
    assert parse.uid_set([5, 1, 2, 3, 9, 10]) == "1:3,5,9:10"
    assert parse.search_date(date(2026, 3, 4)) == "4-Mar-2026"
    assert parse.quote('Junk "old" \\ x') == '"Junk \\"old\\" \\\\ x"'
    assert parse.response_code([b"OK [UIDVALIDITY 1795] ok", b"OK [UIDNEXT 12] next"], b"UIDNEXT") == 12
    assert parse.exists_count([b"2 EXISTS", b"0 RECENT", b"5 EXISTS"]) == 5
