import ArgumentParser
import Glibc
import RewindCore
import RewindStore

/// A RewindError as a CLI failure: message on stderr, exit code by kind.
struct Failure: Error, CustomStringConvertible {
    let error: RewindError
    init(_ e: RewindError) { error = e }
    var description: String { "error: \(error.code.rawValue): \(error.message)" }
    var exitCode: Int32 {
        switch error.code {
        case .conflict: return 3
        case .notFound: return 4
        case .unavailable: return 5
        default: return 1
        }
    }
}
