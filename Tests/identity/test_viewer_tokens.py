"""A server started with --viewer-key: the first message is `auth`, a scoped token's session sees only
its tenant's points (every batch checked, counts included), and forged, expired, missing or widened
tokens close the session with the documented code and a reason naming the problem."""

import base64
import json
import time

import jwt
from identity import REGION, TENANT_IDS, ScopedViewer, close_of, mint, shown

ACME = set(TENANT_IDS["acme"]) | {2001}
GLOBEX = set(TENANT_IDS["globex"]) | {2002}
CLUSTER_IDS = 2**32  # cluster ids are at or above 2^32 (docs/protocol.md)
WORLD = (-180, -85, 180, 85)


def serve(start_server, points_csv, key_file, *extra):
    return start_server(["--data", str(points_csv), "--viewer-key", str(key_file), *extra])


def assert_only(batches, allowed, total):
    """Every point sent is one of `allowed`, and the features held count exactly `total` points."""
    for batch in batches:
        for f in batch.get("update", []) + batch.get("add", []):
            if f["id"] < CLUSTER_IDS:
                assert f["id"] in allowed, f"batch {batch['batch']} carries point {f['id']} of another tenant"
                assert f["count"] == 1
    held = shown(batches)
    assert sum(f["count"] for f in held.values()) == total


def test_scoped_viewer_sees_only_its_tenant(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme", "sub": "dispatcher-1"})).greeted()
    try:
        assert viewer.auth["exp"] > time.time()
        # hello counts the tenant's points, not the dataset's.
        assert viewer.hello["dataset"]["points"] == len(ACME)
        west, south, east, north = REGION
        for zoom, width in ((0, 1024), (5, 1024), (8, 4096), (10, 16384)):
            batches = viewer.view(WORLD if zoom == 0 else (west - 1, south - 1, east + 1, north + 1), zoom,
                                  width=width, height=width)
            # Each view is sent as a difference from the last: check what is held after it.
            everything = viewer_history(viewer, batches)
            assert_only(everything, ACME, len(ACME))
        # The same-coordinate group at 51.5,6.0 holds only the tenant's pin.
        batches = viewer.view((5.996, 51.498, 6.004, 51.502), 18)
        ids = {f["id"] for f in shown(viewer_history(viewer, batches)).values()}
        assert 2001 in ids and 2002 not in ids
    finally:
        viewer.close()


def viewer_history(viewer, batches):
    """All batches the viewer received so far, this view's appended."""
    history = getattr(viewer, "history", [])
    history.extend(batches)
    viewer.history = history
    return history


def test_other_tenant_and_unscoped_token(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    globex = ScopedViewer(server.ws_url, mint({"tenant": "globex"})).greeted()
    everyone = ScopedViewer(server.ws_url, mint({"sub": "operator"})).greeted()
    try:
        assert globex.hello["dataset"]["points"] == len(GLOBEX)
        assert_only(globex.view(WORLD, 0), GLOBEX, len(GLOBEX))
        # A token without tenant or filter claims sees every point, as an anonymous viewer does elsewhere.
        assert everyone.hello["dataset"]["points"] == len(ACME) + len(GLOBEX)
        assert_only(everyone.view(WORLD, 0), ACME | GLOBEX, len(ACME) + len(GLOBEX))
    finally:
        globex.close()
        everyone.close()


def test_filter_claim_narrows_the_tenant(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    trucks = {i for i in TENANT_IDS["acme"] if i % 2} | {2001}
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme", "filter": ["==", ["get", "kind"], "truck"]}))
    try:
        viewer.greeted()
        assert viewer.hello["dataset"]["points"] == len(trucks)
        assert_only(viewer.view(WORLD, 0), trucks, len(trucks))
    finally:
        viewer.close()


def test_bad_filter_claim_is_refused_with_its_position(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    viewer = ScopedViewer(server.ws_url, mint({"filter": ["all", ["~", ["get", "kind"], "x"]]}))
    code, reason = close_of(viewer.ws)
    assert code == 4403
    assert "filter[1][0]" in reason and "~" in reason


def test_forged_token_is_refused(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    cases = {
        "signed with another secret": mint({"tenant": "acme"}, key="not-the-servers-secret-0123456789abcdef"),
        "tenant edited after signing": forge_tenant(mint({"tenant": "acme"}), "globex"),
        "alg none": jwt.encode({"tenant": "acme", "exp": int(time.time()) + 60}, None, algorithm="none"),
    }
    for name, token in cases.items():
        viewer = ScopedViewer(server.ws_url, token)
        code, reason = close_of(viewer.ws)
        assert code == 4401, name
        assert reason.startswith("invalid token"), (name, reason)
    viewer = ScopedViewer(server.ws_url, "not.a-jwt")
    assert close_of(viewer.ws) == (4401, "invalid token: not a JWT (header.payload.signature in base64url)")


def forge_tenant(token, tenant):
    """The token with its payload's tenant replaced and the old signature kept."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["tenant"] = tenant
    edited = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{edited}.{signature}"


def test_expired_and_expiring_tokens(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme"}, lifetime_s=-10))
    assert close_of(viewer.ws) == (4401, "token expired")
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme", "exp": None}))
    code, reason = close_of(viewer.ws)
    assert code == 4401 and "no exp claim" in reason
    # A session whose token runs out mid-session is closed when it does.
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme"}, lifetime_s=3)).greeted()
    viewer.view(WORLD, 0)
    started = time.monotonic()
    assert close_of(viewer.ws, timeout_s=10) == (4401, "token expired")
    assert time.monotonic() - started < 6


def test_refresh_before_expiry_keeps_the_session(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme"}, lifetime_s=3)).greeted()
    try:
        first_exp = viewer.auth["exp"]
        viewer.view(WORLD, 0)
        viewer.ws.send(json.dumps({"type": "auth", "token": mint({"tenant": "acme"}, lifetime_s=120)}))
        answer = viewer.receive()
        while answer["type"] != "auth":
            answer = viewer.receive()
        assert answer["exp"] > first_exp + 60
        # Past the first token's expiry the session still serves views.
        time.sleep(max(0.0, first_exp + 1.5 - time.time()))
        batches = viewer.view(REGION, 6)
        assert batches[-1]["done"]
    finally:
        viewer.close()


def test_refresh_may_not_change_the_scope(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file)
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme"})).greeted()
    viewer.ws.send(json.dumps({"type": "auth", "token": mint({"tenant": "globex"})}))
    code, reason = close_of(viewer.ws)
    assert code == 4403 and "unchanged" in reason
    viewer = ScopedViewer(server.ws_url, mint({"tenant": "acme"})).greeted()
    viewer.ws.send(json.dumps({"type": "auth", "token": mint({})}))
    assert close_of(viewer.ws)[0] == 4403


def test_auth_required_first(start_server, points_csv, secret_file):
    server = serve(start_server, points_csv, secret_file, "--idle-timeout", "60")
    viewer = ScopedViewer(server.ws_url, None)
    viewer.ws.send(json.dumps({"type": "viewport", "seq": 1, "bbox": list(WORLD), "zoom": 0,
                               "width": 1024, "height": 768}))
    code, reason = close_of(viewer.ws)
    assert code == 4401 and reason.startswith("authentication required")
    # Nothing at all: closed at the deadline, and no hello (nor any other message) before it.
    viewer = ScopedViewer(server.ws_url, None)
    started = time.monotonic()
    got = []
    try:
        while True:
            got.append(viewer.ws.recv(timeout=10))
    except Exception as closed:  # noqa: BLE001 - the close is what is checked
        rcvd = closed.rcvd
    assert got == []
    assert (rcvd.code, rcvd.reason) == (4401, "no auth message within 5 s of connecting")
    assert 4 < time.monotonic() - started < 8
    # An auth message without a token.
    viewer = ScopedViewer(server.ws_url, None)
    viewer.ws.send(json.dumps({"type": "auth"}))
    code, reason = close_of(viewer.ws)
    assert code == 4401 and "needs a token" in reason
