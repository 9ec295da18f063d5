// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Rewind",
    // Titles and the other words a terminal is shown: Sources/RewindLocalizations/Resources/<locale>.lproj.
    defaultLocalization: "en",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "rewind-server", targets: ["rewind-server"]),
        .executable(name: "rewind", targets: ["rewind"]),
        .library(name: "RewindCore", targets: ["RewindCore"]),
        .library(name: "RewindClient", targets: ["RewindClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // SHA-256 of the log's chain and SHA-1 of the WebSocket handshake (BoringSSL: the CPU's SHA extensions).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Identity from the app: signed tokens (JWT) verified by jwt-kit (HS256, ES256, EdDSA; JWKS).
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
    ],
    targets: [
        // C libraries enter through pkg-config; nothing else includes their headers.
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // WebSocket framing (RFC 6455), no I/O: fed from our libuv reads. Debian ships no
        // pkg-config file for it; its header is in the default include path.
        .systemLibrary(name: "CWslay", providers: [.apt(["libwslay-dev"])]),
        // HTTP/1.1 requests to the server API (RewindServer/API/HTTPParser.swift): Node's http-parser.
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        // Webhooks' outbound POSTs (RewindServer/Webhooks/HTTPClient.swift): libcurl's multi interface on the libuv loop.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // AES-256-GCM of documents' content (RewindCore/Crypto/AESGCM.swift): OpenSSL's
        // libcrypto, which libpq links already; a call costs a fraction of swift-crypto's.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // LZ4 block compression of snapshots before they are sealed (sealed text does not
        // compress, so PostgreSQL's own compression of large values cannot help them).
        .systemLibrary(name: "CLZ4", pkgConfig: "liblz4", providers: [.apt(["liblz4-dev"])]),

        // The server's malloc (as Redis's): linked into rewind-server only, it replaces glibc's
        // for the whole process. A commit makes and frees ~100 small blocks: glibc's malloc
        // and free were ~11 % of the server's time at 500 terminals (perf), jemalloc's ~3 %.
        .systemLibrary(name: "CJemalloc", pkgConfig: "jemalloc", providers: [.apt(["libjemalloc-dev"])]),

        // The words in each language, as localization resources read once through Bundle.module
        // (ExpectedTitles.tsv, beside them, is what the tests render every title against).
        .target(name: "RewindLocalizations", exclude: ["ExpectedTitles.tsv"], resources: [.process("Resources")]),

        // Pure, deterministic core: no I/O (swift-crypto for SHA-256 and HMAC, OpenSSL for AES-GCM, LZ4;
        // its words from RewindLocalizations' resources, read once like constants).
        .target(name: "RewindCore", dependencies: [.product(name: "Crypto", package: "swift-crypto"), "COpenSSL", "CLZ4", "RewindLocalizations"]),

        // A client of the protocol for apps (and `rewind connect`): the core and POSIX sockets, nothing else.
        .target(name: "RewindClient", dependencies: ["RewindCore"]),

        // The only Swift that touches libuv: handles as Swift types.
        .target(name: "RewindLoop", dependencies: ["CLibUV"]),

        // Thin shells.
        .target(name: "RewindStore", dependencies: [
            "CLibPQ", "RewindCore", "RewindLoop",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "RewindServer", dependencies: [
            "RewindLoop", "RewindCore", "RewindStore", "CWslay", "CHTTPParser", "CCurl",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            // `--metrics`: swift-metrics handlers made by swift-prometheus's factory on a registry of the server's own.
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            // Signed tokens at hello (Identity/TokenVerifier.swift: the one place that sees jwt-kit).
            .product(name: "JWTKit", package: "jwt-kit"),
        ]),

        .executableTarget(name: "rewind-server", dependencies: [
            "RewindServer", "RewindStore", "RewindCore", "CJemalloc",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "rewind", dependencies: [
            "RewindCore", "RewindStore", "RewindClient",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // What binding sealed entries to their place costs: both forms side by side (scripts/bench/README.md).
        .executableTarget(name: "seal-bench", dependencies: ["RewindCore"]),
        // The Swift app-backend example of docs/operating.md (a token minted with jwt-kit), built so it stays true.
        .executableTarget(name: "app-backend-example", dependencies: [.product(name: "JWTKit", package: "jwt-kit")],
                          path: "docs/examples/app-backend-swift"),
        // The search index kept from the log's feed, in Swift (docs/api.md), built so it stays true.
        .executableTarget(name: "search-index-example", path: "docs/examples/search-index-swift"),

        // What several test targets share (a seeded generator, the chain re-seal SQL): one copy.
        .target(name: "RewindTestSupport", dependencies: ["RewindCore"], path: "Tests/RewindTestSupport"),
        .testTarget(name: "RewindCoreTests", dependencies: ["RewindCore", "RewindTestSupport"]),
        .testTarget(name: "RewindClientTests", dependencies: ["RewindClient", "RewindCore", "RewindTestSupport"]),
        // The server in this process, its loop turned by the test (real PostgreSQL, real sockets).
        .testTarget(name: "RewindServerTests", dependencies: [
            "RewindServer", "RewindCore", "RewindStore", "RewindLoop", "RewindTestSupport",
            .product(name: "Logging", package: "swift-log"),
            // Signed tokens minted as an app's backend would (TokenExpiryClockTests).
            .product(name: "JWTKit", package: "jwt-kit"),
        ]),
        .testTarget(name: "RewindIntegrationTests", dependencies: [
            "RewindCore", "RewindStore", "RewindLoop", "RewindClient", "RewindTestSupport",
            // Tokens minted as an app's backend would (SignedTokenTests).
            .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
        ]),
    ]
)
