"""`pinwheel feed` as a producer runs it against a live server: an NDJSON file replayed as the server
reads a request body, a bad file refused before anything is sent, and simulated vehicles."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import SOUTH, TOKEN, WEST  # noqa: E402
from ingest import post_changes  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402
from viewer import Watcher  # noqa: E402


def feed(server, live_args, *args):
    token_file = live_args[live_args.index("--ingest-token-file") + 1]
    return subprocess.run([pinwheel_binary(), "feed", "--url", server.url, "--token-file", token_file, *args],
                          capture_output=True, text=True, timeout=60)


def version_now(server):
    status, answer, _ = post_changes(server.port, TOKEN, [])
    assert status == 200, answer
    return answer["version"]


def change(key, k):
    return json.dumps({"op": "upsert", "id": key, "lat": SOUTH + 0.001 * (k + 1), "lon": WEST + 0.001 * (k + 1)})


def test_a_file_is_replayed_with_crlf_endings_blank_lines_and_a_byte_order_mark(live_server, live_args, tmp_path):
    before = version_now(live_server)
    file = tmp_path / "changes.ndjson"
    file.write_bytes(b"\xef\xbb\xbf" + "\r\n".join([change("ferry-1", 0), "", change("ferry-2", 1),
                                                    change("ferry-3", 2)]).encode() + b"\r\n")
    done = feed(live_server, live_args, "--file", str(file), "--batch", "2")
    assert done.returncode == 0, done.stderr
    assert "acknowledged 3 (3 in all), rejected 0" in done.stdout
    assert version_now(live_server) == before + 3
    with Watcher(live_server.ws_url) as viewer:
        viewer.watch([WEST, SOUTH, WEST + 0.01, SOUTH + 0.01], 17)
        viewer.wait_for(lambda w: set(w.keyed()) == {"ferry-1", "ferry-2", "ferry-3"})


def test_a_bad_line_is_named_by_file_and_line_and_nothing_is_sent(live_server, live_args, tmp_path):
    before = version_now(live_server)
    file = tmp_path / "changes.ndjson"
    file.write_text("\n".join([change("ok", 0), "", json.dumps({"op": "upsert", "id": "far", "lat": 95, "lon": 0})]))
    done = feed(live_server, live_args, "--file", str(file))
    assert done.returncode == 1
    assert f"pinwheel feed: {file}:3: lat must be between -90 and 90, got 95" in done.stderr
    assert version_now(live_server) == before

    missing = feed(live_server, live_args, "--file", str(tmp_path / "missing.ndjson"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_simulated_vehicles_are_acknowledged_at_the_rate_asked(live_server, live_args):
    before = version_now(live_server)
    done = feed(live_server, live_args, "--movers", "50", "--rate", "200", "--duration", "3s")
    assert done.returncode == 0, done.stderr
    acknowledged = version_now(live_server) - before
    # The 50 vehicles placed, then about 200 changes a second for 3 s.
    assert 50 + 200 <= acknowledged <= 50 + 800, done.stdout
    assert "rejected 0" in done.stdout
