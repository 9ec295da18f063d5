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

    /// The token's claims, its signature checked (the claims' rules are the
    /// caller's: `TokenPolicy`). The header and claims are read by
    /// `SignedToken` (core, fuzzed); jwt-kit checks the signature over them.
    func verify(_ token: String) -> Result<AppToken, TokenRefusal> {
        guard let header = SignedToken.header(of: token) else { return .failure(.malformed) }
        guard algorithms.contains(header.algorithm) else { return .failure(.algorithmNotAllowed) }
        let keys: JWTKeyCollection
        if header.algorithm == "HS256" {
            guard let secretKeys else { return .failure(.algorithmNotAllowed) }
            keys = secretKeys
        } else {
            guard let kid = header.keyID, kids.contains(kid), let publicKeys else { return .failure(.unknownKid) }
            keys = publicKeys
        }
        let result: Result<Signed, Error> = BackgroundWork.waitFor {
            do { return .success(try await keys.verify(token, as: Signed.self)) } catch { return .failure(error) }
        }
        switch result {
        case .success:
            return SignedToken.claims(of: token)
        case let .failure(error as JWTError):
            switch error.errorType {
            case .signatureVerificationFailed: return .failure(.badSignature)
            case .unknownKID, .missingKIDHeader, .noKeyProvided: return .failure(.unknownKid)
            case .unsupportedAlgorithm, .unsupportedCurve: return .failure(.algorithmNotAllowed)
            default: return .failure(.malformed)
            }
        case .failure:
            return .failure(.malformed)  // the claims are not a JSON object
        }
    }

    /// What jwt-kit is asked to decode: nothing — it checks the signature;
    /// the claims are read by `SignedToken` and their rules are `TokenPolicy`'s, with our clock.
    struct Signed: JWTPayload {
        init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: NoKeys.self) }
        func encode(to encoder: any Encoder) throws {}
        func verify(using algorithm: some JWTAlgorithm) async throws {}
        enum NoKeys: CodingKey {}
    }
}
