import ArgumentParser
import RewindCore
import RewindStore

extension Admin {
    /// Keys of the server API (`rewind-server --api`; schema/020).
    struct APIKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "api-key",
            abstract: "Keys of the server API (--api): make one, list them, revoke one.",
            subcommands: [Create.self, List.self, Revoke.self])

        struct Create: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a key with its scopes and print it (shown once: only a SHA-256 of it is stored).",
                discussion: """
                    Scopes: docs:read (metadata, state, events), docs:write (create, submit, delete,
                    undelete), access:write (set and remove roles), events:read (follow the log).
                    The key also gets a service user, `api:NAME`: who its edits are by when a request
                    names no user. Send the key as `Authorization: Bearer <key>` (docs/api.md).
                    """)
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The key's name (1 to 60 letters, digits, `.`, `_`, `-`).")
            var name: String
            @Option(name: .customLong("scope"), help: "A scope (repeat for several): docs:read, docs:write, access:write, events:read.")
            var scopes: [String] = []

            func validate() throws {
                guard !scopes.isEmpty else { throw ValidationError("give at least one --scope") }
                for s in scopes where APIKeys.Scope(rawValue: s) == nil {
                    throw ValidationError("unknown scope \(s) (docs:read, docs:write, access:write, events:read)")
                }
            }

            func run() throws {
                let database = try db.connect()
                do { print(try APIKeys.create(name, scopes: scopes.compactMap(APIKeys.Scope.init(rawValue:)), db: database)) } catch { throw Failure(error) }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the keys: scopes, service user, made and revoked when.")
            @OptionGroup var db: DatabaseOptions
            @Flag(help: "One JSON object per line instead of a table.")
            var json = false

            func run() throws {
                let database = try db.connect()
                let keys: [APIKeys.Listed]
                do { keys = try APIKeys.list(db: database) } catch { throw Failure(error) }
                if json {
                    for k in keys {
                        print(JSONWriter.string(.obj([("name", .string(k.name)), ("scopes", .array(k.scopes.map { .string($0) })),
                                                      ("user", .string(k.serviceUser)), ("created", .string(k.created)),
                                                      ("revoked", k.revoked.map { .string($0) } ?? .null)])))
                    }
                    return
                }
                printTable([["NAME", "SCOPES", "USER", "CREATED", "REVOKED"]]
                           + keys.map { [$0.name, $0.scopes.joined(separator: ","), $0.serviceUser, $0.created, $0.revoked ?? "-"] })
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Revoke a key: its next request is 401.")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The key's name.")
            var name: String

            func run() throws {
                let database = try db.connect()
                do { try APIKeys.revoke(name, db: database); print("key \(name) revoked") } catch { throw Failure(error) }
            }
        }
    }
}
