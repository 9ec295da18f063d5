import ArgumentParser
import RewindCore
import RewindStore

extension Admin {
    /// Signed tokens from the app, taken back before their `exp` (issue 46; schema/019).
    struct SignedTokens: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Deny signed tokens from the app (JWT) before they expire: a subject, or one token.",
            subcommands: [Deny.self, Denials.self, Allow.self])

        struct Deny: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Deny every token of a subject (--sub), or one token (--jti).",
                discussion: """
                    Denied tokens are refused at `hello` and `refresh` (unauthorized, details.reason
                    "denied"), and every running server ends the connections they opened with
                    {"push":"bye","reason":"unauthorized","retry":false} as soon as PostgreSQL tells it.
                    Without --iss a subject is denied for every issuer. Prints the denial's id
                    (`rewind admin token allow ID` lifts it).
                    """)
            @OptionGroup var db: DatabaseOptions
            @Option(help: "The app's user id (the tokens' `sub`).")
            var sub: String?
            @Option(help: "One token's `jti`.")
            var jti: String?
            @Option(help: "Only tokens of this issuer (`iss`; \"\" for tokens without one).")
            var iss: String?
            @Option(help: "Until when: a time (2026-12-01T00:00:00Z) or a span (\"7 days\"). Default: for ever.")
            var until: String?
            @Option(help: "Why, for the record (`token denials` shows it).")
            var reason: String?

            func validate() throws {
                guard (sub == nil) != (jti == nil) else { throw ValidationError("give --sub or --jti (one of them)") }
            }

            func run() throws {
                let database = try db.connect()
                do {
                    let id = try TokenDenials.deny(issuer: iss, subject: sub, tokenID: jti, until: until, reason: reason, db: database)
                    let what = sub.map { "every token of sub \"\($0)\"" + (iss.map { " of iss \"\($0)\"" } ?? "") } ?? "the token with jti \"\(jti!)\""
                    print("denied \(what)\(until.map { " until \($0)" } ?? "") (denial \(id))")
                } catch { throw Failure(error) }
            }
        }

        struct Denials: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the denials in force (with --all, expired ones too).")
            @OptionGroup var db: DatabaseOptions
            @Flag(help: "Also denials whose --until has passed.")
            var all = false
            @Flag(help: "One JSON object per line instead of a table.")
            var json = false

            func run() throws {
                let database = try db.connect()
                let denials: [TokenDenials.Denial]
                do { denials = try TokenDenials.list(all: all, db: database) } catch { throw Failure(error) }
                if json {
                    for d in denials {
                        print(JSONWriter.string(.obj([("id", .int(d.id)), ("iss", d.issuer.map { .string($0) }), ("sub", d.subject.map { .string($0) }),
                                                      ("jti", d.tokenID.map { .string($0) }), ("until", d.until.map { .string($0) }),
                                                      ("reason", d.reason.map { .string($0) }), ("created", .string(d.created))])))
                    }
                    return
                }
                let rows = [["ID", "ISS", "SUB", "JTI", "UNTIL", "CREATED", "REASON"]]
                    + denials.map { [String($0.id), $0.issuer ?? "*", $0.subject ?? "-", $0.tokenID ?? "-", $0.until ?? "ever", $0.created, $0.reason ?? ""] }
                printTable(rows)
            }
        }

        struct Allow: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Lift a denial by its id: its tokens are taken again (connections it ended stay ended).")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The denial's id (`rewind admin token denials`).")
            var id: Int64

            func run() throws {
                let database = try db.connect()
                do { try TokenDenials.lift(id, db: database); print("denial \(id) lifted") } catch { throw Failure(error) }
            }
        }
    }
}
