import Logging
import RewindCore
import RewindLoop

/// What a connection asks of the server it belongs to: the clock, and the
/// handful of things it reports or hands on. Nothing else — a connection
/// cannot reach documents, prompts or other connections through it. Its
/// settings (`config`, the logger, the metrics, the web files) it is given
/// once, at accept. `Server` is the one host.
protocol ConnectionHost: AnyObject {
    /// Milliseconds by the loop's clock (a test can move it on).
    var now: UInt64 { get }
    /// A complete frame: the request goes to its handler (`Handlers.swift`).
    func handle(_ frame: FrameDecoder.Frame, from c: Connection)
    /// A PROXY header was read: the client it names is admitted, or refused (`Connection.refusal`).
    func proxyHeaderRead(_ c: Connection)
    /// The connection is gone: its documents, groups, prompts and presence are let go.
    func connectionEnded(_ c: Connection, reason: String)
    /// It used its share of this loop turn with frames left.
    func continueNextTurn(_ c: Connection)
    /// Bytes it holds in an incomplete line (counted server-wide against `--max-partial-bytes`).
    func partialLineChanged(_ c: Connection, to bytes: Int)
    func webSocketOpened(_ c: Connection)
    /// Closed once this loop turn is over (`closeAfterTurn`).
    func closeAfterTurn(_ c: Connection)
    /// A stream saying `bye`: reset if the peer has not closed it within the grace period.
    func resetLater(_ socket: TCPSocket)
    /// An error the terminal asked to see as a prompt (`hello` with `error_prompts`).
    func presentErrorPrompt(_ e: RewindError, for r: Request, to s: Session)
    /// It has output waiting: written just before the loop sleeps.
    func outputPending(_ c: Connection)
    /// The user's handle (`users.name`) of the session, for logs.
    func handle(of s: Session) -> String
}

extension Server: ConnectionHost {
    func outputPending(_ c: Connection) { sessions.outputPending(c) }
    func presentErrorPrompt(_ e: RewindError, for r: Request, to s: Session) { prompts.presentError(e, for: r, to: s) }
    func handle(of s: Session) -> String { signedSessions[s.id]?.handle ?? s.user.name }
}

/// What every connection of a server reads and never changes: one object
/// for all of them, so a connection holds one reference, not a copy.
final class ConnectionSettings {
    /// The server, seen only as what a connection may ask of it (here, not
    /// in each connection: 16 bytes less for every terminal).
    unowned let host: any ConnectionHost
    let config: ServerConfig
    let logger: Logger
    let metrics: ServerMetrics?
    let webFiles: WebFiles
    /// `--max-output-bytes`, read on each push.
    let maxOutputBytes: Int
    /// Where pushes are counted (`--metrics`; nil: they are not).
    let counts: LoopCounts?

    init(host: any ConnectionHost, config: ServerConfig, logger: Logger, metrics: ServerMetrics?, webFiles: WebFiles) {
        self.host = host
        self.config = config; self.logger = logger; self.metrics = metrics; self.webFiles = webFiles
        maxOutputBytes = config.maxOutputBytes
        counts = metrics?.counts
    }
}
