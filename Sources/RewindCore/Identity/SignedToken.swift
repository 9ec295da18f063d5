/// A compact JWS (RFC 7515) as the app's backend sends it in `hello` and
/// `refresh`: what its header says and what its claims are, read with our
/// own JSON parser. The signature is not checked here (that is jwt-kit's, in
/// the server's `TokenVerifier`); this is the part of the input path that is
/// pure, so every byte a stranger can send reaches it in tests and under the
/// fuzzer (`scripts/fuzz/run token`) before any key does.
public enum SignedToken {
    public struct Header: Sendable, Equatable {
        public let algorithm: String
        public let keyID: String?
    }

    /// Whether `token` is a signed token (three dot-separated parts) rather than one of `rewind admin user`'s.
    public static func looksSigned(_ token: String) -> Bool {
        token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The header's `alg` and `kid` (nil: not a readable header).
    public static func header(of token: String) -> Header? {
        guard let o = part(0, of: token)?.objectValue, let alg = o["alg"]?.stringValue else { return nil }
        let kid = o["kid"]
        if let kid, kid.stringValue == nil { return nil }
        return Header(algorithm: alg, keyID: kid?.stringValue)
    }

    /// The claims (their rules are `TokenPolicy`'s): `sub` and `exp`
    /// required, each claim of its type, `rewind.docs` as `DocumentGrants`
    /// reads it; claims Rewind does not use are ignored.
    public static func claims(of token: String) -> Result<AppToken, TokenRefusal> {
        guard let c = part(1, of: token)?.objectValue,
              let sub = c["sub"]?.stringValue, let exp = c["exp"]?.doubleValue
        else { return .failure(.malformed) }
        var t = AppToken(subject: sub, expires: exp)
        func optional<T>(_ key: String, _ read: (JSON) -> T?) throws(TokenRefusal) -> T? {
            guard let v = c[key], !v.isNull else { return nil }
            guard let x = read(v) else { throw .malformed }
            return x
        }
        do throws(TokenRefusal) {
            t.notBefore = try optional("nbf") { $0.doubleValue }
            t.issuedAt = try optional("iat") { $0.doubleValue }
            t.issuer = try optional("iss") { $0.stringValue }
            t.name = try optional("name") { $0.stringValue }
            t.id = try optional("jti") { $0.stringValue }
            t.audience = try optional("aud") { v -> [String]? in
                if let one = v.stringValue { return [one] }
                guard let all = v.arrayValue else { return nil }
                let strings = all.compactMap(\.stringValue)
                return strings.count == all.count ? strings : nil
            } ?? []
            if let rewind = try optional("rewind", { $0.objectValue }), let docs = rewind["docs"] {
                guard let grants = DocumentGrants(claim: docs) else { throw .malformed }
                t.grants = grants
            }
        } catch {
            return .failure(error)
        }
        return .success(t)
    }

    /// Part `n` of the token, base64url-decoded (unpadded, RFC 7515 §2) and parsed as JSON.
    private static func part(_ n: Int, of token: String) -> JSON? {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = base64URLDecode(parts[n]) else { return nil }
        return try? JSONParser.parse(bytes, maxDepth: 8)
    }

    /// base64url without padding; nil for any other character, or a length no encoding has.
    static func base64URLDecode(_ part: some Collection<UInt8>) -> [UInt8]? {
        var text: [UInt8] = []
        text.reserveCapacity(part.count + 3)
        for c in part {
            switch c {
            case UInt8(ascii: "-"): text.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): text.append(UInt8(ascii: "/"))
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): text.append(c)
            default: return nil
            }
        }
        if text.count % 4 == 1 { return nil }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return text.withUnsafeBufferPointer { Base64.decode($0) }
    }
}
