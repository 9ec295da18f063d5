import RewindCore
import RewindLoop
import RewindStore

/// The shards as the server follows them (SPEC section 17; docs/scaling.md):
/// a listener on each, documents read again when a shard is served again,
/// and the catalog's notices about shards and moves.
extension Server {
    func wireShards() {
        store.onShardsChanged = { [unowned self] shards in self.shardListeners.update(shards) }
        store.onShardReady = { [unowned self] _ in for d in self.documents.all { d.logMayHaveMoved() } }
        shardListeners.onNotice = { [unowned self] channel, payload in self.cluster.notice(channel: channel, payload: payload) }
        shardListeners.onListening = { [unowned self] _ in self.cluster.listening() }
    }

    /// A `rewind_access` notice about shards (`shards`: the catalog's list or
    /// policy changed) or a move (`moving:<doc>`, `moved:<doc>`); false for
    /// any other, which is about roles (`AccessControl.notice`).
    func shardNotice(_ payload: String) -> Bool {
        if payload == "shards" {
            store.reloadShards { _ in }
        } else if payload.hasPrefix("moving:") || payload.hasPrefix("moved:") {
            documentMoved(String(payload.drop { $0 != ":" }.dropFirst()))
        } else {
            return false
        }
        return true
    }

    /// `doc` is moving to another shard, or has moved (`rewind admin shard
    /// move`, the catalog's `moving:` and `moved:` notices): where it lives is
    /// looked up again, and its terminals here are told `closed` `moved` —
    /// open it again — and leave it, which unloads it. Until the move's flip
    /// an open is answered `unavailable`; after it, the document is read from
    /// its new shard.
    func documentMoved(_ doc: String) {
        store.forgetPlacement(doc)
        guard let d = documents[doc] else { return }
        let push = SharedBytes(Push.closed(doc: doc, reason: "moved"))
        for c in Array(d.subscribers.values) {
            leaveDocument(c, doc)
            c.push(push)
        }
        logger.info("document moving to another shard; closed here", metadata: ["doc": "\(doc)"])
        documents.mayBeIdle(d, unloadNow: true)
    }
}
