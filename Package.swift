// swift-tools-version:6.0
import PackageDescription

/// One system-library target per C library: its pkg-config name and the
/// Debian package that provides it.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-warnings-as-errors"], .when(configuration: .release)),
]

let package = Package(
    name: "Tutti",
    products: [
        .executable(name: "tuttid", targets: ["tuttid"]),
        .executable(name: "tutti", targets: ["tutti"]),
    ],
    targets: [
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CMPG123", pkgConfig: "libmpg123", apt: "libmpg123-dev"),
        systemLibrary("COpus", pkgConfig: "opus", apt: "libopus-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        systemLibrary("CAvahi", pkgConfig: "avahi-client", apt: "libavahi-client-dev"),
        systemLibrary("CFLAC", pkgConfig: "flac", apt: "libflac-dev"),
        systemLibrary("CGPIOD", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        .target(name: "CTuttiShim", dependencies: ["COpus", "CMPG123"]),

        // Pure logic: no I/O, no C, runs on injected time.
        .target(name: "TuttiCore"),
        // Audio edge: decoders, resampler, codec, sinks.
        .target(name: "TuttiAudio", dependencies: [
            "TuttiCore", "CALSA", "CMPG123", "COpus", "CSoxr", "CFLAC", "CTuttiShim",
        ]),
        // Network edge: sockets, framing over TCP.
        .target(name: "TuttiNet", dependencies: ["TuttiCore", "CTuttiShim"]),
        // Music library: SQLite store, tag scanner, full-text search, playlists.
        .target(name: "TuttiLibrary", dependencies: ["TuttiCore", "CSQLite", "CMPG123", "CFLAC", "CTuttiShim"]),
        // Network sources: HTTP(S) streams, ICY metadata, offline cache.
        .target(name: "TuttiStreams", dependencies: ["TuttiCore", "TuttiAudio", "TuttiNet", "CMPG123", "CTuttiShim"]),
        // Buttons and remotes: Linux input events and GPIO lines.
        .target(name: "TuttiInput", dependencies: ["TuttiCore", "CGPIOD"]),
        // mDNS/DNS-SD through avahi-daemon: announcing leaders, finding them.
        .target(name: "TuttiDiscovery", dependencies: ["TuttiCore", "CAvahi"]),
        // Composition root: leader, follower, demo.
        .target(name: "TuttiDaemon", dependencies: ["TuttiCore", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiInput", "TuttiStreams", "TuttiDiscovery", "CTuttiShim"]),
        .executableTarget(name: "tuttid", dependencies: ["TuttiDaemon"]),
        // Helpers shared by the test targets (temporary folders, running real programs to their end).
        .target(name: "CTuttiSpawn"),
        .target(name: "TuttiTestSupport", dependencies: ["CTuttiSpawn"]),
        .executableTarget(name: "tutti", dependencies: ["TuttiCore", "TuttiNet", "TuttiDiscovery"]),

        .testTarget(name: "TuttiCoreTests", dependencies: ["TuttiCore"]),
        .testTarget(name: "TuttiAudioTests", dependencies: ["TuttiTestSupport", "TuttiAudio", "TuttiCore"]),
        .testTarget(name: "TuttiLibraryTests", dependencies: ["TuttiTestSupport", "TuttiLibrary", "TuttiCore"]),
        .testTarget(name: "TuttiStreamsTests", dependencies: ["TuttiTestSupport", "TuttiStreams", "TuttiAudio", "TuttiCore"]),
        .testTarget(name: "TuttiInputTests", dependencies: ["TuttiInput", "TuttiCore"]),
        .testTarget(name: "TuttiDiscoveryTests", dependencies: ["TuttiTestSupport", "TuttiDiscovery", "TuttiDaemon", "TuttiAudio", "TuttiNet", "TuttiCore"]),
        .testTarget(name: "TuttiDaemonTests", dependencies: ["TuttiTestSupport", "TuttiDaemon", "TuttiAudio", "TuttiNet", "TuttiCore"]),
    ],
    swiftLanguageModes: [.v6]
)
