import Crypto
import Glibc
import RewindCore

/// The key that wraps every document's data key (SPEC section 15), read
/// from a file: 32 random bytes in base64 on one line, readable by its
/// owner only. It never enters the database; its id does (`master_key`),
/// so a server given another key refuses to start instead of serving
/// content it cannot read, and `rotate-master-key` can tell old from new.
public struct MasterKey: Sendable {
    public let path: String
    /// A fingerprint of the key (not secret): names it in the database and in messages.
    public let id: String
    private let bytes: [UInt8]

    public init(bytes: [UInt8], path: String) {
        precondition(bytes.count == 32)
        self.bytes = bytes
        self.path = path
        id = Hex.string(Array(Crypto.SHA256.hash(data: Array("rewind master key".utf8) + bytes).prefix(8)))
    }

    /// Reads the key file; refuses one that others can read or that is not one key.
    public static func read(_ path: String) throws(RewindError) -> MasterKey {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw RewindError(.notFound, "no master key file at \(path) (`rewind admin master-key create \(path)` makes one)")
        }
        // systemd's credentials (LoadCredential=) are readable by the service's
        // user only, often through an ACL entry, which shows in the group bits:
        // trusted as they are.
        let credential = environment("CREDENTIALS_DIRECTORY").map { path.hasPrefix($0 + "/") } ?? false
        guard credential || st.st_mode & 0o077 == 0 else {
            throw RewindError(.forbidden, "the master key file \(path) can be read by others (mode \(String(st.st_mode & 0o777, radix: 8))): chmod 600 \(path)")
        }
        guard let text = readTextFile(path) else { throw RewindError(.notFound, "cannot read the master key file \(path)") }
        // Whitespace, not "\n" or "\r": Swift reads "\r\n" as one Character, equal to neither (a key file saved on Windows was refused).
        let line = text.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
        guard let bytes = Base64.decode(line), bytes.count == 32 else {
            throw RewindError(.badRequest, "the master key file \(path) does not hold a key (one line: 32 bytes in base64)")
        }
        return MasterKey(bytes: bytes, path: path)
    }

    /// Writes a new random key to `path` (mode 0600); refuses to overwrite one.
    public static func create(_ path: String) throws(RewindError) -> MasterKey {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            let why = errno == EEXIST ? "it exists (a key is never overwritten)" : String(cString: strerror(errno))
            throw RewindError(.conflict, "cannot create the master key file \(path): \(why)")
        }
        let line = Array((Base64.encode(key) + "\n").utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == line.count, synced else { throw RewindError(.internal, "cannot write the master key file \(path)") }
        return MasterKey(bytes: key, path: path)
    }

    /// The file named by `--master-key-file` or `REWIND_MASTER_KEY_FILE`.
    public static func path(option: String?) -> String? { option ?? environment("REWIND_MASTER_KEY_FILE") }

    // MARK: Wrapping data keys

    /// A document's data key sealed with this key (AES-256-GCM; the document
    /// and key id authenticated), as stored in `document_keys.wrapped`.
    public func wrap(_ dataKey: [UInt8], doc: String, keyID: String) -> [UInt8] {
        do {
            return Array(try AES.GCM.seal(dataKey, using: SymmetricKey(data: bytes), authenticating: Self.aad(doc, keyID)).combined!)
        } catch {
            preconditionFailure("AES-GCM seal failed: \(error)")  // only a key of the wrong size throws; init checks it
        }
    }

    public func unwrap(_ wrapped: [UInt8], doc: String, keyID: String) throws(RewindError) -> [UInt8] {
        do {
            let key = try AES.GCM.open(try AES.GCM.SealedBox(combined: wrapped), using: SymmetricKey(data: bytes),
                                       authenticating: Self.aad(doc, keyID))
            guard key.count == DocumentCipher.keyBytes else { throw RewindError(.internal, "") }
            return Array(key)
        } catch {
            throw RewindError(.internal, "the data key of \(doc) does not open with master key \(id): the wrong key, or the row was changed")
        }
    }

    private static func aad(_ doc: String, _ keyID: String) -> [UInt8] { Array("rewind data key \(keyID) of \(doc)".utf8) }
}
