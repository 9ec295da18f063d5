/// Error codes of the wire protocol (PROTOCOL.md). Names are part of the contract.
public enum ErrorCode: String, Sendable, CaseIterable {
    case badFrame = "bad_frame"
    case badRequest = "bad_request"
    case unauthorized
    case forbidden
    case notFound = "not_found"
    case conflict
    case version
    case tooLarge = "too_large"
    case rateLimited = "rate_limited"
    case unavailable
    case `internal`
}

/// Every error Rewind reports carries a protocol code and a message for a human.
public struct RewindError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var details: JSON?

    public init(_ code: ErrorCode, _ message: String, details: JSON? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public var json: JSON {
        .obj([("code", .string(code.rawValue)), ("message", .string(message)), ("details", details)])
    }

    public static func badRequest(_ m: String, details: JSON? = nil) -> RewindError { .init(.badRequest, m, details: details) }
    public static func notFound(_ m: String, details: JSON? = nil) -> RewindError { .init(.notFound, m, details: details) }
    public static func conflict(_ m: String, details: JSON? = nil) -> RewindError { .init(.conflict, m, details: details) }

    /// The same error, with the index of the op that failed in `details.op`.
    public func at(op index: Int) -> RewindError {
        var members = details?.objectValue?.members ?? []
        members.insert((key: "op", value: .int(Int64(index))), at: 0)
        return RewindError(code, "op \(index): \(message)", details: .object(JSONObject(members)))
    }
}
