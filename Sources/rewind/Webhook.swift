import ArgumentParser
import RewindCore
import RewindStore

extension Admin {
    /// Webhook endpoints (schema/022), delivered by the servers (`rewind-server --webhook-*`).
    struct Webhook: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Webhooks: endpoints POSTed every log entry, signed as Standard Webhooks says.",
            discussion: """
                Each endpoint gets the entries of the log, one POST each, with the same JSON object
                `GET /v1/events` streams ({position, doc, version, entry, kind, user, client, time,
                ops}), signed with the endpoint's secret (headers webhook-id, webhook-timestamp,
                webhook-signature). At least once, in order per document; a failed post is tried
                again with backoff for up to a day, then the endpoint is disabled until `replay`.
                Running servers take new endpoints up within seconds (docs/api.md, "Webhooks").
                """,
            subcommands: [Add.self, List.self, Replay.self, Disable.self, Remove.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Add an endpoint and print its id and secret (give the secret to the receiver to verify signatures).")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "Where to POST: an http:// or https:// URL.")
            var url: String
            @Option(help: "Entry kinds to deliver, comma-separated: edit, undo, redo, restore, close, rename, clear, levels (default all).")
            var events: String?
            @Option(help: "Only documents whose id starts with this.")
            var docPrefix: String?
            @Option(help: "Start after this position (0: the whole log) instead of with what is committed from now on.")
            var after: Int64?
            @Flag(help: "Leave the entries' ops out of the posts (metadata only).")
            var withoutOps = false
            @Flag(help: "Print {id, secret} as JSON.")
            var json = false

            func run() throws {
                let database = try db.connect()
                let kinds = events.map { $0.split(separator: ",").map { String($0.filter { $0 != " " }) } }
                let made: (id: Int64, secret: String)
                do {
                    made = try Webhooks.add(url: url, kinds: kinds, prefix: docPrefix, withOps: !withoutOps,
                                            start: after.map { .after($0) } ?? .now, db: database)
                } catch { throw Failure(error) }
                if json {
                    print(JSONWriter.string(.obj([("id", .int(made.id)), ("secret", .string(made.secret))])))
                } else {
                    print("webhook \(made.id) added; its secret (shown by `list` too): \(made.secret)")
                }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the endpoints: position, state, who delivers them, what fails.")
            @OptionGroup var db: DatabaseOptions
            @Flag(help: "One JSON object per line instead of a table.")
            var json = false

            func run() throws {
                let database = try db.connect()
                let hooks: [Webhooks.Listed]
                do { hooks = try Webhooks.list(db: database) } catch { throw Failure(error) }
                if json {
                    for h in hooks {
                        print(JSONWriter.string(.obj([
                            ("id", .int(h.id)), ("url", .string(h.url)), ("events", h.kinds.map { .array($0.map { .string($0) }) } ?? .null),
                            ("doc_prefix", h.prefix.map { .string($0) } ?? .null), ("ops", .bool(h.withOps)), ("position", .int(h.position)),
                            ("enabled", .bool(h.enabled)), ("disabled_reason", h.disabledReason.map { .string($0) } ?? .null),
                            ("delivered_by", h.leaseOwner.map { .string($0) } ?? .null), ("delivered", .int(h.delivered)),
                            ("last_delivered", h.lastDelivered.map { .string($0) } ?? .null),
                            ("failing_since", h.failingSince.map { .string($0) } ?? .null), ("last_error", h.lastError.map { .string($0) } ?? .null),
                        ])))
                    }
                    return
                }
                printTable([["ID", "URL", "EVENTS", "PREFIX", "POSITION", "STATE", "DELIVERED", "FAILING SINCE", "LAST ERROR"]]
                           + hooks.map { h in
                               [String(h.id), h.url, h.kinds?.joined(separator: ",") ?? "all", h.prefix ?? "-", String(h.position),
                                h.enabled ? (h.leaseOwner.map { "by \($0)" } ?? "waiting for a server") : "disabled: \(h.disabledReason ?? "")",
                                String(h.delivered), h.failingSince ?? "-", h.lastError ?? "-"]
                           })
            }
        }

        struct Replay: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Deliver again from a position (or from where it stopped), and enable the endpoint if it was disabled.")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The endpoint's id.")
            var id: Int64
            @Option(help: "Post the entries after this position (default: where the endpoint stopped).")
            var from: Int64?

            func run() throws {
                let database = try db.connect()
                do { try Webhooks.replay(id, after: from, db: database) } catch { throw Failure(error) }
                print("webhook \(id) enabled" + (from.map { ", delivering after position \($0)" } ?? ", delivering from where it stopped"))
            }
        }

        struct Disable: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stop deliveries to an endpoint (its position is kept: `replay` resumes).")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The endpoint's id.")
            var id: Int64

            func run() throws {
                let database = try db.connect()
                do { try Webhooks.disable(id, db: database) } catch { throw Failure(error) }
                print("webhook \(id) disabled")
            }
        }

        struct Remove: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an endpoint and its position.")
            @OptionGroup var db: DatabaseOptions
            @Argument(help: "The endpoint's id.")
            var id: Int64

            func run() throws {
                let database = try db.connect()
                do { try Webhooks.remove(id, db: database) } catch { throw Failure(error) }
                print("webhook \(id) removed")
            }
        }
    }
}
