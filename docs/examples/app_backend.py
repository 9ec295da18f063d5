"""An application's backend letting its signed-in users into Rewind: it mints
a short-lived token (a JWT, HS256) with PyJWT, naming the user by the app's own
id (`sub`) and display name (`name`). The browser gets it from the app (after
its own sign-in) and hands it to rewind.js: `new RewindClient({getToken})`,
where `getToken` fetches a new one from this backend (at every hello, and when
the server says `token_expiring`). See docs/operating.md, "Identity from the
app: signed tokens".

    python3 docs/examples/app_backend.py SECRET_FILE SUB NAME [--issuer I] [--audience A] [--lifetime S]

prints one token. (The browser tests mint theirs with it: Tests/Browser/test_editor.py.)
"""
import argparse
import time

import jwt  # PyJWT (Debian: python3-jwt; PyPI: PyJWT)


def rewind_token(secret, sub, name, issuer=None, audience=None, lifetime=600):
    """A token for the app's user `sub`, shown as `name`, valid for `lifetime` seconds."""
    now = int(time.time())
    claims = {"sub": sub, "name": name, "iat": now, "exp": now + lifetime}
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm="HS256")


def read_secret(path):
    """The secret as the server reads --jwt-secret-file: the file's text without its trailing newline."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="Mint a Rewind token for an app's user.")
    p.add_argument("secret_file")
    p.add_argument("sub")
    p.add_argument("name")
    p.add_argument("--issuer")
    p.add_argument("--audience")
    p.add_argument("--lifetime", type=int, default=600)
    a = p.parse_args()
    print(rewind_token(read_secret(a.secret_file), a.sub, a.name, a.issuer, a.audience, a.lifetime))
