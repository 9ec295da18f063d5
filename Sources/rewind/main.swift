import ArgumentParser
import Glibc
import RewindCore
import RewindStore

/// `rewind`: the operator's command line.
struct Rewind: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewind's command-line tools.",
        subcommands: [Admin.self])
}

struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operate a Rewind database: schema, users, the event log.",
        subcommands: [Migrate.self, Replay.self, Verify.self, Anchors.self, User.self, Grant.self, Revoke.self])
}

/// Where the database is: shared by every admin command.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "libpq connection string (env REWIND_DATABASE; default: the PG* variables).")
    var database: String = env("REWIND_DATABASE") ?? ""

    func connect() throws -> Database {
        do { return try RewindStore.Database(database) } catch { throw Failure(error) }
    }
}

extension Admin {
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply the schema migrations that are missing.",
            discussion: """
                Applies schema/NNN_name.sql in order, each in its own transaction, and records
                them in schema_migrations; running it again applies nothing. The folder is
                --schema, else REWIND_SCHEMA_DIR, else schema/ beside the source checkout.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "Folder of NNN_name.sql migrations.")
        var schema: String?

        func run() throws {
            guard let dir = schema ?? Migrations.defaultDirectory(executable: CommandLine.arguments[0]) else {
                throw Failure(RewindError(.notFound, "cannot find the schema folder; pass --schema DIR"))
            }
            let database = try db.connect()
            do {
                let applied = try Migrations.apply(try Migrations.load(from: dir), to: database)
                print(applied.isEmpty ? "schema up to date" : "applied \(applied.joined(separator: ", "))")
            } catch { throw Failure(error) }
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild a document from the log and print its state as JSON.",
            discussion: """
                Replays the events of DOC from version 1 up to --to (default: the head) through
                the same code the server runs, and prints {"doc", "version", "state"}; `state`
                is exactly what `open` returns at that version. Progress goes to stderr on a
                terminal.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Option(help: "Stop at this version (0 = empty document).")
        var to: Int64?

        func run() throws {
            let database = try db.connect()
            let tty = isatty(2) == 1
            do {
                let ledger = try RewindStore.Replay.document(doc, to: to, db: database) { done, total in
                    if tty { printError("\rreplayed \(done)/\(total)") }
                }
                if tty { printError("\n") }
                print(JSONWriter.string(.obj([("doc", .string(doc)), ("version", .int(ledger.version)), ("state", ledger.document.json)])))
            } catch { throw Failure(error) }
        }
    }

    struct User: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage users and their tokens.",
            subcommands: [Add.self, Token.self, List.self, Revoke.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a user and print a fresh token (exit 3 if the name is taken).",
                discussion: "Only a SHA-256 of the token is stored: keep the printed token, it cannot be shown again.")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The user's name (1 to 64 bytes).")
            var name: String

            func run() throws {
                let database = try db.connect()
                do { print(try Accounts.addUser(name, db: database)) } catch { throw Failure(error) }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List users: live and revoked tokens, documents owned and shared with them.")
            @OptionGroup var db: DatabaseOptions
            @Flag(help: "One JSON object per line instead of a table.")
            var json = false

            func run() throws {
                let database = try db.connect()
                let users: [AccessRows.UserInfo]
                do { users = try AccessRows.users(db: database) } catch { throw Failure(error) }
                if json {
                    for u in users {
                        print(JSONWriter.string(.obj([("user", .string(u.name)), ("created", .string(u.created)), ("tokens", .int(Int64(u.tokens))),
                                                      ("revoked", .int(Int64(u.revoked))), ("owns", .int(Int64(u.owns))), ("shared", .int(Int64(u.shared)))])))
                    }
                    return
                }
                let rows = [["USER", "CREATED", "TOKENS", "REVOKED", "OWNS", "SHARED"]]
                    + users.map { [$0.name, $0.created, String($0.tokens), String($0.revoked), String($0.owns), String($0.shared)] }
                let widths = (0..<6).map { c in rows.map { $0[c].count }.max() ?? 0 }
                for r in rows {
                    print(r.enumerated().map { $1 + String(repeating: " ", count: widths[$0] - $1.count) }.joined(separator: "  "))
                }
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Revoke every token of a user; their connections get `bye` `unauthorized` at once.",
                discussion: """
                    Every server instance is told (LISTEN/NOTIFY) and closes the user's connections
                    with {"push":"bye","reason":"unauthorized","retry":false}. `rewind admin user token
                    NAME` issues a new token later. Prints how many tokens were revoked.
                    """)
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The user's name.")
            var name: String

            func run() throws {
                let database = try db.connect()
                do { print("revoked \(try AccessRows.revokeTokens(of: name, db: database)) token(s) of \(name)") } catch { throw Failure(error) }
            }
        }

        struct Token: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Issue one more token for an existing user and print it.")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The user's name.")
            var name: String

            func run() throws {
                let database = try db.connect()
                do { print(try Accounts.token(for: name, db: database)) } catch { throw Failure(error) }
            }
        }
    }
}

extension Admin {
    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a user a role on a document: editor or viewer.",
            discussion: """
                As the owner's `share` request does. An editor reads, edits and undoes its own
                groups; a viewer reads only. The change takes effect at once on every server
                instance. The owner (the document's creator) keeps its role.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Argument(help: "The user's name.")
        var user: String
        @Argument(help: "editor or viewer.")
        var role: String

        func run() throws {
            guard let r = Role(rawValue: role), r != .owner else { throw ValidationError("ROLE must be editor or viewer") }
            let database = try db.connect()
            do { _ = try AccessRows.share(doc: doc, user: user, role: r, db: database) } catch { throw Failure(error) }
            print("\(user) is now \(r.rawValue) of \(doc)")
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a user's role on a document away.",
            discussion: """
                Terminals of that user with the document open get {"push":"closed","doc":…,
                "reason":"forbidden"} at once, on every server instance; the document is then
                `not_found` for them. The owner's role cannot be taken away.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Argument(help: "The user's name.")
        var user: String

        func run() throws {
            let database = try db.connect()
            do { _ = try AccessRows.share(doc: doc, user: user, role: nil, db: database) } catch { throw Failure(error) }
            print("\(user) has no role on \(doc) now")
        }
    }
}

extension Admin {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the log: no gaps, the hash chain, every inverse, snapshots, anchors.",
            discussion: """
                For each document (all when none is named), entry by entry and through the same
                code the server runs: entries follow on with no gap and versions count the events;
                each entry's hash chains to the one before (the encoding is in README.md, "The
                log"); each event applies, and its inverse gives back the state before it; the
                document's head names the last entry and its hash; each snapshot matches its
                digest, the chain at its entry, and the replayed state there. With --anchors, each
                head exported earlier by `rewind admin anchors` must still be in the log with the
                same hash: a history rewritten and re-sealed, or newest entries removed, is caught.

                Prints the first problem of each document that has one, as
                `DOC entry SEQ (version V): what failed`, and a summary. Progress goes to stderr
                on a terminal.

                Exit status: 0 all holds; 1 a check failed (or a named document does not exist);
                2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents to check (default: every document).")
        var docs: [String] = []
        @Option(help: "A file of anchors (JSON lines, from `rewind admin anchors`) to check against.")
        var anchors: String?

        func run() throws {
            let database: Database
            do { database = try RewindStore.Database(db.database) } catch {
                printError("error: \(error.message)\n")
                throw ExitCode(3)
            }
            var kept: [RewindStore.Verify.Anchor] = []
            if let anchors {
                guard let text = readTextFile(anchors) else { throw ValidationError("cannot read \(anchors)") }
                for (i, line) in text.split(separator: "\n").enumerated() where !line.isEmpty {
                    guard let a = RewindStore.Verify.Anchor.parse(String(line)) else {
                        throw ValidationError("\(anchors):\(i + 1): not an anchor line {\"doc\", \"seq\", \"hash\"}")
                    }
                    kept.append(a)
                }
            }
            let tty = isatty(2) == 1
            var problems = 0
            var checked: Int64 = 0
            do {
                var docs = self.docs.isEmpty ? try RewindStore.Verify.documents(db: database) : self.docs
                for a in kept where !docs.contains(a.doc) && self.docs.isEmpty { docs.append(a.doc) }
                for doc in docs {
                    let problem = try RewindStore.Verify.document(doc, anchors: kept, db: database) { done, total in
                        if tty { printError("\rverifying \(doc): \(done)/\(total) entries") }
                    }
                    if tty { printError("\r\u{1B}[K") }
                    if let problem {
                        problems += 1
                        print(problem)
                    }
                    checked += 1
                }
            } catch {
                if error.code == .unavailable { printError("error: \(error.message)\n"); throw ExitCode(3) }
                throw Failure(error)
            }
            print(problems == 0 ? "ok: \(checked) document(s) verified" : "FAILED: \(problems) of \(checked) document(s)")
            if problems > 0 { throw ExitCode(1) }
        }
    }

    struct Anchors: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each document's head hash (JSON lines), to keep elsewhere for `verify --anchors`.",
            discussion: """
                One line per document: {"doc", "seq", "hash"} — the newest entry and its hash. Keep
                the output where the database's administrators cannot change it; `rewind admin
                verify --anchors FILE` later proves the log still holds those entries unchanged.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents (default: every document with entries).")
        var docs: [String] = []

        func run() throws {
            let database = try db.connect()
            do {
                for a in try RewindStore.Verify.anchors(docs, db: database) { print(JSONWriter.string(a.json)) }
            } catch { throw Failure(error) }
        }
    }
}

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

/// Writes to standard error (fd 2) without touching C's global `stderr`.
func printError(_ s: String) {
    var bytes = Array(s.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

func env(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    return s.isEmpty ? nil : s
}

do {
    var command = try Rewind.parseAsRoot()
    try command.run()
} catch let f as Failure {
    printError("\(f)\n")
    exit(f.exitCode)
} catch {
    // Usage errors exit 2 (as most Unix tools do), not ArgumentParser's 64.
    if Rewind.exitCode(for: error) == .validationFailure {
        printError(Rewind.fullMessage(for: error) + "\n")
        exit(2)
    }
    Rewind.exit(withError: error)
}
