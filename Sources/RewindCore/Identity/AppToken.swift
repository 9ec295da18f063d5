/// A signed token from the application's backend (PROTOCOL.md, "Identity
/// from the app"), its signature already checked: its claims, and the rules
/// they must meet. Pure: the clock is passed in, so a test moves it.
public struct AppToken: Sendable, Equatable {
    /// The app's user id (`sub`), required.
    public var subject: String
    /// `exp`, `nbf`, `iat` in seconds since 1970 (`exp` required).
    public var expires: Double
    public var notBefore: Double?
    public var issuedAt: Double?
    public var issuer: String?
    public var audience: [String]
    /// `name`: shown for the user in presence and events.
    public var name: String?
    /// `jti`: what `rewind admin token deny --jti` names.
    public var id: String?
    /// `rewind: {docs: …}`: roles for this connection only (nil: the token grants none).
    public var grants: DocumentGrants?

    public init(subject: String, expires: Double, notBefore: Double? = nil, issuedAt: Double? = nil, issuer: String? = nil,
                audience: [String] = [], name: String? = nil, id: String? = nil, grants: DocumentGrants? = nil) {
        self.subject = subject; self.expires = expires; self.notBefore = notBefore; self.issuedAt = issuedAt
        self.issuer = issuer; self.audience = audience; self.name = name; self.id = id; self.grants = grants
    }
}

/// Why a token is refused: `details.reason` of the `unauthorized` error (PROTOCOL.md).
public enum TokenRefusal: String, Error, Sendable, CaseIterable {
    case expired
    case notYetValid = "not_yet_valid"
    case badSignature = "bad_signature"
    case unknownKid = "unknown_kid"
    case wrongIssuer = "wrong_issuer"
    case wrongAudience = "wrong_audience"
    case algorithmNotAllowed = "algorithm_not_allowed"
    case lifetimeTooLong = "lifetime_too_long"
    case malformed
    case denied

    /// What a developer reads in the error's message.
    public var message: String {
        switch self {
        case .expired: "the token has expired (`exp` is past, beyond the allowed clock skew)"
        case .notYetValid: "the token is not valid yet (`nbf` or `iat` is ahead, beyond the allowed clock skew)"
        case .badSignature: "the token's signature does not verify with the configured key"
        case .unknownKid: "no configured key has the token's `kid`"
        case .wrongIssuer: "the token's `iss` is not the configured issuer"
        case .wrongAudience: "the token's `aud` does not name the configured audience"
        case .algorithmNotAllowed: "the token's `alg` is not one this server is configured for (never `none`)"
        case .lifetimeTooLong: "the token's `exp` is further ahead than the configured maximum lifetime"
        case .malformed: "not a signed token this server can read (three base64url parts, a JSON header and claims, `sub` and `exp`)"
        case .denied: "this token, or its subject, was denied by an operator"
        }
    }
}

/// What the operator configured tokens to meet (`--jwt-issuer`, `--jwt-audience`, …).
public struct TokenPolicy: Sendable, Equatable {
    public var issuer: String?
    public var audience: String?
    /// `exp` may be at most this far ahead of now (seconds).
    public var maxLifetime: Double
    /// Allowed difference between the app's clock and ours (seconds).
    public var skew: Double

    public init(issuer: String? = nil, audience: String? = nil, maxLifetime: Double = 86_400, skew: Double = 30) {
        self.issuer = issuer; self.audience = audience; self.maxLifetime = maxLifetime; self.skew = skew
    }

    /// nil: the token's claims meet the policy at `now` (seconds since 1970).
    public func refusal(of t: AppToken, now: Double) -> TokenRefusal? {
        if t.subject.isEmpty || t.subject.utf8.count > 255 { return .malformed }
        if let name = t.name, name.isEmpty || name.utf8.count > 64 { return .malformed }
        if let id = t.id, id.isEmpty || id.utf8.count > 255 { return .malformed }
        if let iss = t.issuer, iss.utf8.count > 255 { return .malformed }
        if let issuer, t.issuer != issuer { return .wrongIssuer }
        if let audience, !t.audience.contains(audience) { return .wrongAudience }
        if now > t.expires + skew { return .expired }
        if let nbf = t.notBefore, now + skew < nbf { return .notYetValid }
        if let iat = t.issuedAt, now + skew < iat { return .notYetValid }
        if t.expires - now > maxLifetime + skew { return .lifetimeTooLong }
        return nil
    }
}
