import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin.Shard {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a PostgreSQL database a shard of this catalog.",
            discussion: """
                The database named by --to (libpq conninfo, multi-host as for --database) gets
                the Rewind schema (every migration), its name as a shard, and a row in the
                catalog's `shards`. Every running instance connects to it within moments (the
                catalog's notice), checks its schema and master key, listens on it, and places
                new documents on it by the policy (`rewind admin shard policy`). Refused for
                the catalog's own database (`home`), for a database holding documents of its
                own, and for another shard. Run again with a new --to to change where it is
                reached. Documents already made stay where they are. Run deploy/roles.sql on
                it too when the servers connect as rewind_server.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The shard's name: lower-case letters, digits, - and _, at most 32.") var name: String
        @Option(help: "libpq conninfo of the shard's database, as every instance reaches it.") var to: String
        @Option(help: "accepting (takes new documents) or closed.") var state = "accepting"
        @Option(help: "Folder of NNN_name.sql migrations.") var schema: String?

        func run() throws {
            guard let dir = schema ?? Migrations.defaultDirectory(executable: CommandLine.arguments[0]) else {
                throw Failure(RewindError(.notFound, "cannot find the schema folder; pass --schema DIR"))
            }
            let catalog = try db.connect()
            let r: (applied: [String], new: Bool)
            do throws(RewindError) {
                let target = try RewindStore.Database(to)
                r = try ShardCatalog.add(name: name, conninfo: to, state: state, migrations: try Migrations.load(from: dir),
                                         catalog: catalog, target: target)
            } catch { throw Failure(error) }
            if !r.applied.isEmpty { print("migrated shard \(name): \(r.applied.count) migration(s)") }
            print(r.new ? "added shard \(name) (\(state))" : "shard \(name) is now reached at the new conninfo")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The shards: state, documents, size, entries appended a second.",
            discussion: """
                For each shard: its state in the catalog, the documents on it, the size of its
                database, and the entries appended a second over --sample seconds
                (PostgreSQL's inserts into its log). A shard that cannot be reached says so,
                and the command exits 1 after listing the others.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "Seconds over which to count appended entries (0: not counted).") var sample = 1.0

        func run() throws {
            let catalog = try db.connect()
            let shards: [ShardCatalog.Shard]
            do { shards = try ShardCatalog.shards(catalog) } catch { throw Failure(error) }
            var reached: [String: Database] = [:], unreachable: [String: String] = [:]
            for s in shards {
                if s.name == "home" { reached[s.name] = catalog; continue }
                do { reached[s.name] = try RewindStore.Database(s.conninfo) } catch { unreachable[s.name] = error.message }
            }
            let inserts = { (d: Database) in (try? d.query("SELECT coalesce(n_tup_ins, 0) FROM pg_stat_user_tables WHERE relname = 'log'").int(0, 0)) ?? 0 }
            let before = reached.mapValues(inserts)
            if sample > 0 { usleep(UInt32(sample * 1_000_000)) }
            var rows = [["shard", "state", "documents", "size", "entries/s", "reached at"]]
            for s in shards {
                guard let d = reached[s.name] else {
                    rows.append([s.name, s.state, "\(s.documents)", "-", "-", "unreachable: \(unreachable[s.name] ?? "")"])
                    continue
                }
                let bytes = (try? d.query("SELECT pg_database_size(current_database())").int(0, 0)) ?? 0
                let rate = sample > 0 ? fixed(Double(inserts(d) - (before[s.name] ?? 0)) / sample, 1) : "-"
                rows.append([s.name, s.state, "\(s.documents)", fixed(Double(bytes) / 1_048_576, 1) + " MiB", rate,
                             s.name == "home" ? "(the catalog)" : Self.withoutPassword(s.conninfo)])
            }
            printTable(rows)
            if !unreachable.isEmpty { throw ExitCode(1) }
        }

        /// A conninfo as shown: a password in it is not.
        static func withoutPassword(_ conninfo: String) -> String {
            conninfo.split(separator: " ").map { $0.hasPrefix("password=") ? "password=…" : String($0) }.joined(separator: " ")
        }
    }

    struct State: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open or close a shard to new documents.",
            discussion: """
                accepting: new documents may be placed on it; closed: it keeps its documents
                and takes no new ones (a rule of the policy naming it is passed over). Every
                instance reads the change at once.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The shard.") var name: String
        @Argument(help: "accepting or closed.") var state: String

        func run() throws {
            guard state == "accepting" || state == "closed" else {
                throw Failure(RewindError(.badRequest, "accepting or closed (draining is `rewind admin shard drain`, not built yet)"))
            }
            let catalog = try db.connect()
            do { try ShardCatalog.setState(name, state, catalog) } catch { throw Failure(error) }
            print("shard \(name) is \(state)")
        }
    }

    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set where new documents go.",
            discussion: """
                Without --set, prints the policy. With --set FILE (- for standard input), sets
                it: lines `PREFIX -> SHARD` (a document whose id starts with PREFIX goes to
                SHARD; the first matching rule wins), then `least-loaded` for the rest (the
                shard with the fewest documents); # starts a comment. Rules must name shards
                of the catalog. A shard closed or unreachable takes no new documents: its
                rules are passed over.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "A file holding the policy (- for standard input).") var set: String?

        func run() throws {
            let catalog = try db.connect()
            do throws(RewindError) {
                guard let set else {
                    print(try ShardCatalog.policy(catalog) ?? PlacementPolicy.leastLoaded.description, terminator: "")
                    return
                }
                guard let text = readTextFile(set == "-" ? "/dev/stdin" : set) else {
                    throw RewindError(.notFound, "cannot read \(set)")
                }
                print(try ShardCatalog.setPolicy(text, catalog).description, terminator: "")
            } catch { throw Failure(error) }
        }
    }
}

extension Admin.Shard {
    struct Move: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a document to another shard while its terminals keep working.",
            discussion: """
                Copies what the document holds to --to while it is served; then fences it
                (terminals get `closed` `moved` and open it again, answered `unavailable`
                until the end), copies the rest, verifies the copy (its chain, its head the
                source's), flips the catalog, and purges the copy left behind (its key,
                snapshots, editors, roles; its log rows stay, unreadable, until the document
                moves back). Entries keep their ids, sealed text and hashes. Printed: entries
                copied before and after the fence, and how long the document was closed (from
                the fence to the flip).

                A mover stopped at any step leaves the document served from one shard with
                every acknowledged entry: run the same command again to resume, or --abort
                before the flip (the source is unfenced and the target's copy dropped).
                Deleted documents are not moved. A document moving back to a shard it left
                replaces the purged copy it left there.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document.") var doc: String
        @Option(help: "The shard to move it to.") var to: String?
        @Flag(help: "End a move under way before its flip: the document stays where it was.") var abort = false
        @Option(help: .hidden) var stopAfter: String?

        func validate() throws {
            if abort == (to != nil) { throw ValidationError("give --to SHARD, or --abort") }
            if let s = stopAfter, ShardMove.Step(rawValue: s) == nil {
                throw ValidationError("--stop-after is one of \(ShardMove.Step.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() throws {
            let catalog = try db.connect()
            let keys = try db.keys(catalog)
            let connect: (String) throws(RewindError) -> Database = { conninfo throws(RewindError) in try RewindStore.Database(conninfo) }
            let m: ShardMove.Moved
            do throws(RewindError) {
                if abort {
                    let from = try ShardMove.abort(doc, catalog: catalog, connect: connect)
                    print("move of \(doc) aborted: it stays on shard \(from)")
                    return
                }
                m = try ShardMove.move(doc, to: to!, catalog: catalog, keys: keys, stopAfter: stopAfter.flatMap(ShardMove.Step.init),
                                       connect: connect)
            } catch { throw Failure(error) }
            if let stop = stopAfter {
                print("stopped after \(stop): run `rewind admin shard move \(doc) --to \(to!)` again to finish, or --abort")
                throw ExitCode(9)
            }
            let resumed = m.resumed.isEmpty ? "" : " (resumed after \(m.resumed.last!.rawValue))"
            print("moved \(doc) from shard \(m.from) to \(m.to)\(resumed): \(m.entriesLive) entries copied while served, "
                  + "\(m.entriesFenced) after the fence; closed \(fixed(m.closedMs, 1)) ms")
        }
    }
}

extension Admin.Shard {
    struct Drain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move every document off a shard.",
            discussion: """
                Marks the shard draining (it takes no new documents), then moves its
                documents, largest first, each to the least loaded shard that accepts
                documents, one at a time with `shard move` (each closed for well under a
                second while its terminals keep working). Stopped or failed midway, run it
                again: it goes on with what is left. Deleted documents stay (they are not
                moved). The shard stays in the catalog, draining, for `shard state …
                accepting` to take it back or for its cluster to be retired.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The shard to empty.") var name: String

        func run() throws {
            let catalog = try db.connect()
            do throws(RewindError) { try ShardCatalog.setState(name, "draining", catalog) } catch { throw Failure(error) }
            try Rebalancing.run(catalog: catalog, keys: try db.keys(catalog), only: name, tolerance: 0.10)
        }
    }

    struct Rebalance: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Even the shards out: moves planned from their documents' sizes, then made.",
            discussion: """
                Reads every shard's documents and sizes (entries times the shard's log bytes
                per entry), plans with the rebalancing `shard simulate` runs (draining shards
                emptied first, then the fullest gives to the emptiest until every accepting
                shard is within --tolerance of the mean), prints the plan, and makes its moves
                one at a time (none with --dry-run). Closed shards neither give nor take.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "How far from the mean a shard may stay (0.10: 10 %).") var tolerance = 0.10
        @Flag(help: "Print the plan only.") var dryRun = false

        func run() throws {
            let catalog = try db.connect()
            try Rebalancing.run(catalog: catalog, keys: try db.keys(catalog), only: nil, tolerance: tolerance, dryRun: dryRun)
        }
    }
}

/// `shard drain` and `shard rebalance`: a plan (`RewindCore.Rebalance`) made of the shards as they are, then its moves.
enum Rebalancing {
    static func run(catalog: Database, keys: DocumentKeys?, only: String?, tolerance: Double, dryRun: Bool = false) throws {
        let connect: (String) throws(RewindError) -> Database = { conninfo throws(RewindError) in try RewindStore.Database(conninfo) }
        let plan: RewindCore.Rebalance.Plan
        do throws(RewindError) {
            let (shards, documents) = try ShardCatalog.loads(catalog, connect: connect)
            plan = RewindCore.Rebalance.plan(shards: shards, documents: documents, tolerance: tolerance)
        } catch { throw Failure(error) }
        let moves = plan.moves.filter { only == nil || $0.from == only }
        print("plan: \(moves.count) move(s), \(fixed(Double(moves.reduce(0) { $0 + $1.bytes }) / 1_048_576, 1)) MiB"
              + (only == nil ? "; after it the fullest shard is \(fixed(plan.largestOverMean, 3)) × the mean, the emptiest \(fixed(plan.smallestOverMean, 3))" : ""))
        for m in moves { print("  \(m.doc): \(m.from) -> \(m.to) (\(fixed(Double(m.bytes) / 1_048_576, 2)) MiB)") }
        guard !dryRun else { return }
        for (i, m) in moves.enumerated() {
            do throws(RewindError) {
                let done = try ShardMove.move(m.doc, to: m.to, catalog: catalog, keys: keys, connect: connect)
                print("[\(i + 1)/\(moves.count)] moved \(m.doc) from \(done.from) to \(done.to); closed \(fixed(done.closedMs, 1)) ms")
            } catch {
                throw Failure(error, advice: "\(i) of \(moves.count) moves made; run the command again to go on (a move under way resumes)")
            }
        }
    }
}
