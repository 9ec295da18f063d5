import ArgumentParser
import RewindCore
import RewindStore

extension Admin {
    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count what the log holds: documents, events, marks, snapshots, size, events per day, top users.",
            discussion: """
                For the whole database, or for one document. Sizes: the whole database's are the
                log and snapshots tables on disk (pg_total_relation_size: rows, TOAST, indexes);
                one document's are an estimate, the sum of its rows' sizes (pg_column_size).
                Events per day are the last 14 days in UTC; top users are the 10 with the most
                events. All counts come from one snapshot of the database. --json prints one object:
                {"doc", "documents", "events", "marks", "snapshots", "log_bytes", "snapshot_bytes",
                "bytes_are_estimate", "events_per_day": [{"day", "events"}], "top_users": [{"user", "events"}]}.

                Exit status: 0; 1 the document does not exist; 2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "One document (default: the whole database).")
        var doc: String?
        @Flag(help: "One JSON object instead of text.")
        var json = false

        func run() throws {
            let database = try doc.map { try db.connect(forDocuments: [$0]) } ?? db.connect()
            let report: RewindStore.Stats.Report
            do { report = try RewindStore.Stats.collect(doc: doc, db: database) } catch { throw Failure(error) }
            if json { return print(JSONWriter.string(report.json)) }
            let g = Progress.grouped
            var rows: [(String, String)] = [
                ("documents", g(report.documents)), ("events", g(report.events)), ("marks", g(report.marks)),
                ("snapshots", g(report.snapshots)),
            ]
            let how = report.bytesAreEstimate ? "estimate: the rows' sizes" : "on disk, with indexes"
            rows.append(("log size", "\(bytes(report.logBytes)) (\(how))"))
            rows.append(("snapshots size", "\(bytes(report.snapshotBytes)) (\(how))"))
            print(report.doc.map { "document \($0)" } ?? "database")
            for (k, v) in rows { print("  " + k + String(repeating: " ", count: 16 - k.count) + v) }
            print("events per day (UTC)")
            for d in report.eventsPerDay { print("  \(d.day)  \(g(d.events))") }
            print("top users (events)")
            let width = report.topUsers.map(\.user.count).max() ?? 0
            for u in report.topUsers { print("  " + u.user + String(repeating: " ", count: width - u.user.count) + "  " + g(u.events)) }
            if report.topUsers.isEmpty { print("  (none)") }
        }

        /// 1536 as "1.5 KB" (powers of 1024), and the exact number of bytes.
        func bytes(_ n: Int64) -> String {
            let units = ["bytes", "KB", "MB", "GB", "TB"]
            var v = Double(n), i = 0
            while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
            if i == 0 { return "\(n) bytes" }
            return "\((v * 10).rounded() / 10) \(units[i]) (\(Progress.grouped(n)) bytes)"
        }
    }
}
