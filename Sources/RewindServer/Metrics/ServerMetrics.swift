import CoreMetrics
import Prometheus
import RewindCore
import RewindLoop

/// What `GET /metrics` shows (`--metrics`), in Prometheus's text format.
///
/// The handlers are swift-metrics' (`CoreMetrics`), made by swift-prometheus's
/// factory on a registry this server owns: nothing is bootstrapped globally,
/// so several servers (or tests) in one process never share numbers.
///
/// Counting costs what the path it counts can afford. What happens per
/// delivery or per request (`LoopCounts`) is a plain integer added on the loop
/// thread, and is moved into the registry's counters on each scrape
/// (`publish`); gauges are read from the server then too. What happens per
/// batch or per undo (the histograms) is recorded into the registry at once.
final class ServerMetrics {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    let counts = LoopCounts()
    /// `counts` as last moved into the registry: each scrape adds the difference.
    private var published = LoopCounts()

    private let connections: any RecorderHandler
    private let documentsLoaded: any RecorderHandler
    private let documentTerminals: any RecorderHandler
    private let deliveries: any CounterHandler
    private let deliveredBytes: any CounterHandler
    private let slowDisconnects: any CounterHandler
    private let reconnects: any CounterHandler
    private var reconnectsPublished = 0
    private let batchEntries: any RecorderHandler
    private let commitTime: any TimerHandler
    private let undoTime: [any TimerHandler]
    /// Made when first needed: a label set nobody used shows no line.
    private var requestCounters: [Int: any CounterHandler] = [:]
    private var errorCounters: [Int: any CounterHandler] = [:]

    init() {
        var f = PrometheusMetricsFactory(registry: registry)
        f.valueHistogramBuckets["rewind_commit_batch_entries"] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000]
        let latency: [Duration] = [.microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                                   .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                   .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10)]
        f.durationHistogramBuckets["rewind_commit_duration_seconds"] = latency
        f.durationHistogramBuckets["rewind_undo_duration_seconds"] = latency
        factory = f
        connections = f.makeRecorder(label: "rewind_connections", dimensions: [], aggregate: false)
        documentsLoaded = f.makeRecorder(label: "rewind_documents_loaded", dimensions: [], aggregate: false)
        documentTerminals = f.makeRecorder(label: "rewind_document_terminals", dimensions: [], aggregate: false)
        deliveries = f.makeCounter(label: "rewind_fanout_deliveries_total", dimensions: [])
        deliveredBytes = f.makeCounter(label: "rewind_fanout_bytes_total", dimensions: [])
        slowDisconnects = f.makeCounter(label: "rewind_slow_disconnects_total", dimensions: [])
        reconnects = f.makeCounter(label: "rewind_pg_reconnects_total", dimensions: [])
        batchEntries = f.makeRecorder(label: "rewind_commit_batch_entries", dimensions: [], aggregate: true)
        commitTime = f.makeTimer(label: "rewind_commit_duration_seconds", dimensions: [])
        undoTime = ["undo", "redo"].map { f.makeTimer(label: "rewind_undo_duration_seconds", dimensions: [("kind", $0)]) }
    }

    // MARK: Recorded at once (per batch, per undo)

    /// A writer's batch was answered by PostgreSQL (`EventStore.onBatchAnswered`).
    func batchAnswered(entries: Int, nanoseconds: UInt64) {
        batchEntries.record(Int64(entries))
        commitTime.recordNanoseconds(Int64(nanoseconds))
    }

    /// An undo (or redo) was answered, `nanoseconds` after it started.
    func undoAnswered(redo: Bool, nanoseconds: UInt64) {
        undoTime[redo ? 1 : 0].recordNanoseconds(Int64(nanoseconds))
    }

    // MARK: Published on each scrape

    /// What the server knows at the moment of a scrape.
    struct Snapshot {
        var connections: Int
        var documentsLoaded: Int
        var documentTerminals: Int
        var reconnects: Int
    }

    /// The text format, with everything counted so far.
    func render(_ now: Snapshot) -> [UInt8] {
        publish(now)
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }

    private func publish(_ now: Snapshot) {
        connections.record(Int64(now.connections))
        documentsLoaded.record(Int64(now.documentsLoaded))
        documentTerminals.record(Int64(now.documentTerminals))
        add(now.reconnects - reconnectsPublished, to: reconnects)
        reconnectsPublished = now.reconnects
        add(counts.deliveries - published.deliveries, to: deliveries)
        add(counts.deliveredBytes - published.deliveredBytes, to: deliveredBytes)
        add(counts.slowDisconnects - published.slowDisconnects, to: slowDisconnects)
        for (i, n) in counts.requests.enumerated() where n != published.requests[i] {
            let counter = requestCounters[i] ?? factory.makeCounter(
                label: "rewind_requests_total", dimensions: [("type", RequestLabels.types[i])])
            requestCounters[i] = counter
            add(n - published.requests[i], to: counter)
        }
        for (key, n) in counts.errors where n != published.errors[key] {
            let (type, code) = key.quotientAndRemainder(dividingBy: RequestLabels.codes.count)
            let counter = errorCounters[key] ?? factory.makeCounter(
                label: "rewind_request_errors_total", dimensions: [("type", RequestLabels.types[type]), ("code", RequestLabels.codes[code].rawValue)])
            errorCounters[key] = counter
            add(n - (published.errors[key] ?? 0), to: counter)
        }
        published = counts.copy()
    }

    private func add(_ n: Int, to counter: any CounterHandler) {
        if n > 0 { counter.increment(by: Int64(n)) }
    }
}

/// Counts of things that happen too often for a lock or an atomic each:
/// plain integers, touched only on the loop's thread.
final class LoopCounts {
    /// Pushes queued to a terminal (one broadcast to N terminals is N), and their bytes.
    @exclusivity(unchecked) var deliveries = 0
    @exclusivity(unchecked) var deliveredBytes = 0
    /// Terminals closed with `bye` `slow`.
    var slowDisconnects = 0
    /// Requests by type (`RequestLabels.types` index).
    @exclusivity(unchecked) var requests = [Int](repeating: 0, count: RequestLabels.types.count)
    /// Error replies by type and code: `type * codes + code`.
    var errors: [Int: Int] = [:]

    func request(_ type: Int) { requests[type] += 1 }

    /// A line that was not a request: counted as one of type `malformed`, with its error.
    func malformed(_ code: ErrorCode) {
        request(RequestLabels.malformed)
        error(RequestLabels.malformed, code)
    }

    func error(_ type: Int, _ code: ErrorCode) {
        errors[type * RequestLabels.codes.count + RequestLabels.codeIndex[code]!, default: 0] += 1
    }

    func copy() -> LoopCounts {
        let c = LoopCounts()
        c.deliveries = deliveries
        c.deliveredBytes = deliveredBytes
        c.slowDisconnects = slowDisconnects
        c.requests = requests
        c.errors = errors
        return c
    }
}

/// The values the `type` and `code` labels take. A request's type comes from
/// the client: one not listed here counts as `other` (a label per string a
/// client makes up would let it grow the scrape without bound).
enum RequestLabels {
    static let types = RequestType.all.map(\.name) + ["other", "malformed"]
    static let typeIndex: [String: Int] = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($1, $0) })
    static let other = typeIndex["other"]!
    /// A line that is not a request (too long, not JSON, no type): its type is unknown.
    static let malformed = typeIndex["malformed"]!
    static let codes = ErrorCode.allCases
    static let codeIndex: [ErrorCode: Int] = Dictionary(uniqueKeysWithValues: codes.enumerated().map { ($1, $0) })

    static func index(of type: String) -> Int { typeIndex[type] ?? other }
}
