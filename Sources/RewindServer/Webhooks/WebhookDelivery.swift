import Glibc
import Logging
import RewindCore
import RewindLoop
import RewindStore

/// This instance's part in delivering webhooks (schema/022): it takes the
/// lease of every enabled endpoint no live instance holds, renews the ones
/// it holds, and runs an `EndpointDeliverer` for each. Any number of
/// instances may run it; each endpoint is delivered by one at a time.
///
/// Why two instances never post the same entry: a lease is taken and
/// renewed for `leaseSeconds` by PostgreSQL's clock, and another instance
/// may take it only once it has run out there. The holder lets a post start
/// only until `lease − timeout − lease/6` after it *sent* its last renewal,
/// measured on its own clock, and every post ends (curl's whole-request
/// timeout) within `timeout` of its start: the last post of an instance that
/// lost its lease (a pause, a cut network) has ended before anyone else may
/// hold the lease, with a sixth of the lease to spare for clocks that do not
/// tick alike. Its writes are fenced too: it learns at the next one and stops.
final class WebhookDelivery {
    private final class Lessee: @unchecked Sendable {
        let conninfo: String
        var db: Database?
        init(conninfo: String) { self.conninfo = conninfo }
    }

    let owner: String
    private let settings: WebhookSettings
    private let loop: EventLoop
    private let logger: Logger
    private let clock: () -> UInt64
    private let conninfo: String
    private let content: DocumentKeys?
    private let client: HTTPClient
    private let lessee: Lessee
    private let timer: Timer
    private var deliverers: [Int64: EndpointDeliverer] = [:]
    private var renewing = false
    private var stopped = false
    /// The last records and the leases' release, held while a renewal is under way: the lessee's
    /// connection serves one job at a time, and a renewal that ended after the release would take the leases again.
    private var finalJob: (() -> Void)?
    var onPosted: (Bool) -> Void = { _ in }

    init(settings: WebhookSettings, conninfo: String, content: DocumentKeys?, loop: EventLoop, logger: Logger, clock: @escaping () -> UInt64) {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        var random = [UInt8](repeating: 0, count: 6)
        random.withUnsafeMutableBytes { RandomBytes.fill($0) }
        owner = "\(String(cString: host)):\(getpid()):" + random.map { String($0, radix: 16) }.joined()
        self.settings = settings
        self.conninfo = conninfo
        self.content = content
        self.loop = loop
        self.logger = logger
        self.clock = clock
        client = HTTPClient(loop: loop)
        lessee = Lessee(conninfo: conninfo)
        timer = Timer(loop: loop)
    }

    var leaseMs: UInt64 { UInt64(settings.leaseSeconds) * 1_000 }
    /// How long after a renewal was sent posts may still start (see the type's comment).
    var safeMs: UInt64 { leaseMs - settings.timeoutMs - leaseMs / 6 }

    func start() {
        timer.start(after: 0, repeat: max(100, leaseMs / 10)) { [unowned self] in self.renew() }
    }

    private func renew() {
        guard !renewing, !stopped else { return }
        renewing = true
        let sentAt = clock(), lessee = self.lessee, owner = self.owner, seconds = settings.leaseSeconds
        BackgroundWork.run(on: loop, { () -> Result<[Webhooks.Endpoint], RewindError> in
            do throws(RewindError) {
                if lessee.db == nil { lessee.db = try Database(lessee.conninfo) }
                return .success(try Webhooks.lease(owner: owner, seconds: seconds, db: lessee.db!))
            } catch {
                lessee.db = nil
                return .failure(error)
            }
        }) { [self] result in
            self.renewing = false
            guard !self.stopped else {
                self.finalJob?()
                self.finalJob = nil
                return
            }
            switch result {
            case let .success(endpoints): self.held(endpoints, until: sentAt + self.safeMs)
            case let .failure(e):
                // Deliverers go on until their lease's safe part ends, then wait for a renewal.
                self.logger.warning("webhooks: could not renew leases", metadata: ["error": "\(e.message)"])
            }
        }
    }

    private func held(_ endpoints: [Webhooks.Endpoint], until: UInt64) {
        var kept = Set<Int64>()
        for e in endpoints {
            kept.insert(e.id)
            if let d = deliverers[e.id] {
                if d.endpoint.generation == e.generation && d.endpoint.url == e.url {
                    d.postsAllowedUntil = until
                    continue
                }
                d.stop()  // changed by an operator: the new generation starts from its stored position
            }
            guard let d = EndpointDeliverer(endpoint: e, settings: settings, owner: owner, client: client, content: content,
                                            conninfo: conninfo, loop: loop, logger: logger, clock: clock, postsAllowedUntil: until) else {
                logger.error("webhook's secret is not a Standard Webhooks secret; not delivering it", metadata: ["webhook": "\(e.id)"])
                continue
            }
            d.onEnd = { [unowned self] d in
                if self.deliverers[d.endpoint.id] === d { self.deliverers[d.endpoint.id] = nil }
            }
            d.onPosted = { [unowned self] ok in self.onPosted(ok) }
            deliverers[e.id] = d
            d.start()
        }
        for (id, d) in deliverers where !kept.contains(id) {
            logger.info("webhook's lease not renewed (disabled, removed, or another instance's now)", metadata: ["webhook": "\(id)"])
            d.stop()
        }
    }

    /// Stops every deliverer, records how far each got and lets go of the leases, so that another instance takes them up at once.
    func stop() {
        guard !stopped else { return }
        stopped = true
        timer.close()
        let final = deliverers.values.map { ($0.endpoint, $0.stop()) }
        deliverers = [:]
        client.close()
        let lessee = self.lessee, owner = self.owner, logger = self.logger, loop = self.loop
        let job = { BackgroundWork.run(on: loop, { () -> RewindError? in
            do throws(RewindError) {
                if lessee.db == nil { lessee.db = try Database(lessee.conninfo) }
                for (endpoint, progress) in final { _ = try Webhooks.record(endpoint, owner: owner, progress, db: lessee.db!) }
                try Webhooks.release(owner: owner, db: lessee.db!)
                lessee.db = nil
                return nil
            } catch {
                lessee.db = nil
                return error
            }
        }) { error in
            if let error { logger.warning("webhooks: could not release leases at shutdown (they run out by themselves)", metadata: ["error": "\(error.message)"]) }
        } }
        if renewing { finalJob = job } else { job() }
    }
}
