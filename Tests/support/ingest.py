"""A producer of live data over `POST /v1/changes`, as a script using the HTTP API would be."""

import http.client
import json


def post_changes(port, token, changes, atomic=False, raw_body=None, headers=None, timeout_s=30):
    """Posts changes (dicts, one NDJSON line each, or `raw_body` bytes as they are); returns
    (status, parsed JSON answer or the text, response headers)."""
    body = raw_body if raw_body is not None else "".join(json.dumps(c) + "\n" for c in changes).encode()
    sent_headers = {"Content-Type": "application/x-ndjson"}
    if token is not None:
        sent_headers["Authorization"] = f"Bearer {token}"
    sent_headers.update(headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        connection.request("POST", "/v1/changes" + ("?atomic=true" if atomic else ""), body=body,
                           headers=sent_headers)
        response = connection.getresponse()
        text = response.read().decode()
        try:
            answer = json.loads(text)
        except ValueError:
            answer = text
        return response.status, answer, {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()


def post_all_accepted(port, token, changes):
    """Posts changes that must all be accepted; returns the version the answer names."""
    status, answer, _ = post_changes(port, token, changes)
    assert status == 200 and answer["accepted"] == len(changes), answer
    return answer["version"]
