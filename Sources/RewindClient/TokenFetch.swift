import Synchronization

/// A token asked of the app's `getToken` (an async function, run as a task
/// on whatever thread Swift picks), handed over to the single-threaded
/// session when its owner next polls (`ClientSession.pollToken`): the app's
/// sign-in stays the app's, and the session never waits inside it.
final class TokenFetch: Sendable {
    enum Purpose: Sendable, Equatable {
        /// For the `hello` of a new connection (at start, after any reconnect — a `bye` `token_expired` among them).
        case hello
        /// For `refresh`, asked on `token_expiring`.
        case refresh
    }

    let purpose: Purpose
    private let result = Mutex<Result<String, ClientError>?>(nil)

    init(_ getToken: @escaping @Sendable () async throws -> String, for purpose: Purpose) {
        self.purpose = purpose
        Task { [self] in
            let got: Result<String, ClientError>
            do { got = .success(try await getToken()) } catch {
                got = .failure(ClientError(code: "token", message: "getToken failed: \(error)"))
            }
            self.result.withLock { $0 = got }
        }
    }

    /// The token (or why there is none) once `getToken` has answered; nil until then.
    func take() -> Result<String, ClientError>? {
        result.withLock { r in
            defer { r = nil }
            return r
        }
    }
}
