"""The client core's `token` option in headless Chromium against a server started with --viewer-key: a
callback's token goes first on the socket, the session sees only its tenant's points, and the client
refreshes the token before each `exp` so one connection outlives several tokens; a fixed token that
has expired stops the client with the server's reason."""

import pytest
from browser_support import PinwheelServer, pinwheel_binary
from identity import SECRET, TENANT_IDS, mint, write_points

ACME = set(TENANT_IDS["acme"]) | {2001}
LIFETIME_S = 4

START_CLIENT = """async ([url, fixed]) => {
    const { PinwheelClient } = await import('/pinwheel/client.js');
    const seen = { auths: [], refused: [], ids: new Set() };
    const token = fixed !== null ? fixed : () => window.pinwheelToken();
    const client = new PinwheelClient(url, { token, encoding: 'json', tileSize: 512 });
    client.on('auth', (m) => seen.auths.push(m.exp));
    client.on('token-refused', (e) => seen.refused.push(e));
    client.on('feature-added', ({ feature }) => { if (feature.count === 1) seen.ids.add(feature.id); });
    client.connect();
    client.setViewport({ bbox: [-180, -85, 180, 85], zoom: 0, width: 1024, height: 768 });
    window.client = client;
    window.seen = seen;
}"""


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identity")
    (folder / "viewer.key").write_text(SECRET + "\n")
    server = PinwheelServer(pinwheel_binary(), ["--data", str(write_points(folder / "points.csv")),
                                                "--viewer-key", str(folder / "viewer.key")]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def test_token_callback_scopes_and_refreshes(page, token_server):
    minted = []

    def fresh_token():
        minted.append(mint({"tenant": "acme"}, lifetime_s=LIFETIME_S))
        return minted[-1]

    page.expose_function("pinwheelToken", fresh_token)
    page.goto(f"{token_server.url}/healthz")
    page.evaluate(START_CLIENT, [token_server.url.replace("http://", "ws://") + "/", None])
    page.wait_for_function("() => window.client.settled()", timeout=20000)
    held = page.evaluate("() => Array.from(window.client.features.values(), f => [f.id, f.count])")
    assert sum(count for _, count in held) == len(ACME)
    assert set(page.evaluate("() => Array.from(window.seen.ids)")) <= ACME
    # Three tokens accepted on one connection: it lived past the first two tokens' expiry.
    page.wait_for_function("() => window.seen.auths.length >= 3", timeout=(3 * LIFETIME_S + 5) * 1000)
    state = page.evaluate("() => ({ connects: window.client.state.counters.connects, "
                          "connection: window.client.state.connection, refused: window.seen.refused })")
    assert state == {"connects": 1, "connection": "open", "refused": []}
    assert len(minted) >= 3


def test_expired_fixed_token_stops_the_client(page, token_server):
    page.goto(f"{token_server.url}/healthz")
    page.evaluate(START_CLIENT, [token_server.url.replace("http://", "ws://") + "/",
                                 mint({"tenant": "acme"}, lifetime_s=-5)])
    page.wait_for_function("() => window.client.state.connection === 'refused'", timeout=20000)
    assert page.evaluate("() => window.client.state.refusal") == "token expired"
    assert page.evaluate("() => window.seen.refused") == [{"code": 4401, "reason": "token expired"}]
    assert page.evaluate("() => window.client.features.size") == 0
