import CoreMetrics
import Prometheus
import RewindCore
import RewindLoop

/// What `GET /metrics` shows (`--metrics`), in Prometheus's text format.
///
/// The handlers are swift-prometheus's collectors (swift-metrics' `CoreMetrics`
/// handler types), each with its `# HELP` line, on a registry this server
/// owns: nothing is bootstrapped globally, so several servers (or tests) in
/// one process never share numbers. The process's own figures
/// (`ProcessMetrics`) follow them, under the names every exporter uses.
///
/// Counting costs what the path it counts can afford. What happens per
/// delivery or per request (`LoopCounts`) is a plain integer added on the loop
/// thread, and is moved into the registry's counters on each scrape
/// (`publish`); gauges are read from the server then too. What happens per
/// batch or per undo (the histograms) is recorded into the registry at once.
final class ServerMetrics {
    let registry = PrometheusCollectorRegistry()
    let counts = LoopCounts()
    /// `counts` as last moved into the registry: each scrape adds the difference.
    private var published = LoopCounts()

    private let connections: any RecorderHandler
    private let hellos: (checking: any RecorderHandler, waiting: any RecorderHandler)
    private let documentsLoaded: any RecorderHandler
    private let documentTerminals: any RecorderHandler
    private let deliveries: any CounterHandler
    private let deliveredBytes: any CounterHandler
    private let slowDisconnects: any CounterHandler
    private let reconnects: any CounterHandler
    private var reconnectsPublished = 0
    private let outages: any CounterHandler
    private var outagesPublished = 0
    private let unavailableSeconds: Prometheus.Counter
    private var unavailablePublished = 0.0
    private let leftReadOnly: any CounterHandler
    private var leftReadOnlyPublished = 0
    private let batchEntries: any RecorderHandler
    private let commitTime: any TimerHandler
    private let undoTime: [any TimerHandler]
    /// Signed tokens checked (hello and refresh), by result: `accepted` or the refusal's reason.
    private let tokenResults: [String: any CounterHandler]
    private var apiResponses: [String: any CounterHandler]
    /// Webhook posts: answered 2xx, and not (tried again later).
    private let webhookPosts: (delivered: any CounterHandler, failed: any CounterHandler)
    private let makeAPICounter: (String) -> any CounterHandler
    /// Made when first needed: a label set nobody used shows no line.
    private var requestCounters: [Int: any CounterHandler] = [:]
    private var errorCounters: [Int: any CounterHandler] = [:]

    init(version: String) {
        let r = registry
        func named(_ name: String, _ help: String) -> MetricNameDescriptor { .init(metricName: name, unitName: "", helpText: help) }
        let latency: [Duration] = [.microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                                   .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                   .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10)]
        r.makeGauge(descriptor: named("rewind_build_info", "The server's version (always 1)."), labels: [("version", version)]).set(1.0)
        connections = r.makeGauge(descriptor: named("rewind_connections", "Terminals connected now (TCP and WebSocket)."))
        hellos = (r.makeGauge(descriptor: named("rewind_hellos_checking", "Hellos between their token's check and their answer now (at most --max-hellos-in-flight).")),
                  r.makeGauge(descriptor: named("rewind_hellos_waiting", "Hellos waiting for a place to be checked (--max-hellos-in-flight reached: a reconnect storm).")))
        documentsLoaded = r.makeGauge(descriptor: named("rewind_documents_loaded", "Documents held in memory now."))
        documentTerminals = r.makeGauge(descriptor: named("rewind_document_terminals", "Open documents summed over terminals (a terminal with two open counts twice)."))
        deliveries = r.makeCounter(descriptor: named("rewind_fanout_deliveries_total", "Pushes queued to terminals (one push to N terminals counts N)."))
        deliveredBytes = r.makeCounter(descriptor: named("rewind_fanout_bytes_total", "Bytes of the pushes queued to terminals."))
        slowDisconnects = r.makeCounter(descriptor: named("rewind_slow_disconnects_total", "Terminals closed with bye slow: they did not read their pushes."))
        reconnects = r.makeCounter(descriptor: named("rewind_pg_reconnects_total", "PostgreSQL connections made again after one was lost."))
        outages = r.makeCounter(descriptor: named("rewind_pg_outages_total", "Times the server lost its writable primary after having had one (a failover, a restart, a network cut)."))
        unavailableSeconds = r.makeCounter(descriptor: named("rewind_pg_unavailable_seconds_total", "Time without a writable primary since the server first had one, in seconds."))
        leftReadOnly = r.makeCounter(descriptor: named("rewind_pg_left_read_only_total", "Connections dropped because their server was not, or no longer, a writable primary (a standby, a demoted primary)."))
        batchEntries = r.makeValueHistogram(descriptor: named("rewind_commit_batch_entries", "Entries per commit batch sent to PostgreSQL."),
                                            buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000])
        commitTime = r.makeDurationHistogram(descriptor: named("rewind_commit_duration_seconds", "From a batch sent to PostgreSQL to its answer."),
                                             buckets: latency)
        let undo = named("rewind_undo_duration_seconds", "From an undo or redo request to its answer.")
        undoTime = ["undo", "redo"].map { r.makeDurationHistogram(descriptor: undo, labels: [("kind", $0)], buckets: latency) }
        let tokens = named("rewind_signed_tokens_total", "Signed tokens from the app checked at hello and refresh, by result: accepted, or why refused (details.reason).")
        tokenResults = Dictionary(uniqueKeysWithValues: (["accepted"] + TokenRefusal.allCases.map(\.rawValue)).map { result in
            (result, r.makeCounter(descriptor: tokens, labels: [("result", result)]))
        })
        let api = named("rewind_api_responses_total", "Responses of the server API (--api), by HTTP status.")
        makeAPICounter = { status in r.makeCounter(descriptor: api, labels: [("status", status)]) }
        let posts = named("rewind_webhook_posts_total", "Webhook posts made, by result: delivered (2xx) or failed (tried again later).")
        webhookPosts = (r.makeCounter(descriptor: posts, labels: [("result", "delivered")]), r.makeCounter(descriptor: posts, labels: [("result", "failed")]))
        apiResponses = Dictionary(uniqueKeysWithValues: ["200", "201", "400", "401", "403", "404", "405", "409", "429"].map { ($0, r.makeCounter(descriptor: api, labels: [("status", $0)])) })
    }

    // MARK: Recorded at once (per batch, per undo)

    /// A writer's batch was answered by PostgreSQL (`EventStore.onBatchAnswered`).
    func batchAnswered(entries: Int, nanoseconds: UInt64) {
        batchEntries.record(Int64(entries))
        commitTime.recordNanoseconds(Int64(nanoseconds))
    }

    /// A signed token was checked: accepted (nil) or refused for `refusal`.
    func tokenChecked(_ refusal: TokenRefusal?) {
        tokenResults[refusal?.rawValue ?? "accepted"]?.increment(by: 1)
    }

    /// The server API answered with `status`.
    func apiAnswered(_ status: Int) {
        let key = String(status)
        if apiResponses[key] == nil { apiResponses[key] = makeAPICounter(key) }  // one counter per status seen
        apiResponses[key]!.increment(by: 1)
    }

    /// A webhook post was answered 2xx (`ok`), or failed.
    func webhookPosted(_ ok: Bool) {
        (ok ? webhookPosts.delivered : webhookPosts.failed).increment(by: 1)
    }

    /// An undo (or redo) was answered, `nanoseconds` after it started.
    func undoAnswered(redo: Bool, nanoseconds: UInt64) {
        undoTime[redo ? 1 : 0].recordNanoseconds(Int64(nanoseconds))
    }

    // MARK: Published on each scrape

    /// What the server knows at the moment of a scrape.
    struct Snapshot {
        var connections: Int
        var hellosChecking = 0
        var hellosWaiting = 0
        var documentsLoaded: Int
        var documentTerminals: Int
        var reconnects: Int
        var outages: Int
        var unavailableSeconds: Double
        var leftReadOnly: Int
    }

    /// The text format, with everything counted so far.
    func render(_ now: Snapshot) -> [UInt8] {
        publish(now)
        var out: [UInt8] = []
        registry.emit(into: &out)
        out += ProcessMetrics.read().text.utf8
        return out
    }

    private func publish(_ now: Snapshot) {
        connections.record(Int64(now.connections))
        hellos.checking.record(Int64(now.hellosChecking))
        hellos.waiting.record(Int64(now.hellosWaiting))
        documentsLoaded.record(Int64(now.documentsLoaded))
        documentTerminals.record(Int64(now.documentTerminals))
        add(now.reconnects - reconnectsPublished, to: reconnects)
        reconnectsPublished = now.reconnects
        add(now.outages - outagesPublished, to: outages)
        outagesPublished = now.outages
        add(now.leftReadOnly - leftReadOnlyPublished, to: leftReadOnly)
        leftReadOnlyPublished = now.leftReadOnly
        if now.unavailableSeconds > unavailablePublished {
            unavailableSeconds.increment(by: now.unavailableSeconds - unavailablePublished)
            unavailablePublished = now.unavailableSeconds
        }
        add(counts.deliveries - published.deliveries, to: deliveries)
        add(counts.deliveredBytes - published.deliveredBytes, to: deliveredBytes)
        add(counts.slowDisconnects - published.slowDisconnects, to: slowDisconnects)
        for (i, n) in counts.requests.enumerated() where n != published.requests[i] {
            let counter = requestCounters[i] ?? registry.makeCounter(
                descriptor: Self.requestsName, labels: [("type", RequestLabels.types[i])])
            requestCounters[i] = counter
            add(n - published.requests[i], to: counter)
        }
        for (key, n) in counts.errors where n != published.errors[key] {
            let (type, code) = key.quotientAndRemainder(dividingBy: RequestLabels.codes.count)
            let counter = errorCounters[key] ?? registry.makeCounter(
                descriptor: Self.errorsName, labels: [("type", RequestLabels.types[type]), ("code", RequestLabels.codes[code].rawValue)])
            errorCounters[key] = counter
            add(n - (published.errors[key] ?? 0), to: counter)
        }
        published = counts.copy()
    }

    private static var requestsName: MetricNameDescriptor { MetricNameDescriptor(metricName: "rewind_requests_total", unitName: "",
                                                            helpText: "Requests answered, by type (other: a type this server does not know).") }
    private static var errorsName: MetricNameDescriptor { MetricNameDescriptor(metricName: "rewind_request_errors_total", unitName: "",
                                                          helpText: "Error replies, by request type and error code.") }

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
