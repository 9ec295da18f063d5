import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Tail: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow the log live: one line per entry as it is committed, by any server.",
            discussion: """
                Listens on `rewind_log` (every claim announces the head it moves, whichever
                server or import wrote it) and prints each new entry of the documents named (all when none is):

                    2025-01-02T10:11:12.345Z  d  v3  alice  edit  insert t@5 " world"

                time (UTC), document, version, user, kind (edit, undo, redo, restore; close,
                rename, clear for group marks), the action's name if any, and a summary of the
                ops. --json prints one JSON object per entry instead: every column, with ops,
                inverse and meta as JSON, time_ms and the user's name. With --since V it first
                prints each document's entries after version V, then follows. Runs until
                interrupted (Ctrl-C).

                Exit status: 1 a named document does not exist; 2 usage; 3 the database cannot
                be reached or the connection is lost (run it again: --since picks up where the
                last line left off).
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents to follow (default: every document, new ones included).")
        var docs: [String] = []
        @Option(parsing: .unconditional, help: "First print the entries after this version, then follow.")
        var since: Int64?
        @Flag(help: "One JSON object per line.")
        var json = false

        func validate() throws {
            if let since, since < 0 { throw ValidationError("--since must be 0 or more") }
        }

        func run() throws {
            let database = try docs.isEmpty ? db.connect() : db.connect(forDocuments: docs)
            let keys = try db.keys(database)
            do {
                // Listen first, then read the heads: an entry committed in between is both
                // announced and after the head read, and is printed once (by seq).
                try database.listen("rewind_log")
                var printed = try RewindStore.Tail.heads(docs, db: database)
                if let since {
                    for doc in printed.keys.sorted() {
                        printed[doc] = try RewindStore.Tail.seq(doc, atVersion: since, db: database)
                        try catchUp(doc, &printed, database, keys)
                    }
                }
                // Named once caught up, so an operator (or a test) can tell it is following.
                try database.query("SET application_name = 'rewind-tail'")
                while true {
                    guard let notice = try database.nextNotice(timeoutMs: 1_000), notice.channel == "rewind_log" else { continue }
                    let parts = notice.payload.split(separator: " ", maxSplits: 2)
                    guard parts.count == 3, let seq = Int64(parts[0]) else { continue }
                    let doc = String(parts[2])
                    guard docs.isEmpty || docs.contains(doc) else { continue }
                    if seq > printed[doc, default: 0] { try catchUp(doc, &printed, database, keys) }
                }
            } catch { throw Failure(error) }
        }

        /// Prints the entries of `doc` after the last one printed.
        private func catchUp(_ doc: String, _ printed: inout [String: Int64], _ database: Database, _ keys: DocumentKeys?) throws(RewindError) {
            // Without the master key (or once purged) entries are shown with their content sealed.
            var cipher = keys?.cached(doc)
            if cipher == nil, let keys { cipher = try? keys.existing(doc: doc, db: database) }
            while true {
                let lines = try RewindStore.Tail.entries(doc, after: printed[doc, default: 0], cipher: cipher, db: database)
                guard let last = lines.last else { return }
                for l in lines { printLine(json ? JSONWriter.string(l.json) : TailFormat.line(l)) }
                printed[doc] = last.row.seq
            }
        }
    }
}

/// The human-readable line of `tail`: pure, from the entry alone.
enum TailFormat {
    static func line(_ l: RewindStore.Tail.Line) -> String {
        let r = l.row
        var parts = [timestamp(ms: r.time), r.doc, "v\(r.version)", l.user, r.kind]
        if let action = r.action { parts.append("[\(action)]") }
        if r.entry == "mark" {
            if let g = r.group { parts.append("group \(g)") }
        } else if let json = l.ops, let ops = try? Op.parseList(json, limits: .unbounded) {
            parts.append(summary(ops))
        }
        return parts.joined(separator: "  ")
    }

    /// The first three ops in a few words each; "(+N more)" for the rest.
    static func summary(_ ops: [Op]) -> String {
        var words = ops.prefix(3).map(describe)
        if ops.count > 3 { words.append("(+\(ops.count - 3) more)") }
        return words.isEmpty ? "(no ops)" : words.joined(separator: "; ")
    }

    static func describe(_ op: Op) -> String {
        switch op {
        case let .create(spec, parent, index): return "create \(spec.id.string) (\(spec.kind)) in \(parent.string)@\(index)"
        case let .delete(n): return "delete \(n.string)"
        case let .set(n, key, value): return "set \(n.string).\(key)=\(clipped(JSONWriter.string(value)))"
        case let .move(n, parent, index): return "move \(n.string) to \(parent.string)@\(index)"
        case let .insert(n, pos, text):
            var s = String.UnicodeScalarView()
            s.append(contentsOf: text)
            return "insert \(n.string)@\(pos) \(clipped(JSONWriter.string(.string(String(s)))))"
        case let .remove(n, pos, len): return "remove \(n.string)@\(pos) \(len) char(s)"
        }
    }

    static func clipped(_ s: String, to n: Int = 40) -> String {
        s.count <= n ? s : String(s.prefix(n - 1)) + "…"
    }

    /// Milliseconds since 1970 as `2025-01-02T10:11:12.345Z`.
    static func timestamp(ms: Int64) -> String {
        var seconds = time_t(ms / 1000)
        var t = tm()
        gmtime_r(&seconds, &t)
        func pad(_ v: Int32, _ w: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(t.tm_year + 1900, 4))-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2))T\(pad(t.tm_hour, 2)):\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2)).\(pad(Int32(ms % 1000), 3))Z"
    }
}
