import RewindCore
import RewindStore

/// How every `rewind admin` command ends, for scripts (docs/operating.md, "Operating Rewind").
enum ExitStatus {
    static let ok: Int32 = 0
    /// A check failed, or the database refused what was asked (a name taken, a document that exists).
    static let refused: Int32 = 1
    /// The command line was wrong: nothing was done.
    static let usage: Int32 = 2
    /// PostgreSQL could not be reached (or the connection dropped): nothing is known to have been done.
    static let unreachable: Int32 = 3
}

/// A RewindError as a CLI failure: the message and what to do about it on
/// stderr, the exit status by kind.
struct Failure: Error, CustomStringConvertible {
    let error: RewindError
    /// What the operator can do next; nil: the usual advice for the error's code.
    let advice: String?

    init(_ e: RewindError, advice: String? = nil) {
        error = e
        self.advice = advice
    }

    var description: String {
        "error: \(error.code.rawValue): \(error.message)" + ((advice ?? Self.advice(for: error)).map { "\n  what to do: \($0)" } ?? "")
    }

    var exitCode: Int32 {
        switch error.code {
        case .unavailable: return ExitStatus.unreachable
        case .badRequest: return ExitStatus.usage
        default: return ExitStatus.refused
        }
    }

    /// The advice when the command gave none: by code, or by SQLSTATE for a
    /// database older than this binary.
    static func advice(for e: RewindError) -> String? {
        switch e.code {
        case .unavailable:
            return "check that PostgreSQL is running and that --database (or REWIND_DATABASE, or the PG* variables) points at it, then run the command again"
        case .notFound:
            if e.message.hasPrefix("no user") { return "check the name: `rewind admin user list` lists the users" }
            if e.message.hasPrefix("no document") { return "check the id: `rewind admin anchors` lists the documents that have entries" }
            return nil
        case .badRequest:
            return "see `rewind admin <command> --help`"
        case .internal:
            if let state = Database.sqlstate(of: e), ["42P01", "42703", "42883"].contains(state) {
                return "the database's schema is older than this binary: run `rewind admin migrate`"
            }
            return "this is not expected: run `rewind admin verify` and report this message"
        default:
            return nil
        }
    }
}
