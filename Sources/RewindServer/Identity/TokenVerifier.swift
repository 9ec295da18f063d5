import Foundation
import JWTKit
import RewindCore
import RewindLoop

/// Signed tokens from the application's backend, checked by jwt-kit: the one
/// place that sees it. HS256 with the shared secret (`--jwt-secret-file`);
/// ES256 and EdDSA with the public keys of a JWKS file (`--jwks-file`),
/// chosen by `kid`. Which algorithm a token claims is read from its header
/// first, so that `none`, or one not configured, is refused by name and
/// never reaches a key; the signature, the decoding and the key lookup are
/// jwt-kit's. The claims' rules are `TokenPolicy`'s (core), with the
/// server's clock.
///
/// `verify` blocks (jwt-kit's keys are an actor: `BackgroundWork.waitFor`):
/// it runs on libuv's thread pool (`BackgroundWork.run`), never on the loop.
final class TokenVerifier: Sendable {
    /// The algorithms configured: HS256 with a secret; ES256 and EdDSA for each kind of key in the JWKS.
    let algorithms: Set<String>
    /// The `kid`s of the JWKS file.
    let kids: Set<String>
    private let secretKeys: JWTKeyCollection?
    private let publicKeys: JWTKeyCollection?

    /// Tokens longer than this are refused before anything is decoded (`too_large`).
    static let maxBytes = 8 << 10

    struct ConfigurationError: Error, CustomStringConvertible {
        let description: String
    }

    /// `secret`: the secret file's text without its trailing newline. `jwks`: a JWKS document (RFC 7517).
    init(secret: String?, jwks: String?) throws {
        var algorithms: Set<String> = []
        if let secret {
            // Shorter than the hash is a weak HMAC key (RFC 7518 §3.2), and jwt-kit traps on one.
            guard secret.utf8.count >= 32 else {
                throw ConfigurationError(description: "the JWT secret is \(secret.utf8.count) bytes: HS256 needs at least 32 (e.g. `openssl rand -base64 48`)")
            }
            let keys = JWTKeyCollection()
            BackgroundWork.waitFor { await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256) }
            secretKeys = keys
            algorithms.insert("HS256")
        } else {
            secretKeys = nil
        }
        var kids: Set<String> = []
        if let jwks {
            let set: JWKS
            do { set = try JSONDecoder().decode(JWKS.self, from: Data(jwks.utf8)) } catch {
                throw ConfigurationError(description: "the JWKS file is not a JWK set (RFC 7517): \(error)")
            }
            for key in set.keys {
                guard let kid = key.keyIdentifier?.string, !kid.isEmpty else {
                    throw ConfigurationError(description: "every key of the JWKS file needs a `kid`")
                }
                switch key.keyType {
                case .ecdsa: algorithms.insert("ES256")
                case .octetKeyPair: algorithms.insert("EdDSA")
                default: throw ConfigurationError(description: "JWKS key \(kid): only EC P-256 (ES256) and OKP Ed25519 (EdDSA) keys are taken")
                }
                kids.insert(kid)
            }
            let keys = JWTKeyCollection()
            let added: Result<Void, Error> = BackgroundWork.waitFor {
                do { _ = try await keys.add(jwks: set); return .success(()) } catch { return .failure(error) }
            }
            if case let .failure(error) = added { throw ConfigurationError(description: "the JWKS file's keys: \(error)") }
            publicKeys = set.keys.isEmpty ? nil : keys
        } else {
            publicKeys = nil
        }
        self.algorithms = algorithms
        self.kids = kids
    }

    /// Whether `token` is a signed token (three dot-separated parts) rather than one of `rewind admin user`'s.
    static func looksSigned(_ token: String) -> Bool {
        token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The token's claims, its signature checked (the claims' rules are the caller's: `TokenPolicy`).
    func verify(_ token: String) -> Result<AppToken, TokenRefusal> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URLDecode(parts[0]),
              let header = try? JSONParser.parse(headerBytes).objectValue,
              let alg = header["alg"]?.stringValue
        else { return .failure(.malformed) }
        guard algorithms.contains(alg) else { return .failure(.algorithmNotAllowed) }
        let keys: JWTKeyCollection
        if alg == "HS256" {
            guard let secretKeys else { return .failure(.algorithmNotAllowed) }
            keys = secretKeys
        } else {
            guard let kid = header["kid"]?.stringValue, kids.contains(kid), let publicKeys else { return .failure(.unknownKid) }
            keys = publicKeys
        }
        let result: Result<Claims, Error> = BackgroundWork.waitFor {
            do { return .success(try await keys.verify(token, as: Claims.self)) } catch { return .failure(error) }
        }
        switch result {
        case let .success(c):
            return .success(AppToken(subject: c.sub, expires: c.exp, notBefore: c.nbf, issuedAt: c.iat, issuer: c.iss,
                                     audience: c.aud ?? [], name: c.name, id: c.jti))
        case let .failure(error as JWTError):
            switch error.errorType {
            case .signatureVerificationFailed: return .failure(.badSignature)
            case .unknownKID, .missingKIDHeader, .noKeyProvided: return .failure(.unknownKid)
            case .unsupportedAlgorithm, .unsupportedCurve: return .failure(.algorithmNotAllowed)
            default: return .failure(.malformed)
            }
        case .failure:
            return .failure(.malformed)  // the claims did not decode (no `sub`, `exp` not a number, …)
        }
    }

    /// The claims jwt-kit decodes; their rules are checked after, with the server's clock (`TokenPolicy`).
    struct Claims: JWTPayload {
        var sub: String
        var exp: Double
        var nbf: Double?
        var iat: Double?
        var iss: String?
        /// `aud`: one string or an array of them.
        var aud: [String]?
        var name: String?
        var jti: String?

        enum CodingKeys: String, CodingKey { case sub, exp, nbf, iat, iss, aud, name, jti }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            sub = try c.decode(String.self, forKey: .sub)
            exp = try c.decode(Double.self, forKey: .exp)
            nbf = try c.decodeIfPresent(Double.self, forKey: .nbf)
            iat = try c.decodeIfPresent(Double.self, forKey: .iat)
            iss = try c.decodeIfPresent(String.self, forKey: .iss)
            if let one = try? c.decodeIfPresent(String.self, forKey: .aud) { aud = [one] } else { aud = try c.decodeIfPresent([String].self, forKey: .aud) }
            name = try c.decodeIfPresent(String.self, forKey: .name)
            jti = try c.decodeIfPresent(String.self, forKey: .jti)
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {}  // the rules are TokenPolicy's, with our clock
    }

    private static func base64URLDecode(_ s: Substring) -> [UInt8]? {
        var b64 = String(s).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.utf8.count % 4 != 0 { b64 += "=" }
        return Base64.decode(b64)
    }

}
