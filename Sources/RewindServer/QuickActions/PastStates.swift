import RewindCore
import RewindStore

/// Peek and pop (SPEC section 7, PROTOCOL.md "Quick actions and previews"):
/// a read-only look at a document — at its head or an earlier version, whole
/// or one subtree — that opens, subscribes and focuses nothing, with the
/// actions the caller's role allows; `pop` commits to it (as `open`, then
/// focus), `preview_action` runs one of its actions. Either ends the preview.
/// With `scrub` (`PastStates+Scrub.swift`), the requests that show a document as it was.
final class PastStates {
    let config: ServerConfig
    let store: EventStore
    let documents: Documents
    let documentRequests: DocumentRequests
    let access: AccessControl
    let presence: PresenceRelay
    let sharing: SharingRequests
    /// Per terminal (`Session.id`): the documents it peeked that `pop` and `preview_action` may act on.
    var shelves: [Int: PreviewShelf] = [:]
    /// Per terminal: the history it is scrubbing through (one document at a time).
    var scrubs: [Int: ScrubSession] = [:]

    init(config: ServerConfig, store: EventStore, documents: Documents, documentRequests: DocumentRequests, access: AccessControl,
         presence: PresenceRelay, sharing: SharingRequests)
    {
        self.config = config
        self.store = store
        self.documents = documents
        self.documentRequests = documentRequests
        self.access = access
        self.presence = presence
        self.sharing = sharing
    }

    /// `c` left `doc` (nil: every document, it disconnected): a close or a
    /// disconnect cancels its scrub there; its previews go when it disconnects.
    func left(_ c: Session, doc: String?) {
        if let doc {
            if scrubs[c.id]?.doc == doc { scrubs[c.id] = nil }
        } else {
            scrubs[c.id] = nil
            shelves[c.id] = nil
        }
    }
}
