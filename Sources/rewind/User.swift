import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct User: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage users and their tokens.",
            subcommands: [Add.self, Token.self, List.self, Revoke.self, Erase.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a user and print a fresh token (exit 1 if the name is taken).",
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
                printTable(rows)
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

        struct Erase: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Erase a person: revoke their tokens and replace their name everywhere with a pseudonym.",
                discussion: """
                    For a person's right to erasure. Their tokens are revoked (every instance ends their
                    connections), and their name becomes a random pseudonym (`erased-…`) in the one place
                    every name is read from: events' `user`, presence, quick actions' subtitles, `user
                    list` and exports all show the pseudonym from now on. Their edits stay, in documents
                    others own too, and the log keeps its user ids (its chain is unchanged). Snapshots of
                    the documents they edited are dropped (rebuilt from the log). Documents they own are
                    not deleted: delete or purge those as well if they must go.

                    Running servers apply it as soon as PostgreSQL tells them (their connections of
                    the person end, with the pseudonym in what their leaving shows others); the
                    command waits until every running server has said it did (at most --wait
                    seconds), so nothing read from a server afterwards shows the old name. One that
                    has not answered by then is named: it applies it when it next hears from the
                    database.

                    Exit status: 0 erased; 1 no such user, or already erased; 3 the database cannot be reached.
                    """)
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The user's name.")
            var name: String
            @Option(help: "Seconds to wait for every running server to say it applied the erasure.")
            var wait: Int = 10

            func run() throws {
                let database = try db.connect()
                do {
                    let e = try RewindStore.Erase.user(name, db: database, waitMs: max(0, wait) * 1000)
                    if e.already {
                        print("\(name) is already an erased user's pseudonym: nothing to change in the catalog")
                    } else {
                        print("erased \(name): now \(e.pseudonym); \(e.tokens) token(s) revoked, \(e.snapshots) snapshot(s) dropped;"
                              + " \(e.confirmed) running server(s) applied it")
                    }
                    if !e.unconfirmed.isEmpty {
                        printError("warning: server instance(s) \(e.unconfirmed.map(String.init).joined(separator: ", ")) did not"
                                   + " confirm within \(wait) s; they apply it when they next hear from the database\n")
                    }
                    // Shards other than `home` hold copies of the account (SPEC section 17).
                    let shards = try RewindStore.Erase.onShards(userID: e.userID, pseudonym: e.pseudonym, catalog: database)
                    for (shard, n) in shards.snapshots.sorted(by: { $0.key < $1.key }) {
                        print("shard \(shard): renamed, \(n) snapshot(s) dropped")
                    }
                    if !shards.unreachable.isEmpty {
                        for (shard, why) in shards.unreachable.sorted(by: { $0.key < $1.key }) {
                            printError("error: shard \(shard) was not reached (\(why)); its copy of the account still holds the name:"
                                       + " run `rewind admin user erase \(e.pseudonym)` again once it is back\n")
                        }
                        throw ExitCode(1)
                    }
                } catch let e as RewindError { throw Failure(e) }
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
