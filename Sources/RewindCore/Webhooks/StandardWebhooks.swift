import Crypto

/// Webhook signatures as the Standard Webhooks specification
/// (standardwebhooks.com) says, so that a receiver verifies them with any of
/// its libraries: the secret is `whsec_` and the base64 of the key's bytes;
/// a delivery carries `webhook-id`, `webhook-timestamp` (seconds since 1970)
/// and `webhook-signature`, `v1,` and the base64 of HMAC-SHA256 over
/// `id.timestamp.body`. The id stays the same on every retry of a delivery,
/// which is how a receiver tells a retry from a new event.
public enum StandardWebhooks {
    public static let secretPrefix = "whsec_"

    /// A new endpoint's secret: 32 random bytes.
    public static func newSecret() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeMutableBytes { RandomBytes.fill($0) }
        return secretPrefix + Base64.encode(bytes)
    }

    /// The key a secret stands for (the `whsec_` prefix optional, as the
    /// specification's libraries accept); nil if it is not base64 or too short.
    public static func key(ofSecret secret: String) -> [UInt8]? {
        let body = secret.hasPrefix(secretPrefix) ? String(secret.dropFirst(secretPrefix.count)) : secret
        guard let key = Base64.decode(body), key.count >= 16, key.count <= 64 else { return nil }
        return key
    }

    /// The `webhook-signature` header's value for one delivery.
    public static func signature(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> String {
        var signed = Array(id.utf8)
        signed.append(UInt8(ascii: "."))
        signed += Array(String(timestamp).utf8)
        signed.append(UInt8(ascii: "."))
        signed += body
        let mac = HMAC<Crypto.SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
        return "v1," + Base64.encode(Array(mac))
    }

    /// The id of the delivery of the entry at `position`: the same on every
    /// retry and every instance (a receiver deduplicates by it).
    public static func messageID(position: Int64) -> String { "evt_\(position)" }
}
