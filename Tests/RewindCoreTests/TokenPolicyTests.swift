import XCTest
@testable import RewindCore

/// The rules a signed token's claims meet (`TokenPolicy`), at a clock the test sets.
final class TokenPolicyTests: XCTestCase {
    let now = 1_800_000_000.0
    let policy = TokenPolicy(issuer: "https://app", audience: "rewind", maxLifetime: 3_600, skew: 30)

    func token(exp: Double = 600, nbf: Double? = nil, iat: Double? = 0, iss: String? = "https://app", aud: [String] = ["rewind"],
               sub: String = "u", name: String? = nil) -> AppToken {
        AppToken(subject: sub, expires: now + exp, notBefore: nbf.map { now + $0 }, issuedAt: iat.map { now + $0 }, issuer: iss,
                 audience: aud, name: name)
    }

    func testEachRuleRefusesWithItsReasonAndTheSkewIsAllowedBothWays() {
        XCTAssertNil(policy.refusal(of: token(), now: now))
        XCTAssertNil(policy.refusal(of: token(exp: -29), now: now), "expired 29 s ago: within the skew")
        XCTAssertEqual(policy.refusal(of: token(exp: -31), now: now), .expired)
        XCTAssertNil(policy.refusal(of: token(nbf: 29), now: now), "valid in 29 s: within the skew")
        XCTAssertEqual(policy.refusal(of: token(nbf: 31), now: now), .notYetValid)
        XCTAssertEqual(policy.refusal(of: token(iat: 31), now: now), .notYetValid, "issued in the future")
        XCTAssertEqual(policy.refusal(of: token(iss: "https://other"), now: now), .wrongIssuer)
        XCTAssertEqual(policy.refusal(of: token(iss: nil), now: now), .wrongIssuer, "an issuer is configured: one is required")
        XCTAssertNil(policy.refusal(of: token(aud: ["x", "rewind"]), now: now), "one of several audiences")
        XCTAssertEqual(policy.refusal(of: token(aud: []), now: now), .wrongAudience)
        XCTAssertNil(policy.refusal(of: token(exp: 3_600), now: now))
        XCTAssertEqual(policy.refusal(of: token(exp: 3_700), now: now), .lifetimeTooLong)
        XCTAssertEqual(policy.refusal(of: token(sub: ""), now: now), .malformed)
        XCTAssertEqual(policy.refusal(of: token(sub: String(repeating: "s", count: 256)), now: now), .malformed)
        XCTAssertEqual(policy.refusal(of: token(name: ""), now: now), .malformed)
        XCTAssertEqual(policy.refusal(of: token(name: String(repeating: "n", count: 65)), now: now), .malformed)
        let open = TokenPolicy()
        XCTAssertNil(open.refusal(of: token(iss: nil, aud: []), now: now), "nothing configured: any issuer and audience")
    }

    func testEveryReasonHasAMessageAndTheProtocolsName() {
        XCTAssertEqual(Set(TokenRefusal.allCases.map(\.rawValue)),
                       ["expired", "not_yet_valid", "bad_signature", "unknown_kid", "wrong_issuer", "wrong_audience",
                        "algorithm_not_allowed", "lifetime_too_long", "malformed", "denied"])
        for r in TokenRefusal.allCases { XCTAssertFalse(r.message.isEmpty) }
    }
}
