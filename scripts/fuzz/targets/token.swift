// libFuzzer target: a signed token from a stranger, through the whole input
// path of `hello` and `refresh` — our reading of its header and claims
// (`SignedToken`, core), the claims' rules (`TokenPolicy`), the grants
// (`DocumentGrants`), and jwt-kit's side (`TokenVerifier`: header, base64url,
// JSON, key lookup, signature) — built with RewindCore's sources, the
// verifier and jwt-kit (`scripts/fuzz/run token`).
//
// Input: header JSON, a 0x00 byte, claims JSON (no 0x00: the whole input is
// the claims, under an HS256 header). The target makes three tokens of it:
// the bytes as they are (a token as sent), the parts base64url-encoded with
// a made-up signature, and the same signed with the server's HS256 secret —
// so jwt-kit's signature check passes and every claims byte the fuzzer tries
// reaches the claims reader behind it.
//
// Besides not trapping: no unsigned token is accepted; a token signed with
// the secret is accepted exactly when our reader takes its claims (and then
// with the same claims); every refusal is one of the protocol's reasons.

import Crypto
import Foundation

/// `BackgroundWork.waitFor` (RewindLoop/BackgroundWork+WaitFor.swift, built in) bridges jwt-kit's async keys; the rest of RewindLoop is not.
enum BackgroundWork {}

let secret = "the fuzzer's shared secret, 32 bytes or more"
let jwks = #"{"keys": [{"kty": "EC", "crv": "P-256", "kid": "es", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}, {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#
let verifier = try! TokenVerifier(secret: secret, jwks: jwks)
let policy = TokenPolicy(issuer: nil, audience: nil, maxLifetime: 86_400, skew: 30)

func b64url(_ bytes: some Sequence<UInt8>) -> String {
    Base64.encode(Array(bytes)).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func hs256(_ signingInput: String) -> String {
    b64url(HMAC<Crypto.SHA256>.authenticationCode(for: Array(signingInput.utf8), using: SymmetricKey(data: Array(secret.utf8))))
}

/// What the server does with a token it has checked (grants asked of a few ids; the policy at a fixed clock).
func use(_ t: AppToken) {
    _ = policy.refusal(of: t, now: 1_800_000_000)
    if let g = t.grants {
        for doc in ["acme:board-7", "acme:", "", "x"] {
            let role = g.role(on: doc)
            if g.allowsCreating(doc) && role != .editor { fatalError("creates \(doc) without an editor pattern") }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func rewindFuzzToken(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = bytes.firstIndex(of: 0)
    let header = split.map { Array(bytes[..<$0]) } ?? Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)
    let claims = split.map { Array(bytes[($0 + 1)...]) } ?? bytes

    // 1. The bytes as a stranger sends them.
    let raw = String(decoding: bytes, as: UTF8.self)
    _ = SignedToken.header(of: raw)
    if case let .success(t) = SignedToken.claims(of: raw) { use(t) }
    if SignedToken.looksSigned(raw), case .success = verifier.verify(raw) { fatalError("accepted an unsigned token") }

    // 2. Well-formed parts, a made-up signature: never accepted.
    let input = b64url(header) + "." + b64url(claims)
    if case .success = verifier.verify(input + ".c2lnbmF0dXJl") { fatalError("accepted a made-up signature") }

    // 3. Signed with the secret: accepted exactly when the header is HS256's and our reader takes the claims.
    let signed = input + "." + hs256(input)
    let ours = SignedToken.claims(of: signed)
    switch verifier.verify(signed) {
    case let .success(t):
        guard case let .success(expected) = ours, expected == t else { fatalError("jwt-kit and SignedToken disagree on \(signed)") }
        use(t)
    case let .failure(reason):
        if TokenRefusal(rawValue: reason.rawValue) == nil { fatalError("refused for \(reason)") }
        if SignedToken.header(of: signed)?.algorithm == "HS256", case .success = ours, reason != .malformed {
            fatalError("a token signed with the secret refused as \(reason.rawValue)")
        }
    }
    return 0
}
