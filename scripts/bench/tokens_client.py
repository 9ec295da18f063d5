#!/usr/bin/env python3
"""Signed-token hellos against a running server (scripts/bench/tokens).

  tokens_client.py keys DIR                 HS256 secret, ES256 and EdDSA keys; DIR/secret, DIR/jwks.json, DIR/*.pem
  tokens_client.py run PORT PID KIND TOKENS_FILE HELLOS THREADS OUT.json
        THREADS threads, each saying hello with its own token (line i of TOKENS_FILE), on a
        new connection each time, HELLOS in all; measures the server's CPU per hello, split
        into its event loop (the main thread) and every other thread (jwt-kit on Swift's
        threads, libuv's pool), from /proc/PID/task/*/schedstat (ns), and hello latency.
  tokens_client.py mint DIR ALG SUB...      one token per SUB (one line each), an hour's lifetime
  tokens_client.py pyjwt DIR ALG N          the baseline: PyJWT (python-cryptography, OpenSSL) verifying one token N times
"""
import json, os, socket, sys, threading, time
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

ISS, AUD = "https://app.example.com", "rewind"


def b64url(b):
    import base64
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def keys(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "secret"), "w") as f:
        f.write(b64url(os.urandom(48)) + "\n")
    es = ec.generate_private_key(ec.SECP256R1())
    ed = ed25519.Ed25519PrivateKey.generate()
    for name, k in (("es.pem", es), ("ed.pem", ed)):
        with open(os.path.join(d, name), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    n = es.public_key().public_numbers()
    edraw = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwks = {"keys": [
        {"kty": "EC", "crv": "P-256", "kid": "bench-es", "alg": "ES256", "x": b64url(n.x.to_bytes(32, "big")), "y": b64url(n.y.to_bytes(32, "big"))},
        {"kty": "OKP", "crv": "Ed25519", "kid": "bench-ed", "alg": "EdDSA", "x": b64url(edraw)},
    ]}
    with open(os.path.join(d, "jwks.json"), "w") as f:
        json.dump(jwks, f)


def signing(d, alg):
    if alg == "HS256":
        return open(os.path.join(d, "secret")).read().rstrip("\n"), {}
    name, kid = ("es.pem", "bench-es") if alg == "ES256" else ("ed.pem", "bench-ed")
    return serialization.load_pem_private_key(open(os.path.join(d, name), "rb").read(), None), {"kid": kid}


def mint(d, alg, sub):
    key, headers = signing(d, alg)
    now = int(time.time())
    return jwt.encode({"sub": sub, "iss": ISS, "aud": AUD, "iat": now, "exp": now + 3600, "name": "Bench " + sub},
                      key, algorithm=alg, headers=headers)


def cpu(pid):
    """ns on CPU of the main thread (the loop) and of all other threads."""
    loop = other = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
        if tid == str(pid):
            loop += ns
        else:
            other += ns
    return loop, other


def run(port, pid, kind, tokens_file, hellos, threads, out):
    tokens = [l.strip() for l in open(tokens_file) if l.strip()]
    assert len(tokens) >= threads, "one token per thread"
    lat, errors, lock = [], [], threading.Lock()
    per = hellos // threads

    def worker(i):
        mine, bad = [], []
        hello = (json.dumps({"id": 1, "type": "hello", "token": tokens[i]}) + "\n").encode()
        for _ in range(per):
            t0 = time.perf_counter()
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(hello)
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            mine.append(time.perf_counter() - t0)
            s.close()
            line = buf.split(b"\n", 1)[0]
            try:
                if json.loads(line).get("ok") is not True:
                    bad.append(line[:200].decode(errors="replace"))
            except ValueError:
                bad.append(repr(line[:200]))
        with lock:
            lat.extend(mine)
            errors.extend(bad)

    l0, o0 = cpu(pid)
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    time.sleep(0.3)  # connections' ends are the loop's work too
    l1, o1 = cpu(pid)
    n = per * threads
    lat.sort()
    r = {"kind": kind, "hellos": n, "errors": len(errors), "first_error": errors[0] if errors else None, "wall_s": wall,
         "hellos_per_s": n / wall, "p50_ms": lat[n // 2] * 1e3, "p99_ms": lat[int(n * 0.99)] * 1e3,
         "loop_us_per_hello": (l1 - l0) / n / 1e3, "off_loop_us_per_hello": (o1 - o0) / n / 1e3}
    json.dump(r, open(out, "w"))


def pyjwt(d, alg, n):
    token = mint(d, alg, "s-0")
    key, _ = signing(d, alg)
    pub = key if alg == "HS256" else key.public_key()
    for _ in range(200):
        jwt.decode(token, pub, algorithms=[alg], audience=AUD, issuer=ISS)
    c0 = time.process_time()
    for _ in range(n):
        jwt.decode(token, pub, algorithms=[alg], audience=AUD, issuer=ISS)
    print("%.1f" % ((time.process_time() - c0) / n * 1e6))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "keys":
        keys(sys.argv[2])
    elif cmd == "mint":
        for sub in sys.argv[4:]:
            print(mint(sys.argv[2], sys.argv[3], sub))
    elif cmd == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), sys.argv[8])
    elif cmd == "pyjwt":
        pyjwt(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
