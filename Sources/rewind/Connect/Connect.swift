import ArgumentParser
import Glibc
import RewindClient
import RewindCore

/// `rewind connect`: the terminal client.
struct Connect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edit a document from this terminal, live with everyone else on it.",
        discussion: """
            Draws the document's nodes as boxes at their frames (scaled to the terminal),
            text with your caret, others' carets and names in colour, prompts as alert boxes
            and, at the bottom, what Ctrl-Z and Ctrl-Y would undo and redo.

            Keys: typing, Enter, Backspace, Delete, arrows, Home, End edit the focused text
            node; Tab focuses the next focusable node; Ctrl-Z undo; Ctrl-Y redo; Ctrl-S
            shake (the "Undo …?" prompt appears); in a prompt, 1–9 choose an action, Esc
            cancels; F1 (or `?` when no text is focused) shows the keys; Ctrl-Q (or Ctrl-C)
            quits and puts the terminal back as it was. Text wraps at words and the box
            scrolls to keep your caret in view (▲/▼ on its edge: more above or below).

            It reconnects by itself (open since the version it holds; edits not yet
            committed are sent again with their tx). The token comes from --token, else
            REWIND_TOKEN (a token on the command line is visible to other local users).

            A server that cannot be reached at all is given up after --connect-timeout
            seconds. You can open a document you own or one shared with you: its owner
            shares it (the `share` request, or `rewind admin grant DOC USER editor`).

            Exit status: 0 quit; 1 the server refused (bad token, no such document, no
            access) or could not be reached; 2 usage, or not run in a terminal.
            """)

    @Argument(help: "HOST:PORT of a rewind-server (default 127.0.0.1:7878, or REWIND_CONNECT), then the document.")
    var arguments: [String]
    @Option(help: "Your user name (checked against the token).")
    var user: String
    @Option(help: "Your token (default: REWIND_TOKEN).")
    var token: String?
    @Option(help: "This terminal's client id (default: a new one); the same id on reconnect keeps the terminal.")
    var client: String?
    @Option(help: "Locale for titles: en, zh-Hant, zh-Hans, ja.")
    var locale: String?
    @Flag(help: "Create the document (with one text node) if it does not exist.")
    var create = false
    @Option(help: "Seconds to keep trying a server that was never reached before exiting 1.")
    var connectTimeout: Double = 10

    func validate() throws {
        guard (1...2).contains(arguments.count) else { throw ValidationError("give the document, optionally after HOST:PORT") }
        if arguments.count == 1, Self.address(arguments[0]) != nil {
            throw ValidationError("\(arguments[0]) is HOST:PORT, and the document is missing: rewind connect \(arguments[0]) DOC")
        }
        guard connectTimeout > 0 else { throw ValidationError("--connect-timeout must be more than 0 seconds") }
        if arguments.count == 2, Self.address(arguments[0]) == nil { throw ValidationError("\(arguments[0]) is not HOST:PORT") }
        if token ?? env("REWIND_TOKEN") == nil { throw ValidationError("--token (or REWIND_TOKEN) is required") }
    }

    static func address(_ s: String) -> (String, Int)? {
        guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        var host = Substring(s[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }   // [::1]:7878
        return host.isEmpty ? nil : (String(host), port)
    }

    func run() throws {
        let (host, port) = Self.address(arguments.count == 2 ? arguments[0] : env("REWIND_CONNECT") ?? "127.0.0.1:7878")
            ?? ("127.0.0.1", 7878)
        let doc = arguments.last!
        var g = SystemRandomNumberGenerator()
        let options = ClientSession.Options(user: user, token: token ?? env("REWIND_TOKEN")!, doc: doc,
                                            client: client ?? "rc-\(String(g.next() & 0xFF_FFFF_FFFF, radix: 36))",
                                            locale: locale)
        if create { try DocumentCreation.ensure(host: host, port: port, options: options) }
        let terminal = try Terminal()
        let app = ConnectApp(client: RewindClient(host: host, port: port, options: options), terminal: terminal,
                             connectTimeoutMs: Int64(connectTimeout * 1000))
        terminal.enter()
        let outcome = app.run()
        terminal.restore()
        switch outcome {
        case .quit:
            return
        case let .refused(e):
            printError("error: \(e.code): \(e.message)\n")
            if e.code == "not_found", e.message.hasPrefix("no document") {
                printError("""
                      what to do: check the name. You can open the documents you own and those shared
                      with you: ask its owner to share it with you (the owner's `share` request, or
                      `rewind admin grant \(doc) \(user) editor` on the server's host), or make your own
                      with --create.

                    """)
            }
        case let .unreachable(reason):
            printError("error: unreachable: no answer from \(host):\(port) within \(connectTimeout == connectTimeout.rounded() ? String(Int(connectTimeout)) : String(connectTimeout)) s (\(reason))\n"
                       + "  what to do: check that rewind-server runs there (scripts/run starts one on 127.0.0.1:7878), "
                       + "or give another HOST:PORT (or set REWIND_CONNECT)\n")
        }
        throw ExitCode(1)
    }
}

/// `--create`: a short connection of its own before the client starts.
enum DocumentCreation {
    static func ensure(host: String, port: Int, options: ClientSession.Options) throws {
        let s: LineSocket
        do { s = try LineSocket(host: host, port: port) } catch {
            printError("error: \(error.message)\n")
            throw ExitCode(1)
        }
        func ask(_ id: Int64, _ type: String, _ fields: [(String, JSON?)]) throws -> JSONObject {
            try s.write(Message.line(.obj([("id", .int(id)), ("type", .string(type))] + fields)))
            let deadline = RewindClient.now() + 10_000
            while RewindClient.now() < deadline {
                var p = pollfd(fd: s.fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&p, 1, 100)
                for line in try s.readLines() {
                    if let o = (try? JSONParser.parse(line))?.objectValue, o["re"]?.intValue == id { return o }
                }
            }
            throw ClientError(code: "timeout", message: "no answer to \(type) within 10 s")
        }
        func check(_ o: JSONObject, allowing: String? = nil) throws {
            guard o["ok"]?.boolValue != true else { return }
            let e = o["error"]?.objectValue
            let code = e?["code"]?.stringValue ?? "internal"
            if code == allowing { return }
            printError("error: \(code): \(e?["message"]?.stringValue ?? "")\n")
            throw ExitCode(1)
        }
        try check(try ask(1, "hello", [("user", .string(options.user)), ("token", .string(options.token))]))
        let created = try ask(2, "create_doc", [("doc", .string(options.doc))])
        try check(created, allowing: "conflict")
        guard created["ok"]?.boolValue == true else { return }   // it exists: leave it as it is
        let body: JSON = .obj([("op", "create"), ("node", "body"), ("parent", "root"), ("kind", "text"),
                               ("frame", [0, 0, 80, 20]), ("focusable", true)])
        try check(try ask(3, "submit", [("doc", .string(options.doc)), ("tx", "create-body"), ("base", 0), ("ops", [body])]))
    }
}
