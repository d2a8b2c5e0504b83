from __future__ import annotations

from outreach_core.endpoint import Endpoint
from outreach_core.mailboxes.oauth_connect import start_mailbox_oauth
from outreach_core.mailboxes.operations import (
    create_mailbox,
    delete_mailbox,
    detect_mailbox,
    get_mailbox,
    import_mailboxes,
    list_mailboxes,
    retest_mailbox,
    test_mailbox,
    update_mailbox,
)
from outreach_core.mailboxes.prepare import (
    prepare_create_mailbox,
    prepare_detect_mailbox,
    prepare_import_mailboxes,
    prepare_retest_mailbox,
    prepare_test_mailbox,
    prepare_update_mailbox,
)
from outreach_core.mailboxes.schemas import (
    CreateMailboxIn,
    CreateMailboxOut,
    DetectOut,
    DetectQuery,
    ImportMailboxesIn,
    ImportMailboxesOut,
    LoginTest,
    Mailbox,
    MailboxList,
    MailboxOAuthUrl,
    RetestOut,
    StartMailboxOAuthIn,
    UpdateMailboxIn,
    UpdateMailboxOut,
)
from outreach_core.wire import Ok

# `GET /mailboxes/detect` comes before `GET /mailboxes/{id}`: routes match in this order.
ENDPOINTS = (
    Endpoint(
        "GET",
        "/mailboxes",
        list_mailboxes,
        MailboxList,
        read_only=True,
        tag="mailboxes",
    ),
    Endpoint(
        "GET",
        "/mailboxes/detect",
        detect_mailbox,
        DetectOut,
        query=DetectQuery,
        read_only=True,
        prepare=prepare_detect_mailbox,
        tag="mailboxes",
    ),
    Endpoint("GET", "/mailboxes/{id}", get_mailbox, Mailbox, read_only=True, tag="mailboxes"),
    Endpoint(
        "POST",
        "/mailboxes",
        create_mailbox,
        CreateMailboxOut,
        body=CreateMailboxIn,
        prepare=prepare_create_mailbox,
        tag="mailboxes",
    ),
    Endpoint(
        "POST",
        "/mailboxes/test",
        test_mailbox,
        LoginTest,
        body=CreateMailboxIn,
        read_only=True,
        prepare=prepare_test_mailbox,
        tag="mailboxes",
    ),
    Endpoint(
        "POST",
        "/mailboxes/import",
        import_mailboxes,
        ImportMailboxesOut,
        body=ImportMailboxesIn,
        prepare=prepare_import_mailboxes,
        tag="mailboxes",
    ),
    # Google and Microsoft mailboxes over OAuth (issue 32 item 3)
    Endpoint(
        "POST",
        "/mailboxes/oauth/start",
        start_mailbox_oauth,
        MailboxOAuthUrl,
        body=StartMailboxOAuthIn,
        tag="mailboxes",
    ),
    Endpoint(
        "PATCH",
        "/mailboxes/{id}",
        update_mailbox,
        UpdateMailboxOut,
        body=UpdateMailboxIn,
        prepare=prepare_update_mailbox,
        tag="mailboxes",
    ),
    Endpoint(
        "DELETE",
        "/mailboxes/{id}",
        delete_mailbox,
        Ok,
        destructive=True,
        tag="mailboxes",
    ),
    Endpoint(
        "POST",
        "/mailboxes/{id}/test",
        retest_mailbox,
        RetestOut,
        prepare=prepare_retest_mailbox,
        tag="mailboxes",
    ),
)
