import RewindCore
import RewindLoop
import RewindStore

/// What the server API does (PROTOCOL.md, "The server API"; every route,
/// field and answer is in `docs/api/openapi.yaml`): documents made, read,
/// edited, shared, deleted and brought back by an application's backend. A
/// key acts with its scopes on every document — it is the app's backend,
/// trusted as the operator's CLI is — and edits as the user a request names
/// (who must have a role that allows editing) or as its own service user.
/// Edits go through the document's runtime exactly as a terminal's `submit`:
/// rebased, committed, pushed to every terminal, undoable by their user.
extension Server {
    typealias APIAnswer = (APIResponse) -> Void

    func answerAPI(_ r: APIRequest, key: APIKeys.Key, _ done: @escaping APIAnswer) {
        let s = r.segments
        // PostgreSQL's text cannot hold U+0000, and the C string a parameter is sent as would end there:
        // `/v1/docs/a%00x` must not reach document "a".
        if s.contains(where: { $0.utf8.contains(0) }) || r.query.contains(where: { $0.key.utf8.contains(0) || $0.value.utf8.contains(0) }) {
            return done(.problem(.badRequest("the path and query may not hold U+0000 (%00)")))
        }
        if s == ["v1", "events"] {
            guard r.method == "GET" else {
                var p = APIResponse.problem(RewindError(.badRequest, "\(r.method) is not allowed here (GET)"), status: 405)
                p.headers.append(("Allow", "GET"))
                return done(p)
            }
            guard key.scopes.contains(.eventsRead) else {
                return done(.problem(RewindError(.forbidden, "key \(key.name) lacks the scope events:read", details: ["scope": "events:read"])))
            }
            do throws(RewindError) { try apiFollow(r, key: key, done) } catch { done(.problem(error)) }
            return
        }
        guard s.count >= 2, s[0] == "v1", s[1] == "docs" else {
            return done(.problem(.notFound("no route \(r.method) \(r.target.split(separator: "?").first ?? "") (docs/api/openapi.yaml lists them)")))
        }
        func need(_ scope: APIKeys.Scope) -> Bool {
            if key.scopes.contains(scope) { return true }
            done(.problem(RewindError(.forbidden, "key \(key.name) lacks the scope \(scope.rawValue)", details: ["scope": .string(scope.rawValue)])))
            return false
        }
        func methods(_ allowed: [String]) -> Bool {
            if allowed.contains(r.method) { return true }
            var p = APIResponse.problem(RewindError(.badRequest, "\(r.method) is not allowed here (\(allowed.joined(separator: ", ")))"), status: 405)
            p.headers.append(("Allow", allowed.joined(separator: ", ")))
            done(p)
            return false
        }
        let doc = s.count >= 3 ? s[2] : nil
        if let doc, doc.utf8.count > config.limits.maxNameBytes || doc.isEmpty {
            return done(.problem(.badRequest("a document id is 1 to \(config.limits.maxNameBytes) bytes")))
        }
        do throws(RewindError) {
            switch (s.count, s.count >= 4 ? s[3] : nil) {
            case (2, _):
                guard methods(["POST"]), need(.docsWrite) else { return }
                try apiCreateDocument(try apiBody(r), done)
            case (3, _):
                guard methods(["GET", "DELETE"]) else { return }
                if r.method == "GET" { if need(.docsRead) { apiDocumentInfo(doc!, done) } } else if need(.docsWrite) { apiDelete(doc!, done) }
            case (4, "state"):
                guard methods(["GET"]), need(.docsRead) else { return }
                apiState(doc!, version: try apiInt(r, "version"), done)
            case (4, "events"):
                guard methods(["GET"]), need(.docsRead) else { return }
                try apiEvents(doc!, after: try apiInt(r, "after") ?? 0, limit: try apiInt(r, "limit") ?? 100, done)
            case (4, "submit"):
                guard methods(["POST"]), need(.docsWrite) else { return }
                try apiSubmit(doc!, try apiBody(r), key: key, done)
            case (4, "undelete"):
                guard methods(["POST"]), need(.docsWrite) else { return }
                apiUndelete(doc!, done)
            case (5, "roles"):
                guard methods(["PUT", "DELETE"]), need(.accessWrite) else { return }
                try apiSetRole(doc!, user: s[4], role: r.method == "DELETE" ? nil : try apiBody(r), key: key, done)
            default:
                done(.problem(.notFound("no route \(r.method) \(r.target.split(separator: "?").first ?? "") (docs/api/openapi.yaml lists them)")))
            }
        } catch {
            done(.problem(error))
        }
    }

    // MARK: Following the log

    /// GET /v1/events?after=P&doc_prefix=… (or `Last-Event-ID: P`) → Server-Sent Events, one an entry,
    /// `id:` its position; content (`ops`) only for a key that may read documents (docs:read).
    func apiFollow(_ r: APIRequest, key: APIKeys.Key, _ done: @escaping APIAnswer) throws(RewindError) {
        var after = try apiInt(r, "after") ?? 0
        if let last = r.header("last-event-id"), !last.isEmpty {
            guard let p = Int64(last), p >= 0 else { throw .badRequest("`Last-Event-ID` must be a position (a whole number of 0 or more)") }
            after = p
        }
        let prefix = r.query["doc_prefix"].flatMap { $0.isEmpty ? nil : $0 }
        if let prefix, prefix.utf8.count > config.limits.maxNameBytes { throw .badRequest("`doc_prefix` is longer than \(config.limits.maxNameBytes) bytes") }
        guard let api else { throw RewindError(.unavailable, "the API is stopping") }
        guard api.followers.count < ServerAPI.maxFollowers else {
            throw RewindError(.unavailable, "\(ServerAPI.maxFollowers) streams of the log are open already; try again later",
                              details: ["retry_after_ms": 5_000])
        }
        let content = key.scopes.contains(.docsRead) ? DocumentKeys(master: store.keys.master) : nil
        var response = APIResponse(status: 200, headers: [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")],
                                   contentType: "text/event-stream", body: [])
        response.stream = { [unowned self] sink in
            let follower = LogFollower(sink: sink, loop: self.loop, conninfo: self.config.conninfo, content: content, after: after,
                                       prefix: prefix, key: key.id, clock: { [unowned self] in self.now }) { [weak api] f in
                api?.followers[ObjectIdentifier(f)] = nil
            }
            api.followers[ObjectIdentifier(follower)] = follower
            follower.start()
        }
        done(response)
    }

    // MARK: Reading requests

    /// The body as a JSON object (an empty body is an empty object).
    func apiBody(_ r: APIRequest) throws(RewindError) -> JSONObject {
        if let type = r.header("content-type"), !type.lowercased().hasPrefix("application/json") {
            throw .badRequest("send the body as application/json (Content-Type: \(type))")
        }
        if r.body.isEmpty { return JSONObject() }
        guard let o = (try? JSONParser.parse(r.body, maxDepth: config.limits.maxJSONDepth))?.objectValue else {
            throw .badRequest("the body is not a JSON object")
        }
        return o
    }

    /// A query parameter that must be a whole number of 0 or more, if given.
    func apiInt(_ r: APIRequest, _ name: String) throws(RewindError) -> Int64? {
        guard let v = r.query[name] else { return nil }
        guard let n = Int64(v), n >= 0 else { throw .badRequest("`\(name)` must be a whole number of 0 or more") }
        return n
    }

    private func string(_ o: JSONObject, _ key: String, maxBytes: Int, required: Bool) throws(RewindError) -> String? {
        guard let v = o[key], !v.isNull else {
            if required { throw .badRequest("missing field `\(key)`") }
            return nil
        }
        guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= maxBytes else { throw .badRequest("`\(key)` must be a string of 1 to \(maxBytes) bytes") }
        return s
    }

    // MARK: Documents

    /// POST /v1/docs `{doc?, title?, owner}` → 201 `{doc, version: 0, owner}`.
    func apiCreateDocument(_ body: JSONObject, _ done: @escaping APIAnswer) throws(RewindError) {
        let doc = try string(body, "doc", maxBytes: config.limits.maxNameBytes, required: false) ?? "doc-" + UUID.random()
        let title = try string(body, "title", maxBytes: 1024, required: false)
        let ownerName = try string(body, "owner", maxBytes: 64, required: true)!
        store.user(named: ownerName) { [unowned self] result in
            switch result {
            case let .failure(e): done(.problem(e))
            case .success(nil): done(.problem(.notFound("no user \"\(ownerName)\"", details: ["user": .string(ownerName)])))
            case let .success(owner?):
                self.store.createDocument(doc, title: title, owner: owner.id) { result in
                    switch result {
                    case let .failure(e): done(.problem(e))
                    case .success(false): done(.problem(.conflict("document \"\(doc)\" already exists (or existed: ids are never reused)")))
                    case .success(true):
                        done(.json(201, .obj([("doc", .string(doc)), ("version", 0), ("owner", .string(owner.name)), ("title", title.map { .string($0) } ?? .null)]),
                                   headers: [("Location", "/v1/docs/" + Self.pathSegment(doc))]))
                    }
                }
            }
        }
    }

    /// GET /v1/docs/{doc} → its metadata, deleted or not (a purged one too).
    func apiDocumentInfo(_ doc: String, _ done: @escaping APIAnswer) {
        store.documentInfo(doc) { result in
            switch result {
            case let .failure(e): done(.problem(e))
            case .success(nil): done(.problem(.notFound("no document \"\(doc)\"", details: ["doc": .string(doc)])))
            case let .success(i?):
                done(.json(200, .obj([
                    ("doc", .string(i.doc)), ("head", .int(i.head)), ("title", i.title.map { .string($0) } ?? .null), ("owner", .string(i.owner)),
                    ("created", .string(i.created)), ("deleted", i.deleted.map { .string($0) } ?? .null), ("purged", .bool(i.purged)),
                    ("members", .array(i.members.map { .obj([("user", .string($0.user)), ("role", .string($0.role))]) })),
                ])))
            }
        }
    }

    /// `doc`'s roles, or `not_found` (no such document, or deleted) — before anything that reads or edits it.
    private func apiExisting(_ doc: String, _ done: @escaping APIAnswer, _ then: @escaping (DocumentAccess) -> Void) {
        access.load(doc) { result in
            switch result {
            case let .failure(e): done(.problem(e))
            case .success(nil): done(.problem(.notFound("no document \"\(doc)\"", details: ["doc": .string(doc)])))
            case let .success(a?): then(a)
            }
        }
    }

    /// GET /v1/docs/{doc}/state[?version=V] → `{doc, version, head, state}`.
    func apiState(_ doc: String, version: Int64?, _ done: @escaping APIAnswer) {
        apiExisting(doc, done) { [unowned self] _ in
            self.pastStates.headVersion(of: doc) { result in
                let head: Int64
                switch result {
                case let .failure(e): return done(.problem(e))
                case let .success(h): head = h
                }
                let v = version ?? head
                guard v <= head else {
                    return done(.problem(RewindError(.version, "version \(v) is beyond the head \(head)", details: ["head": .int(head)])))
                }
                self.pastStates.document(doc, at: v, head: head) { result in
                    switch result {
                    case let .failure(e): done(.problem(e))
                    case let .success(d):
                        done(.json(200, .obj([("doc", .string(doc)), ("version", .int(v)), ("head", .int(head)), ("state", d.json)])))
                    }
                }
            }
        }
    }

    /// GET /v1/docs/{doc}/events?after=V&limit=N → `{doc, head, events, next}` (at most 1,000 a page; `next`: ask again with `after` = it).
    func apiEvents(_ doc: String, after: Int64, limit: Int64, _ done: @escaping APIAnswer) throws(RewindError) {
        guard (1...1_000).contains(limit) else { throw .badRequest("`limit` must be 1 to 1000") }
        apiExisting(doc, done) { [unowned self] _ in
            let d = self.documents.runtime(doc)
            d.opensInFlight += 1  // kept while it reads
            d.whenCurrent { [unowned self] error in
                if let error {
                    d.opensInFlight -= 1
                    self.documents.mayBeIdle(d)
                    return done(.problem(error))
                }
                let head = d.committed.version
                guard after <= head else {
                    d.opensInFlight -= 1
                    self.documents.mayBeIdle(d)
                    return done(.problem(RewindError(.version, "`after` \(after) is beyond the head \(head)", details: ["head": .int(head)])))
                }
                d.checkedEvents(after: after, limit: Int(limit)) { [unowned self] result in
                    d.opensInFlight -= 1
                    self.documents.mayBeIdle(d)
                    switch result {
                    case let .failure(e): done(.problem(e))
                    case let .success(events):
                        let last = events.last?.version ?? after
                        done(.json(200, .obj([("doc", .string(doc)), ("head", .int(head)), ("events", .array(events.map(\.json))),
                                              ("next", last < head ? .int(last) : .null)])))
                    }
                }
            }
        }
    }

    /// POST /v1/docs/{doc}/submit `{tx, base, ops, user?, action?}` → `{doc, version}`.
    func apiSubmit(_ doc: String, _ body: JSONObject, key: APIKeys.Key, _ done: @escaping APIAnswer) throws(RewindError) {
        let limits = config.limits
        let tx = try string(body, "tx", maxBytes: limits.maxNameBytes, required: true)!
        guard let base = body["base"].flatMap(Self.wholeNumber), base >= 0 else {
            throw .badRequest("`base` must be a whole number of 0 or more: the version the ops were made against")
        }
        let ops = try Op.parseList(body["ops"].map(Self.wholeNumbersInOps), limits: limits)
        guard !ops.isEmpty else { throw .badRequest("`ops` is empty; a transaction must change something") }
        let action = try string(body, "action", maxBytes: limits.maxNameBytes, required: false)
        let named = try string(body, "user", maxBytes: 64, required: false)
        let client = "api:" + key.name
        apiExisting(doc, done) { [unowned self] roles in
            let submit = { (user: (id: Int64, name: String)) in
                var s = DocumentLedger.Submission(tx: tx, base: base, ops: ops, action: action, userID: user.id, userName: user.name,
                                                  client: client, eventID: UUID.random(), time: wallClockMillis())
                s.typingWindow = 0  // each API submit is a group of its own
                s.instance = Int64(self.cluster.instance)
                let d = self.documents.runtime(doc)
                d.opensInFlight += 1
                d.run(.init(command: .submit(s), replies: [{ [unowned self] result in
                    d.opensInFlight -= 1
                    self.documents.mayBeIdle(d)
                    switch result {
                    case let .success(.version(v)): done(.json(200, .obj([("doc", .string(doc)), ("version", .int(v))])))
                    case .success: done(.problem(RewindError(.internal, "submit answered with something other than a version")))
                    // Ops well formed that do not apply to the document as it is: a conflict with its state.
                    case let .failure(e) where e.code == .badRequest: done(.problem(e, status: 409))
                    case let .failure(e): done(.problem(e))
                    }
                }]))
            }
            guard let named else { return submit((id: key.serviceUser.id, name: key.name)) }
            self.store.user(named: named) { result in
                switch result {
                case let .failure(e): done(.problem(e))
                case let .success(u):
                    // No such user has no role either: forbidden, as for a user without one (the document is found).
                    guard let u, roles.role(of: u.id)?.allows(.edit) == true else {
                        return done(.problem(RewindError(.forbidden, "user \"\(named)\" has no role on \"\(doc)\" that allows editing",
                                                         details: ["user": .string(named)])))
                    }
                    // Shown in events and presence as terminals show the user (its display name, if it has one).
                    submit((id: u.id, name: u.displayName ?? u.name))
                }
            }
        }
    }

    /// DELETE /v1/docs/{doc} → `{doc, deleted: true}`; every terminal with it open is told `closed` `deleted`.
    func apiDelete(_ doc: String, _ done: @escaping APIAnswer) {
        apiExisting(doc, done) { [unowned self] roles in
            self.store.deleteDocument(doc, owner: roles.owner) { [unowned self] result in
                switch result {
                case let .failure(e): done(.problem(e))
                case .success(false): done(.problem(.notFound("no document \"\(doc)\"", details: ["doc": .string(doc)])))
                case .success(true):
                    self.logger.info("document deleted (API)", metadata: ["doc": "\(doc)"])
                    self.access.deleted(doc)
                    done(.json(200, .obj([("doc", .string(doc)), ("deleted", true)])))
                }
            }
        }
    }

    /// POST /v1/docs/{doc}/undelete → `{doc, deleted: false}` within `--deleted-retention-days`, unless purged.
    func apiUndelete(_ doc: String, _ done: @escaping APIAnswer) {
        store.undelete(doc, retentionDays: config.deletedRetentionDays) { [unowned self] result in
            switch result {
            case let .failure(e): done(.problem(e))
            case let .success(outcome):
                switch outcome {
                case .undeleted:
                    self.logger.info("document undeleted (API)", metadata: ["doc": "\(doc)"])
                    done(.json(200, .obj([("doc", .string(doc)), ("deleted", false)])))
                case .notFound: done(.problem(.notFound("no document \"\(doc)\"", details: ["doc": .string(doc)])))
                case .notDeleted: done(.problem(.conflict("\"\(doc)\" is not deleted")))
                case .purged: done(.problem(.conflict("\"\(doc)\" was purged: its content is erased for good")))
                case .pastRetention: done(.problem(.conflict("\"\(doc)\" was deleted more than \(self.config.deletedRetentionDays) days ago")))
                }
            }
        }
    }

    /// PUT /v1/docs/{doc}/roles/{user} `{role}` / DELETE → `{doc, user, role}`; takes effect at once, on every instance.
    func apiSetRole(_ doc: String, user: String, role body: JSONObject?, key: APIKeys.Key, _ done: @escaping APIAnswer) throws(RewindError) {
        var role: Role?
        if let body {
            guard let name = body["role"]?.stringValue, let r = Role(rawValue: name), r != .owner else {
                throw .badRequest("`role` must be \"editor\" or \"viewer\" (DELETE takes a role away; the owner's cannot change)")
            }
            role = r
        }
        apiExisting(doc, done) { [unowned self] _ in
            self.store.share(doc: doc, user: user, role: role, by: key.serviceUser.id) { [unowned self] result in
                switch result {
                case let .failure(e): done(.problem(e))
                case let .success(shared):
                    self.access.changed(doc, user: shared.user, role: shared.role)
                    done(.json(200, .obj([("doc", .string(doc)), ("user", .string(user)), ("role", role.map { .string($0.rawValue) } ?? .null)])))
                }
            }
        }
    }

    /// A whole number, written as one or — as JSON Schema's `integer` allows, which the
    /// API's contract is written in — as a number with no fraction (`3.0`).
    static func wholeNumber(_ v: JSON) -> Int64? {
        if let i = v.intValue { return i }
        guard case let .double(d) = v, d.rounded() == d, abs(d) < 9.0e18 else { return nil }
        return Int64(d)
    }

    /// Ops with their counts (`index`, `pos`, `len`) as whole numbers where written `3.0`; nothing else is touched
    /// (a prop's value is kept exactly as sent).
    static func wholeNumbersInOps(_ ops: JSON) -> JSON {
        guard case let .array(list) = ops else { return ops }
        return .array(list.map { op in
            guard case var .object(o) = op else { return op }
            for i in o.members.indices where ["index", "pos", "len"].contains(o.members[i].key) {
                if case .double = o.members[i].value, let n = wholeNumber(o.members[i].value) { o.members[i].value = .int(n) }
            }
            return .object(o)
        })
    }

    /// `s` percent-encoded for a path segment (ids may hold `/`, `?`, spaces).
    static func pathSegment(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + String(b >> 4, radix: 16, uppercase: true) + String(b & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
