"""Core OAuth operations against the real database: codes, tokens, rotation, revocation, connected apps."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from outreach_core.auth.authenticate import authenticate_bearer, authenticate_oauth
from outreach_core.kernel.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from outreach_core.kernel.runtime import Runtime
from outreach_core.oauth import server as core
from outreach_core.oauth.endpoints import ENDPOINTS
from outreach_core.oauth.operations import disconnect_app, list_connected_apps
from outreach_core.oauth.schemas import IssuedTokens
from outreach_core.oauth.server import InvalidGrant
from tests.conftest import MakeWorkspace
from tests.oauth.helpers import REDIRECT_URI, client_info, connect, issue_code, pkce_pair, register, run_at


async def assert_access_works(runtime: Runtime, token: str) -> None:
    principal = await runtime.system_read(authenticate_oauth, token, runtime.settings.mcp_resource_url)
    assert principal.auth == "oauth"


async def assert_access_refused(runtime: Runtime, token: str) -> None:
    with pytest.raises(Unauthorized):
        await runtime.system_read(authenticate_oauth, token, runtime.settings.mcp_resource_url)


# --- codes --------------------------------------------------------------------------------------------------


async def test_code_is_stored_with_pkce_data_and_is_single_use(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    _, challenge = pkce_pair()
    code = await issue_code(runtime, ws.api_key, client_id, challenge)
    assert code.startswith("oac_") and len(code) >= 40  # 256 random bits

    record = await runtime.system_read(core.load_authorization_code, client_id, code)
    assert record is not None
    assert (record.code_challenge, record.redirect_uri, record.redirect_uri_explicit) == (
        challenge,
        REDIRECT_URI,
        True,
    )
    assert record.resource == runtime.settings.mcp_resource_url
    assert record.user_id == ws.user_id
    assert record.expires_at - runtime.ports.clock.now() <= timedelta(minutes=5)

    tokens = await runtime.system(core.exchange_authorization_code, client_id, code)
    assert tokens.access_token.startswith("oat_") and tokens.refresh_token.startswith("ort_")
    assert tokens.expires_in == runtime.settings.oauth_access_ttl_s
    await assert_access_works(runtime, tokens.access_token)

    # Spent: not loadable, and a second exchange is refused.
    assert await runtime.system_read(core.load_authorization_code, client_id, code) is None
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_authorization_code, client_id, code)


async def test_replayed_code_revokes_the_tokens_it_gave(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    code = await issue_code(runtime, ws.api_key, client_id)
    tokens = await runtime.system(core.exchange_authorization_code, client_id, code)

    assert await runtime.system(core.detect_code_replay, client_id, code) is True
    await assert_access_refused(runtime, tokens.access_token)
    assert await runtime.system_read(core.load_refresh_token, client_id, tokens.refresh_token) is None
    # An unknown or unspent code is not a replay.
    assert await runtime.system(core.detect_code_replay, client_id, "oac_unknown") is False
    fresh = await issue_code(runtime, ws.api_key, client_id)
    assert await runtime.system(core.detect_code_replay, client_id, fresh) is False


async def test_expired_code_is_refused(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    code = await issue_code(runtime, ws.api_key, client_id)
    later = runtime.ports.clock.now() + timedelta(minutes=5, seconds=1)
    assert await run_at(runtime, later, core.load_authorization_code, client_id, code) is None
    with pytest.raises(InvalidGrant):
        await run_at(runtime, later, core.exchange_authorization_code, client_id, code)


async def test_code_of_another_client_is_refused(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    other_client = await register(runtime, "Other App")
    code = await issue_code(runtime, ws.api_key, client_id)
    assert await runtime.system_read(core.load_authorization_code, other_client, code) is None
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_authorization_code, other_client, code)
    # The rightful client can still use it.
    await runtime.system(core.exchange_authorization_code, client_id, code)


async def test_consent_needs_a_valid_api_key(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    with pytest.raises(Unauthorized):
        await issue_code(runtime, "osk_" + "x" * 43, client_id)
    with pytest.raises(Unauthorized):
        await issue_code(runtime, "not a key", client_id)
    with pytest.raises(InvalidInput):
        await issue_code(runtime, ws.api_key, client_id, challenge="too-short")


async def test_consenting_again_reuses_the_connection(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    principal = await ws.principal()
    client_id = await register(runtime)
    first = await connect(runtime, ws.api_key, client_id)
    second = await connect(runtime, ws.api_key, client_id)
    assert first.grant_id == second.grant_id
    apps = await runtime.read(principal, list_connected_apps)
    assert [a.id for a in apps] == [first.grant_id]


async def test_code_of_a_disconnected_app_is_refused(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    tokens = await connect(runtime, ws.api_key, client_id)
    code = await issue_code(runtime, ws.api_key, client_id)  # same grant
    await runtime.execute(await ws.principal(), disconnect_app, tokens.grant_id)
    assert await runtime.system_read(core.load_authorization_code, client_id, code) is None
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_authorization_code, client_id, code)


# --- tokens -------------------------------------------------------------------------------------------------


async def test_refresh_rotates_and_the_old_refresh_token_is_refused(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    first = await connect(runtime, ws.api_key, client_id)

    record = await runtime.system_read(core.load_refresh_token, client_id, first.refresh_token)
    assert record is not None and record.grant_id == first.grant_id
    assert record.resource == runtime.settings.mcp_resource_url
    assert await runtime.system_read(core.load_refresh_token, "another-client", first.refresh_token) is None

    second = await runtime.system(core.exchange_refresh_token, client_id, first.refresh_token)
    assert second.grant_id == first.grant_id
    assert {second.access_token, second.refresh_token}.isdisjoint({first.access_token, first.refresh_token})
    await assert_access_works(runtime, second.access_token)

    assert await runtime.system_read(core.load_refresh_token, client_id, first.refresh_token) is None
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_refresh_token, client_id, first.refresh_token)
    third = await runtime.system(core.exchange_refresh_token, client_id, second.refresh_token)
    await assert_access_works(runtime, third.access_token)


async def test_reuse_of_a_rotated_refresh_token_revokes_the_grant_tokens(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    first = await connect(runtime, ws.api_key, client_id)
    second = await runtime.system(core.exchange_refresh_token, client_id, first.refresh_token)

    # Within the grace window (a client refreshing twice at once) the reuse is refused without alarm.
    assert await runtime.system(core.detect_refresh_token_reuse, client_id, first.refresh_token) is False
    await assert_access_works(runtime, second.access_token)

    later = runtime.ports.clock.now() + core.REFRESH_REUSE_GRACE + timedelta(seconds=1)
    assert (
        await run_at(runtime, later, core.detect_refresh_token_reuse, client_id, first.refresh_token) is True
    )
    await assert_access_refused(runtime, second.access_token)
    assert await runtime.system_read(core.load_refresh_token, client_id, second.refresh_token) is None


async def test_expired_tokens_are_refused(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    tokens = await connect(runtime, ws.api_key, client_id)
    resource = runtime.settings.mcp_resource_url
    after_access = runtime.ports.clock.now() + timedelta(seconds=runtime.settings.oauth_access_ttl_s + 1)
    with pytest.raises(Unauthorized):
        await run_at(runtime, after_access, authenticate_oauth, tokens.access_token, resource)
    after_refresh = runtime.ports.clock.now() + timedelta(seconds=runtime.settings.oauth_refresh_ttl_s + 1)
    assert (
        await run_at(runtime, after_refresh, core.load_refresh_token, client_id, tokens.refresh_token) is None
    )
    with pytest.raises(InvalidGrant):
        await run_at(runtime, after_refresh, core.exchange_refresh_token, client_id, tokens.refresh_token)


async def test_access_tokens_are_bound_to_the_mcp_resource(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    tokens = await connect(runtime, ws.api_key, client_id)
    with pytest.raises(Unauthorized):
        await runtime.system_read(authenticate_oauth, tokens.access_token, "https://elsewhere.example/mcp")
    # Without an OAuth resource (the REST API), an access token is not accepted at all; API keys are.
    with pytest.raises(Unauthorized):
        await runtime.system_read(authenticate_bearer, tokens.access_token)
    assert (await runtime.system_read(authenticate_bearer, ws.api_key)).auth == "api_key"


async def test_revoking_one_token_revokes_every_token_of_the_grant(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    first = await connect(runtime, ws.api_key, client_id)
    second = await connect(runtime, ws.api_key, client_id)

    await runtime.system(core.revoke_token, first.refresh_token)
    for tokens in (first, second):
        await assert_access_refused(runtime, tokens.access_token)
        assert await runtime.system_read(core.load_refresh_token, client_id, tokens.refresh_token) is None
    # The connection stays; consenting again works without a new grant.
    apps = await runtime.read(await ws.principal(), list_connected_apps)
    assert [a.id for a in apps] == [first.grant_id]
    again = await connect(runtime, ws.api_key, client_id)
    assert again.grant_id == first.grant_id
    await assert_access_works(runtime, again.access_token)
    await runtime.system(core.revoke_token, "oat_unknown")  # unknown tokens are ignored


# --- connected apps -----------------------------------------------------------------------------------------


async def test_disconnect_revokes_every_token_at_once(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    first = await connect(runtime, ws.api_key, client_id)
    second = await connect(runtime, ws.api_key, client_id)
    rotated = await runtime.system(core.exchange_refresh_token, client_id, second.refresh_token)
    principal = await ws.principal()

    await runtime.execute(principal, disconnect_app, first.grant_id)

    for tokens in (first, rotated):
        await assert_access_refused(runtime, tokens.access_token)
        assert await runtime.system_read(core.load_refresh_token, client_id, tokens.refresh_token) is None
        with pytest.raises(InvalidGrant):
            await runtime.system(core.exchange_refresh_token, client_id, tokens.refresh_token)
    await assert_access_refused(runtime, second.access_token)
    assert await runtime.read(principal, list_connected_apps) == []
    with pytest.raises(NotFound):  # already disconnected
        await runtime.execute(principal, disconnect_app, first.grant_id)
    # Reconnecting creates a new connection.
    again = await connect(runtime, ws.api_key, client_id)
    assert again.grant_id != first.grant_id
    await assert_access_works(runtime, again.access_token)


async def test_list_shows_everyones_apps_and_which_are_mine(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    named = await register(runtime, "Claude Desktop", client_uri="https://claude.ai/")
    unnamed = await register(runtime, None)
    owners_app = await connect(runtime, owner.api_key, named)
    members_app = await connect(runtime, member.api_key, unnamed)

    as_owner = await runtime.read(await owner.principal(), list_connected_apps)
    as_member = await runtime.read(await member.principal(), list_connected_apps)
    assert [a.id for a in as_owner] == [members_app.grant_id, owners_app.grant_id]  # newest first
    assert [a.id for a in as_member] == [a.id for a in as_owner]
    assert [a.mine for a in as_owner] == [False, True]
    assert [a.mine for a in as_member] == [True, False]

    newest, oldest = (a.model_dump(mode="json", by_alias=True) for a in as_owner)
    assert newest["name"] == unnamed and newest["uri"] is None
    assert newest["user"]["id"] == member.user_id and newest["user"]["name"]
    assert oldest["name"] == "Claude Desktop" and oldest["uri"] == "https://claude.ai/"
    assert set(oldest) == {"id", "name", "uri", "user", "connectedAt", "lastUsedAt", "mine"}
    assert oldest["connectedAt"].endswith("Z")

    # Using the token shows up as lastUsedAt at once.
    await assert_access_works(runtime, owners_app.access_token)
    listed = {a.id: a for a in await runtime.read(await owner.principal(), list_connected_apps)}
    assert listed[owners_app.grant_id].last_used_at is not None

    # Other workspaces see none of it.
    stranger = await make_workspace()
    assert await runtime.read(await stranger.principal(), list_connected_apps) == []


async def test_member_cannot_disconnect_another_members_app(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    other_member = await owner.add_member("member")
    admin = await owner.add_member("admin")
    client_id = await register(runtime)
    owners_app = await connect(runtime, owner.api_key, client_id)
    other_members_app = await connect(runtime, other_member.api_key, client_id)
    members_app = await connect(runtime, member.api_key, client_id)
    member_principal = await member.principal()

    for grant in (owners_app, other_members_app):
        with pytest.raises(Forbidden) as refused:
            await runtime.execute(member_principal, disconnect_app, grant.grant_id)
        assert refused.value.status == 403
        await assert_access_works(runtime, grant.access_token)

    await runtime.execute(member_principal, disconnect_app, members_app.grant_id)  # own app: allowed
    await assert_access_refused(runtime, members_app.access_token)
    await runtime.execute(await admin.principal(), disconnect_app, other_members_app.grant_id)
    await assert_access_refused(runtime, other_members_app.access_token)
    admins_app = await connect(runtime, admin.api_key, client_id)
    await runtime.execute(await owner.principal(), disconnect_app, admins_app.grant_id)
    await assert_access_refused(runtime, admins_app.access_token)
    await assert_access_works(runtime, owners_app.access_token)


async def test_removed_member_cannot_get_or_refresh_tokens(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    from outreach_core.workspace.operations import list_members, remove_member

    owner = await make_workspace()
    member = await owner.add_member("member")
    client_id = await register(runtime)
    tokens = await connect(runtime, member.api_key, client_id)
    code = await issue_code(runtime, member.api_key, client_id)
    owner_principal = await owner.principal()
    members = await runtime.read(owner_principal, list_members)
    member_id = next(m.id for m in members.members if m.user_id == member.user_id)
    await runtime.execute(owner_principal, remove_member, member_id)

    await assert_access_refused(runtime, tokens.access_token)
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_refresh_token, client_id, tokens.refresh_token)
    with pytest.raises(InvalidGrant):
        await runtime.system(core.exchange_authorization_code, client_id, code)
    assert await runtime.read(owner_principal, list_connected_apps) == []

    # Adding the person back does not bring their old tokens back to life.
    from outreach_core.workspace.setup import add_member

    await runtime.system(add_member, workspace=owner.workspace_id, email=member.email, name="Back")
    await assert_access_refused(runtime, tokens.access_token)


# --- registration -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("redirect_uris", ["http://evil.example/cb"], "redirect_uris[0]"),
        ("redirect_uris", ["javascript:alert(1)"], "redirect_uris[0]"),
        ("redirect_uris", ["https://app.example/cb#frag"], "redirect_uris[0]"),
        ("redirect_uris", ["/relative"], "redirect_uris[0]"),
        ("redirect_uris", [], "redirect_uris"),
        ("client_name", "x" * 201, "client_name"),
        ("client_uri", "https://a.example/" + "x" * 2000, "client_uri"),
    ],
)
async def test_registration_refuses_bad_metadata(
    runtime: Runtime, field: str, value: object, path: str
) -> None:
    info = client_info()
    info[field] = value
    with pytest.raises(InvalidInput) as refused:
        await runtime.system(core.register_client, info)
    assert refused.value.details["fields"][0]["path"] == path
    assert await runtime.system_read(core.get_client, info["client_id"]) is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1:33418/callback",
        "http://localhost/cb",
        "http://[::1]:8080/cb",
        "https://app.example/oauth/callback",
        "cursor://anysphere.cursor-retrieval/oauth/callback",
    ],
)
async def test_registration_accepts_usual_redirect_uris(runtime: Runtime, uri: str) -> None:
    info = client_info(redirect_uris=[uri])
    await runtime.system(core.register_client, info)
    assert await runtime.system_read(core.get_client, info["client_id"]) == info


# --- concurrency and housekeeping ---------------------------------------------------------------------------


async def test_concurrent_exchanges_of_one_code_yield_one_pair(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    code = await issue_code(runtime, ws.api_key, client_id)
    results = await asyncio.gather(
        *(runtime.system(core.exchange_authorization_code, client_id, code) for _ in range(4)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, IssuedTokens) for r in results) == 1
    assert sum(isinstance(r, InvalidGrant) for r in results) == 3


async def test_concurrent_refreshes_of_one_token_yield_one_pair(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    tokens = await connect(runtime, ws.api_key, client_id)
    results = await asyncio.gather(
        *(runtime.system(core.exchange_refresh_token, client_id, tokens.refresh_token) for _ in range(4)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, IssuedTokens) for r in results) == 1
    assert sum(isinstance(r, InvalidGrant) for r in results) == 3


async def test_disconnect_confirmation_names_the_app(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    client_id = await register(runtime, "Claude Desktop")
    tokens = await connect(runtime, ws.api_key, client_id)
    [endpoint] = [e for e in ENDPOINTS if e.name == "disconnect_app"]
    assert endpoint.confirm is not None and endpoint.destructive and endpoint.tag == "connected-apps"
    text = await runtime.describe(await ws.principal(), endpoint, id=tokens.grant_id)
    assert "Claude Desktop" in text and "stop working at once" in text
    [listing] = [e for e in ENDPOINTS if e.name == "list_connected_apps"]
    assert listing.read_only and (listing.method, listing.path) == ("GET", "/connected-apps")


async def test_purge_deletes_only_long_expired_codes_and_tokens(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime)
    now = runtime.ports.clock.now()
    # A connection made long ago (so that purging now touches no other test's live rows).
    long_ago = now - timedelta(seconds=runtime.settings.oauth_refresh_ttl_s, days=2)
    old_code = await run_at(
        runtime,
        long_ago,
        core.issue_authorization_code,
        api_key=ws.api_key,
        client_id=client_id,
        redirect_uri=REDIRECT_URI,
        redirect_uri_explicit=True,
        code_challenge=pkce_pair()[1],
        scopes=[],
        resource=runtime.settings.mcp_resource_url,
    )
    old = await run_at(runtime, long_ago, core.exchange_authorization_code, client_id, old_code)
    assert await run_at(runtime, long_ago, core.load_refresh_token, client_id, old.refresh_token) is not None
    current = await connect(runtime, ws.api_key, client_id)

    assert await runtime.system(core.purge_expired_oauth) >= 3  # the old code, access and refresh token
    assert await run_at(runtime, long_ago, core.load_refresh_token, client_id, old.refresh_token) is None
    assert await runtime.system(core.detect_code_replay, client_id, old_code) is False  # the row is gone
    assert await runtime.system_read(core.load_refresh_token, client_id, current.refresh_token) is not None
    await assert_access_works(runtime, current.access_token)
    apps = await runtime.read(await ws.principal(), list_connected_apps)
    assert [a.id for a in apps] == [current.grant_id]  # the connection itself stays


async def test_revoke_member_grants_disconnects_only_that_persons_apps(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    client_id = await register(runtime)
    other_client = await register(runtime, "Other App")
    members_apps = [await connect(runtime, member.api_key, c) for c in (client_id, other_client)]
    owners_app = await connect(runtime, owner.api_key, client_id)

    revoked = await runtime.execute(await owner.principal(), core.revoke_member_grants, member.user_id)
    assert revoked == 2
    for tokens in members_apps:
        await assert_access_refused(runtime, tokens.access_token)
    await assert_access_works(runtime, owners_app.access_token)
    apps = await runtime.read(await owner.principal(), list_connected_apps)
    assert [a.id for a in apps] == [owners_app.grant_id]
