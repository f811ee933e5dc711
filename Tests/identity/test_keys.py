"""--viewer-key takes an HS256 secret, an RS256 or ES256 public key in PEM, or a JWKS: each verifies
tokens its private key signed and refuses others; a key file that is none of these stops the server
with a message naming it."""

import json
import subprocess

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from identity import TENANT_IDS, ScopedViewer, close_of, mint
from pinwheel_process import WEB, pinwheel_binary

ACME_POINTS = len(TENANT_IDS["acme"]) + 1


def public_pem(private_key):
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def accepts_and_refuses(start_server, points_csv, key_path, sign, forge, *extra):
    server = start_server(["--data", str(points_csv), "--viewer-key", str(key_path), *extra])
    viewer = ScopedViewer(server.ws_url, sign({"tenant": "acme"})).greeted()
    try:
        assert viewer.hello["dataset"]["points"] == ACME_POINTS
    finally:
        viewer.close()
    forged = ScopedViewer(server.ws_url, forge({"tenant": "acme"}))
    code, reason = close_of(forged.ws)
    assert code == 4401 and reason.startswith("invalid token"), reason


def test_rs256_public_key(start_server, points_csv, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "rsa.pem"
    path.write_bytes(public_pem(key))
    accepts_and_refuses(
        start_server, points_csv, path,
        lambda claims: mint(claims, key=key, algorithm="RS256"),
        lambda claims: mint(claims, key=other, algorithm="RS256"))


def test_rs256_key_refuses_hmac_over_the_public_key(start_server, points_csv, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "rsa.pem"
    path.write_bytes(public_pem(key))
    server = start_server(["--data", str(points_csv), "--viewer-key", str(path)])
    # The classic confusion: HS256 keyed with the public key the server holds. PyJWT refuses to mint
    # it, so the token is signed by hand.
    import base64
    import hashlib
    import hmac
    import time

    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps({"tenant": "acme", "exp": int(time.time()) + 60}).encode())
    signature = b64(hmac.new(public_pem(key), f"{header}.{payload}".encode(), hashlib.sha256).digest())
    viewer = ScopedViewer(server.ws_url, f"{header}.{payload}.{signature}")
    code, reason = close_of(viewer.ws)
    assert code == 4401 and reason.startswith("invalid token")


def test_es256_public_key(start_server, points_csv, tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    other = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pem"
    path.write_bytes(public_pem(key))
    accepts_and_refuses(
        start_server, points_csv, path,
        lambda claims: mint(claims, key=key, algorithm="ES256"),
        lambda claims: mint(claims, key=other, algorithm="ES256"))


def test_jwks_picks_the_key_by_kid(start_server, points_csv, tmp_path):
    old = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    new = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    keys = []
    for kid, key in (("2026-11", old), ("2026-12", new)):
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
        keys.append(jwk)
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": keys}))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    # Both keys of a rotation verify their own tokens.
    accepts_and_refuses(
        start_server, points_csv, path,
        lambda claims: mint(claims, key=old, algorithm="RS256", headers={"kid": "2026-11"}),
        lambda claims: mint(claims, key=stranger, algorithm="RS256", headers={"kid": "2026-12"}),
        "--viewer-key-kind", "jwks")
    accepts_and_refuses(
        start_server, points_csv, path,
        lambda claims: mint(claims, key=new, algorithm="RS256", headers={"kid": "2026-12"}),
        lambda claims: mint(claims, key=new, algorithm="RS256", headers={"kid": "2026-13"}))


def test_bad_key_files_stop_the_server(points_csv, tmp_path):
    short = tmp_path / "short.key"
    short.write_text("too-short\n")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n")
    cases = [
        (["--viewer-key", str(short)], "at least 32 bytes"),
        (["--viewer-key", str(garbage)], "not an RSA public key"),
        (["--viewer-key", str(tmp_path / "missing.key")], "missing.key"),
        (["--viewer-key", str(short), "--viewer-key-kind", "rsa"], "--viewer-key-kind must be"),
    ]
    for args, message in cases:
        done = subprocess.run([pinwheel_binary(), "serve", "--port", "0", "--web", str(WEB), "--data",
                               str(points_csv), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0, args
        assert message in done.stderr, (args, done.stderr)
