"""Threads as the inbox pipeline really makes them: a campaign sent by the sender worker, the lead's answers
ingested from a folder batch (`ingest_batch`), then read, labelled and answered through the API."""

from __future__ import annotations

import email
import email.policy
import re
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from html.parser import HTMLParser
from pathlib import Path

import httpx

from outreach_core.inbox.threads import get_thread
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import init_workspace
from tests.campaigns.helpers import add_lead
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.inbox.ingest import builtin_id, fetched, ingest, reply_to, sent_campaign
from tests.inbox.thread_seed import seed_message, seed_thread
from tests.mail_servers import SmtpServer, Users
from tests.mailboxes.helpers import seed_mailbox

API = "/api/v1"
LEAD = "ada.threads@lovelace.example"


def last_received(server: SmtpServer, address: str) -> EmailMessage:
    with server.lock:
        data = [m.data for m in server.messages if address in m.rcpt_tos][-1]
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


async def test_an_ingested_reply_is_a_thread_to_read_label_and_answer(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    sent = await sent_campaign(http, ws, server, mail_users, [LEAD], {LEAD: {"first_name": "Ada"}})
    first = sent.received[LEAD]
    answer = reply_to(first, "Sounds interesting. What does it cost?")
    assert await ingest(sent, fetched(answer, at=datetime.now(UTC))) == 1

    page = (await http.get(f"{API}/threads", headers=ws.headers)).json()
    [listed] = page["threads"]
    assert listed["lead"] == {"email": LEAD, "name": "Ada"} and listed["campaignId"] == sent.campaign_id
    assert (listed["kind"], listed["unread"], listed["messageCount"]) == ("reply", True, 1)
    assert listed["mailboxId"] == sent.mailbox_id and listed["subject"] == f"Re: {first['Subject']}"
    thread_id = listed["id"]

    thread = (await http.get(f"{API}/threads/{thread_id}", headers=ws.headers)).json()
    out, received = thread["messages"]
    assert (out["direction"], out["kind"], out["subject"]) == ("out", "campaign", str(first["Subject"]))
    assert (received["direction"], received["kind"]) == ("in", "reply")
    assert received["sendId"] == out["sendId"] == out["id"]
    assert received["text"].startswith("Sounds interesting. What does it cost?")

    # a person labels it; a later message from the lead does not change that label
    booked = await builtin_id(ws, "meeting_booked")
    patched = await http.patch(f"{API}/threads/{thread_id}", headers=ws.headers, json={"labelId": booked})
    assert patched.json()["labelSource"] == "manual" and patched.json()["unread"] is True
    read = await http.patch(f"{API}/threads/{thread_id}", headers=ws.headers, json={"unread": False})
    assert read.json()["unread"] is False
    again = reply_to(
        first, "I am out of the office until Monday.", headers={"Auto-Submitted": "auto-replied"}
    )
    assert await ingest(sent, fetched(again)) == 1
    now = (await http.get(f"{API}/threads/{thread_id}", headers=ws.headers)).json()
    assert now["label"]["id"] == booked and now["labelSource"] == "manual"
    assert now["unread"] is True and now["messageCount"] == 2

    # the answer goes out threaded on the lead's latest message, through the mailbox's server
    sent_reply = await http.post(
        f"{API}/threads/{thread_id}/reply", headers=ws.headers, json={"body": "Great, Tuesday then."}
    )
    assert sent_reply.status_code == 200, sent_reply.text
    body = sent_reply.json()
    assert body["sentFolder"].startswith("not appended: ")  # the seeded mailbox's IMAP is not reachable
    on_the_wire = last_received(server, LEAD)
    lead_messages = [email.message_from_bytes(x, policy=email.policy.default) for x in (answer, again)]
    assert on_the_wire["In-Reply-To"] == lead_messages[1]["Message-ID"]
    assert on_the_wire["References"].split() == [
        first["Message-ID"],
        lead_messages[0]["Message-ID"],
        lead_messages[1]["Message-ID"],
    ]
    assert on_the_wire["Subject"] == f"Re: {first['Subject']}"

    # the lead answers our reply: it lands in the same thread
    follow = reply_to(on_the_wire, "Tuesday works.")
    assert await ingest(sent, fetched(follow)) == 1
    final = (await http.get(f"{API}/threads", headers=ws.headers)).json()
    assert [t["id"] for t in final["threads"]] == [thread_id]
    kinds = [
        (m["direction"], m["kind"])
        for m in (await http.get(f"{API}/threads/{thread_id}", headers=ws.headers)).json()["messages"]
    ]
    assert kinds == [
        ("out", "campaign"),
        ("in", "reply"),
        ("in", "out_of_office"),
        ("out", "manual"),
        ("in", "reply"),
    ]


async def test_a_received_html_body_is_sanitized_before_it_is_shown(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    lead = "eve.html@html-corp.example"
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [lead])
    raw = email.message_from_bytes(reply_to(sent.received[lead], "Hi there"), policy=email.policy.SMTP)
    assert isinstance(raw, EmailMessage)
    raw.add_alternative(
        '<p>Hi <b>there</b></p><script>alert("x")</script><img src="https://x.example/a.png" '
        'onerror="alert(1)"><a href="javascript:alert(2)">click</a><table><tr><td>cell</td></tr></table>',
        subtype="html",
    )
    assert await ingest(sent, fetched(raw.as_bytes())) == 1
    [listed] = (await http.get(f"{API}/threads", headers=ws.headers)).json()["threads"]
    thread = (await http.get(f"{API}/threads/{listed['id']}", headers=ws.headers)).json()
    html = thread["messages"][-1]["html"]
    assert "<p>Hi <b>there</b></p>" in html and "<td>cell</td>" in html
    assert "script" not in html and "alert" not in html and "onerror" not in html


async def test_a_persons_reply_outranks_automatic_answers_and_an_unsubscribe_outranks_it(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    lead = "kai.kinds@kinds-corp.example"
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [lead])
    first = sent.received[lead]
    start = datetime.now(UTC)

    async def answer(n: int, text: str, **headers: str) -> None:
        raw = reply_to(first, text, headers=headers or None)
        assert await ingest(sent, fetched(raw, at=start + timedelta(minutes=n))) == 1

    async def listed(kind: str) -> list[str]:
        page = await http.get(f"{API}/threads", headers=ws.headers, params={"kind": kind})
        return [t["id"] for t in page.json()["threads"]]

    await answer(1, "I am out of the office until Monday.", **{"Auto-Submitted": "auto-replied"})
    [thread] = await listed("out_of_office")
    await answer(2, "Back now. Tell me more about it.")  # a person's reply replaces the automatic answer
    assert await listed("reply") == [thread] and await listed("out_of_office") == []
    await answer(3, "I am on vacation until Friday.", **{"Auto-Submitted": "auto-replied"})
    await answer(4, "Thanks for your email, we will get back to you.", **{"Auto-Submitted": "auto-replied"})
    # automatic answers after it never hide the conversation from ?kind=reply
    assert await listed("reply") == [thread]
    assert await listed("out_of_office") == [] and await listed("auto_reply") == []
    detail = (await http.get(f"{API}/threads/{thread}", headers=ws.headers)).json()
    assert detail["kind"] == "reply" and detail["messageCount"] == 4
    assert [m["kind"] for m in detail["messages"]] == [
        "campaign", "out_of_office", "reply", "out_of_office", "auto_reply"
    ]  # fmt: skip

    await answer(5, "Please remove me from your mailing list.")  # asking to stop outranks a reply
    assert await listed("unsubscribe_request") == [thread]
    await answer(6, "Sorry, one more question: do you ship to Norway?")  # it stays unsubscribed
    assert await listed("unsubscribe_request") == [thread] and await listed("reply") == []


class _Loads(HTMLParser):
    """What a browser or mail client rendering an HTML body fetches without a click: every URL in a
    resource attribute (src, srcset, poster, background, data, a stylesheet link) and in CSS `url(...)`."""

    RESOURCE = {"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc", "xlink:href"}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if not value:
                continue
            if name == "srcset":  # "url 2x, url 3x"
                self.urls += [part.split()[0] for part in value.split(",") if part.strip()]
            elif name in self.RESOURCE or (name == "href" and tag in ("link", "image", "use")):
                self.urls.append(value)
            elif name == "style":
                self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", value)

    def handle_data(self, data: str) -> None:  # a <style> block's url() and @import
        found = re.findall(r"url\(\s*['\"]?([^'\")]+)|@import\s+['\"]([^'\"]+)", data)
        self.urls += [url for pair in found for url in pair if url]


def remote_loads(markup: str) -> list[str]:
    """The URLs a client rendering `markup` would fetch from the network (inline cid:/data: ones excluded)."""
    parser = _Loads()
    parser.feed(markup)
    parser.close()
    return [u for u in parser.urls if not u.strip().lower().startswith(("cid:", "data:"))]


async def test_remote_content_in_a_received_html_body_is_blocked_inline_images_kept(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    lead = "pia.pixels@pixel-corp.example"
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [lead])
    raw = email.message_from_bytes(reply_to(sent.received[lead], "Sounds good"), policy=email.policy.SMTP)
    assert isinstance(raw, EmailMessage)
    pixel = "http://track.pixel-corp.example/open.gif?r=lead-7"
    html = (
        '<p>Sounds <b>good</b>, see <a href="https://pixel-corp.example/pricing">our prices</a>.</p>'
        f'<img src="{pixel}" width="1" height="1" alt="">'
        '<img src="https://cdn.pixel-corp.example/logo.png" alt="Pixel Corp" width="120">'
        '<img src="//cdn.pixel-corp.example/badge.png" alt="badge"><img src="banner.png" alt="banner">'
        '<img srcset="https://cdn.pixel-corp.example/logo@2x.png 2x" alt="hi-dpi">'
        '<table background="https://cdn.pixel-corp.example/bg.png"><tr><td '
        'style="background:url(https://cdn.pixel-corp.example/cell.png)">cell</td></tr></table>'
        '<link rel="stylesheet" href="https://cdn.pixel-corp.example/mail.css">'
        '<video poster="https://cdn.pixel-corp.example/p.png"></video>'
        '<iframe src="https://pixel-corp.example/frame"></iframe>'
        '<img src="cid:signature-logo@pixel-corp.example" alt="signature">'
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'
        'YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" alt="inline">'
    )
    raw.add_alternative(html, subtype="html")
    assert await ingest(sent, fetched(raw.as_bytes())) == 1
    [listed] = (await http.get(f"{API}/threads", headers=ws.headers)).json()["threads"]
    thread = (await http.get(f"{API}/threads/{listed['id']}", headers=ws.headers)).json()
    stored = thread["messages"][-1]["html"]

    assert remote_loads(stored) == []  # rendering it fetches nothing: the sender learns nothing
    assert "track.pixel-corp.example" not in stored
    assert 'src="cid:signature-logo@pixel-corp.example"' in stored  # inline images stay
    assert 'src="data:image/png;base64,iVBORw0KGgo' in stored
    assert 'alt="Pixel Corp"' in stored and "<td>cell</td>" in stored  # what the images were stays readable
    assert '<a href="https://pixel-corp.example/pricing"' in stored  # a link loads nothing until clicked


async def test_migration_0019_blocks_remote_images_in_html_stored_before(tmp_path: Path) -> None:
    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32))
    await migrate(rt.engine, "0018")
    made = await rt.system(init_workspace, email="o@example.com", name="O", workspace="Old", plan="growth")
    ws = WorkspaceHandle(rt, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", "o@example.com")
    box = await seed_mailbox(ws, "box@mail.test")
    lead = await add_lead(ws, "old.pixels@pixel-corp.example")
    thread = await seed_thread(ws, lead, box)
    # what the code of 0016 stored: nh3's defaults, which kept remote images (and dropped inline ones)
    stored_before = (
        '<p>Thanks</p><img src="http://track.pixel-corp.example/open.gif" alt=""><img alt="logo" '
        'src="https://cdn.pixel-corp.example/logo.png"><a href="https://pixel-corp.example" rel="noopener '
        'noreferrer">site</a>'
    )
    at = datetime.now(UTC)
    await seed_message(
        ws, thread, box, at=at, from_email="old.pixels@pixel-corp.example", html=stored_before, uid=1
    )
    await seed_message(
        ws, thread, box, at=at, from_email="old.pixels@pixel-corp.example", html="<p>no image</p>"
    )

    await migrate(rt.engine)
    detail = await rt.read(await ws.principal(), get_thread, thread)
    first, second = (m.html or "" for m in detail.messages)
    assert remote_loads(first) == [] and "track.pixel-corp.example" not in first
    assert (
        'alt="logo"' in first and '<a href="https://pixel-corp.example"' in first and "<p>Thanks</p>" in first
    )
    assert second == "<p>no image</p>"
    await rt.dispose()
