import XCTest
@testable import RewindCore

/// The pure part of a signed token's input path: its header and claims read
/// by our own parser (`SignedToken`), and the grants it carries (`DocumentGrants`).
final class SignedTokenReadingTests: XCTestCase {
    func b64url(_ s: String) -> String {
        Base64.encode(Array(s.utf8)).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    func token(header: String = #"{"alg":"ES256","kid":"k1"}"#, _ claims: String) -> String {
        b64url(header) + "." + b64url(claims) + ".c2ln"
    }

    func testTheHeaderAndEveryClaimAreReadAndAWrongTypeIsMalformed() throws {
        let t = token(#"{"sub":"u-1","exp":1800000600,"nbf":1800000000,"iat":1800000000.5,"iss":"https://app","aud":["a","b"],"name":"Ann","jti":"t-9","extra":{"x":1}}"#)
        XCTAssertEqual(SignedToken.header(of: t), .init(algorithm: "ES256", keyID: "k1"))
        let c = try SignedToken.claims(of: t).get()
        XCTAssertEqual(c, AppToken(subject: "u-1", expires: 1_800_000_600, notBefore: 1_800_000_000, issuedAt: 1_800_000_000.5,
                                   issuer: "https://app", audience: ["a", "b"], name: "Ann", id: "t-9"))
        XCTAssertEqual(try SignedToken.claims(of: token(#"{"sub":"u","exp":1,"aud":"one"}"#)).get().audience, ["one"])
        XCTAssertEqual(try SignedToken.claims(of: token(#"{"sub":"u","exp":1,"name":null}"#)).get().name, nil, "null is absent")
        for bad in [#"{"exp":1}"#, #"{"sub":"u"}"#, #"{"sub":1,"exp":1}"#, #"{"sub":"u","exp":"1"}"#, #"{"sub":"u","exp":1,"aud":["a",2]}"#,
                    #"{"sub":"u","exp":1,"iss":7}"#, #"{"sub":"u","exp":1,"jti":{}}"#, #"{"sub":"u","exp":1,"rewind":[]}"#,
                    #"{"sub":"u","exp":1,"rewind":{"docs":{"a*b":"editor"}}}"#, #"[]"#, "not json"] {
            XCTAssertEqual(SignedToken.claims(of: token(bad)).failure, .malformed, bad)
        }
        XCTAssertNil(SignedToken.header(of: token(header: #"{"kid":"k1"}"#, "{}")), "no alg")
        XCTAssertNil(SignedToken.header(of: token(header: #"{"alg":"ES256","kid":5}"#, "{}")), "a kid that is not a string")
        XCTAssertNil(SignedToken.header(of: "e30.e30"), "two parts")
        XCTAssertNil(SignedToken.header(of: "e30=.e30.x"), "padding is not base64url")
        XCTAssertNil(SignedToken.header(of: "e+0.e30.x"), "nor is +")
        XCTAssertEqual(SignedToken.header(of: b64url(#"{"alg":"none"}"#) + ".e30."), .init(algorithm: "none", keyID: nil), "read, then refused by name")
    }

    func testGrantsTheMostSpecificPatternDecidesAndOnlyEditorPatternsCreate() throws {
        let t = token(#"{"sub":"u","exp":1,"rewind":{"docs":{"acme:*":"editor","acme:board-7":"viewer","acme:ro-*":"viewer","*":"viewer"}}}"#)
        let g = try XCTUnwrap(try SignedToken.claims(of: t).get().grants)
        XCTAssertEqual(g.role(on: "acme:board-1"), .editor)
        XCTAssertEqual(g.role(on: "acme:board-7"), .viewer, "the exact id over the prefix")
        XCTAssertEqual(g.role(on: "acme:ro-3"), .viewer, "the longer prefix over the shorter")
        XCTAssertEqual(g.role(on: "globex:1"), .viewer, "`*` alone matches every id")
        XCTAssertTrue(g.allowsCreating("acme:new"))
        XCTAssertFalse(g.allowsCreating("acme:board-7"))
        XCTAssertFalse(g.allowsCreating("globex:1"))
        let none = try XCTUnwrap(DocumentGrants(claim: ["acme:board-7": "editor"]))
        XCTAssertNil(none.role(on: "acme:board-70"), "an exact pattern is not a prefix")
        XCTAssertEqual(DocumentGrants(claim: ["a": "editor", "a": "viewer"])?.role(on: "a"), .viewer, "a key twice: the last")
        for bad: JSON in [["a": "owner"], ["a": "admin"], ["": "viewer"], ["*a": "viewer"], ["a**": "viewer"], ["a": 1], "acme:*", [:] as JSON] {
            if case let .object(o) = bad, o.members.isEmpty { XCTAssertNotNil(DocumentGrants(claim: bad), "no patterns: grants nothing"); continue }
            XCTAssertNil(DocumentGrants(claim: bad), JSONWriter.string(bad))
        }
        let many = JSON.object(JSONObject((0...DocumentGrants.maxPatterns).map { (key: "p\($0)", value: JSON.string("viewer")) }))
        XCTAssertNil(DocumentGrants(claim: many), "more than \(DocumentGrants.maxPatterns) patterns")
    }

    func testTheStrongerOfAStoredAndAGrantedRoleApplies() {
        XCTAssertEqual(Role.stronger(.viewer, .editor), .editor)
        XCTAssertEqual(Role.stronger(.owner, .viewer), .owner)
        XCTAssertEqual(Role.stronger(nil, .viewer), .viewer)
        XCTAssertEqual(Role.stronger(.editor, nil), .editor)
        XCTAssertNil(Role.stronger(nil, nil))
    }
}

extension Result {
    var failure: Failure? { if case let .failure(f) = self { return f }; return nil }
}
