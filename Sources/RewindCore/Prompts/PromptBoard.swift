/// The prompts one server shows, as a value: which terminals hold each
/// (shown, or waiting behind what is shown at its level: a `PromptQueue`
/// per terminal), and what must be pushed when one is presented or
/// dismissed, or a terminal holding some goes. The server keeps what runs
/// when a prompt is answered, and carries the effects out. Terminals are
/// named by the server's connection ids.
public struct PromptBoard: Sendable {
    public struct Held: Sendable {
        public let prompt: Prompt
        /// The document it is about, if any (its `prompt_state.presented` lists it).
        public let doc: String?
        /// Terminals that show it or have it waiting.
        public fileprivate(set) var terminals: Set<Int>
    }

    public enum Effect: Sendable, Equatable {
        /// Push the `prompt` to the terminal: it is shown there now.
        case show(String, terminal: Int)
        /// Push `dismiss` to the terminal.
        case dismiss(String, terminal: Int)
        /// What the terminal shows changed: its `prompt_state.presented` may have.
        case presentedChanged(terminal: Int)
        /// Nobody holds the prompt any more: its handler runs with the cancel action (`by` went last).
        case cancel(String, action: String, by: Int)
    }

    public private(set) var held: [String: Held] = [:]
    private var queues: [Int: PromptQueue] = [:]
    private var nextNumber = 1
    /// The last number given in each document with prompts (see `newID`).
    private var lastInDocument: [String: Int] = [:]
    /// Prompts that may wait per level on one terminal.
    public let waitingLimit: Int

    /// The letter of the ids `newID` gives (`DOC:p1`, or `DOC:e1` where the `p` ids are given elsewhere).
    public let idLetter: String

    public init(waitingLimit: Int = 16, idLetter: String = "p") {
        self.waitingLimit = waitingLimit
        self.idLetter = idLetter
    }

    /// A fresh prompt id. About a document: `DOC:p1`, `DOC:p2`, … counted in
    /// that document, so the first prompt of a new document is `DOC:p1` on any
    /// server, whatever others have shown (a session written down, like the
    /// README's, can answer it). About none: `p1`, `p2`, … for the server's
    /// life. The two never meet: the first ends in `:p` and digits after the
    /// document's id, the second has no `:`.
    public mutating func newID(doc: String? = nil) -> String {
        guard let doc else {
            defer { nextNumber += 1 }
            return "\(idLetter)\(nextNumber)"
        }
        var n = lastInDocument[doc, default: 0]
        repeat { n += 1 } while held["\(doc):\(idLetter)\(n)"] != nil
        lastInDocument[doc] = n
        return "\(doc):\(idLetter)\(n)"
    }

    /// Forgets a document's count once nothing about it is held (it was
    /// unloaded): numbers start again at 1 the next time, and the count of
    /// every document ever prompted does not stay in memory.
    public mutating func forget(doc: String) {
        guard lastInDocument[doc] != nil, !held.values.contains(where: { $0.doc == doc }) else { return }
        lastInDocument[doc] = nil
    }

    public func queue(of terminal: Int) -> PromptQueue { queues[terminal] ?? PromptQueue(limit: waitingLimit) }

    /// Presents `prompt` to each of `terminals`: shown at once where its level
    /// is free, else waiting behind what is shown. All or nothing: if any
    /// terminal's queue at that level is full, none gets it (`rate_limited`).
    public mutating func present(_ prompt: Prompt, doc: String?, to terminals: [Int]) throws(RewindError) -> [Effect] {
        var placed: [Int] = []
        var shown: [Int] = []
        for t in terminals {
            var q = queue(of: t)
            do throws(RewindError) {
                if try q.present(prompt.id, at: prompt.level) { shown.append(t) }
            } catch {
                for p in placed { queues[p]?.remove(prompt.id) }
                throw error
            }
            queues[t] = q
            placed.append(t)
        }
        guard !placed.isEmpty else { return [] }
        held[prompt.id] = Held(prompt: prompt, doc: doc, terminals: Set(placed))
        return shown.flatMap { [Effect.show(prompt.id, terminal: $0), .presentedChanged(terminal: $0)] }
    }

    /// Takes a prompt away everywhere (it was answered): `dismiss` where it
    /// was shown, and what waited behind it at that level is shown instead.
    public mutating func dismiss(_ id: String) -> [Effect] {
        guard let h = held.removeValue(forKey: id) else { return [] }
        return h.terminals.sorted().flatMap { take(id, from: $0) }
    }

    /// A terminal that closes `doc` (nil: that goes) loses what it held
    /// about it; a prompt nobody holds any more is cancelled. A terminal no
    /// longer connected is pushed nothing.
    public mutating func leave(_ terminal: Int, doc: String?, connected: Bool) -> [Effect] {
        var out: [Effect] = []
        // Waiting ones first, so that taking a shown one away does not flash
        // (push, then dismiss) a waiting one that is going too.
        for id in queue(of: terminal).all.reversed() {
            guard var h = held[id], doc == nil || h.doc == doc else { continue }
            h.terminals.remove(terminal)
            held[id] = h
            if connected { out += take(id, from: terminal) } else { queues[terminal]?.remove(id) }
            if h.terminals.isEmpty {
                held[id] = nil
                out.append(.cancel(id, action: h.prompt.actions.first { $0.style == .cancel }?.id ?? Prompt.ActionID.cancel, by: terminal))
            }
        }
        if doc == nil { queues[terminal] = nil }
        return out
    }

    /// The prompts `terminal` shows now that concern `doc` (or no document in particular).
    public func presented(_ terminal: Int, doc: String) -> [String] {
        // Most terminals show nothing: answered without a queue made for them (checked after every commit).
        guard let q = queues[terminal] else { return [] }
        return q.presented.filter { id in held[id].map { $0.doc == nil || $0.doc == doc } ?? false }
    }

    private mutating func take(_ id: String, from terminal: Int) -> [Effect] {
        guard let (wasShown, next) = queues[terminal]?.remove(id), wasShown else { return [] }
        var out: [Effect] = [.dismiss(id, terminal: terminal)]
        if let next, held[next] != nil { out.append(.show(next, terminal: terminal)) }
        out.append(.presentedChanged(terminal: terminal))
        return out
    }
}
