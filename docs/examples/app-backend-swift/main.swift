// An application's backend letting its signed-in users into Rewind, in Swift
// with jwt-kit — the same as docs/examples/app_backend.py: a short-lived
// HS256 token naming the user by the app's own id (`sub`) and display name
// (`name`), optionally scoped to documents (`rewind.docs`). See
// docs/operating.md, "Identity from the app: signed tokens".
//
//   app-backend-example SECRET_FILE SUB NAME [--docs PATTERN=ROLE,…] [--issuer I] [--audience A] [--lifetime S]
//
// prints one token. (`swift build` builds it; SignedTokenTests says hello with its token.)
import Foundation
import JWTKit

struct RewindClaims: JWTPayload {
    struct Rewind: Codable { var docs: [String: String] }
    var sub: String
    var name: String
    var iat: Double
    var exp: Double
    var iss: String?
    var aud: String?
    var rewind: Rewind?
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

var args = Array(CommandLine.arguments.dropFirst())
/// The value after `--name` in `args`, both taken out (nil: not given).
func option(_ name: String, _ args: inout [String]) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    defer { args.removeSubrange(i...(i + 1)) }
    return args[i + 1]
}
let docs = option("--docs", &args).map { list in
    Dictionary(uniqueKeysWithValues: list.split(separator: ",").map { pair in
        let p = pair.split(separator: "=", maxSplits: 1)
        return (String(p[0]), p.count > 1 ? String(p[1]) : "viewer")
    })
}
let lifetime = option("--lifetime", &args).flatMap(Double.init) ?? 600
let issuer = option("--issuer", &args), audience = option("--audience", &args)
guard args.count == 3, var secret = try? String(contentsOfFile: args[0], encoding: .utf8) else {
    FileHandle.standardError.write(Data("usage: app-backend-example SECRET_FILE SUB NAME [--docs PATTERN=ROLE,…] [--issuer I] [--audience A] [--lifetime S]\n".utf8))
    exit(2)
}
if secret.hasSuffix("\n") { secret.removeLast() }  // as the server reads --jwt-secret-file ("\r\n" is one Character)

let now = Date().timeIntervalSince1970
let claims = RewindClaims(sub: args[1], name: args[2], iat: now, exp: now + lifetime, iss: issuer, aud: audience,
                          rewind: docs.map(RewindClaims.Rewind.init))
let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
print(try await keys.sign(claims))
