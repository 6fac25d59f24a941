// swift-tools-version:6.0
import PackageDescription

/// One system-library target per C library: its pkg-config name and the
/// Debian package that provides it.
func systemLibrary(_ name: String, pkgConfig: String?, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-warnings-as-errors"], .when(configuration: .release)),
    // A section per function, so that the linker can put the code that runs
    // together (link/code-order.txt; see `leanLink`).
    .unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release)),
]

/// Release executables link with lld and packed relative relocations
/// (DT_RELR, glibc 2.36 as in Debian 12): gold's 970 KB of RELA entries
/// were read and applied by the loader at every start, and its text
/// mapping took read-only data with it. Three alternated runs: a 3-room
/// leader 16.4-16.5 MiB resident with lld, 15.5-17.2 with gold; a speaker
/// 13.4-13.7 against 13.8-14.2. Still position-independent.
///
/// The functions that run come first, in link/code-order.txt's order
/// (scripts/code-order.sh writes it from profiles; with `-function-sections`
/// above, each of ours is a section lld can move). The kernel maps 64 KiB
/// around each page of code that faults, so start-up code scattered over
/// 11 MB of text had left 5.4 MiB of a leader's code resident. A name the
/// file lists that no longer exists is skipped: a stale file costs memory,
/// never correctness.
///
/// `--no-export-dynamic` undoes the toolchain's `-export-dynamic`
/// (static-stdlib-args.lnk): nothing looks our symbols up at run time, and
/// the loader read the 2,800-4,000 exported names' table (a speaker's 340 KiB,
/// more in a leader) for every symbol a library resolved, which kept it resident.
let leanLink: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                  "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/link/code-order.txt",
                  "-Xlinker", "--no-warn-symbol-ordering", "-Xlinker", "--no-export-dynamic"], .when(configuration: .release)),
]

let package = Package(
    name: "Tutti",
    products: [
        .executable(name: "tuttid", targets: ["tuttid"]),
        .executable(name: "tutti", targets: ["tutti"]),
        .executable(name: "tutti-follower", targets: ["tutti-follower"]),
    ],
    targets: [
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CMPG123", pkgConfig: "libmpg123", apt: "libmpg123-dev"),
        systemLibrary("COpus", pkgConfig: "opus", apt: "libopus-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        systemLibrary("CAvahi", pkgConfig: "avahi-client", apt: "libavahi-client-dev"),
        // No pkg-config: opened at the first FLAC file, Sendspin FLAC stream or encoder (dlopen), never linked.
        systemLibrary("CFLAC", pkgConfig: nil, apt: "libflac-dev"),
        systemLibrary("CGPIOD", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        systemLibrary("CCivetweb", pkgConfig: nil, apt: "libcivetweb-dev"), // Debian ships no civetweb.pc
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        // No pkg-config: opened at the first stretcher (dlopen), never linked.
        systemLibrary("CRubberBand", pkgConfig: nil, apt: "librubberband-dev"),
        systemLibrary("CSodium", pkgConfig: "libsodium", apt: "libsodium-dev"),
        // No pkg-config: opened at the first content hash (dlopen), never linked.
        systemLibrary("CCrypto", pkgConfig: nil, apt: "libssl-dev"),
        // No pkg-config: opened at the first transfer (dlopen), never linked; its headers are in /usr/include.
        systemLibrary("CCurl", pkgConfig: nil, apt: "libcurl4-openssl-dev"),
        // Podcast feeds and XML station playlists (ASX, XSPF); small, so linked.
        systemLibrary("CExpat", pkgConfig: "expat", apt: "libexpat1-dev"),
        // No pkg-config: opened at the first file or stream that needs it (dlopen), never linked;
        // the headers of libavformat-dev, libavcodec-dev, libswresample-dev and libavutil-dev.
        systemLibrary("CFFmpeg", pkgConfig: nil, apt: "libavformat-dev"),
        // No pkg-config: opened at the first preview (dlopen), never linked.
        systemLibrary("COgg", pkgConfig: nil, apt: "libogg-dev"),
        // What TuttiNet cannot do from Swift (kernel receive timestamps); the C
        // libraries' own wrappers are static inline in their C* headers.
        .target(name: "CTuttiNet"),
        .target(name: "CTuttiThread"),

        // Pure logic: no I/O, no C, runs on injected time.
        .target(name: "TuttiCore"),
        // OS services without Foundation: named threads, the stderr log.
        // Pure rules of buttons and remotes: gestures, rotary encoders, the mapping file (no I/O, injected time).
        .target(name: "TuttiGestures", dependencies: ["TuttiCore"]),
        .target(name: "TuttiSystem", dependencies: ["TuttiCore", "CTuttiThread", "CTuttiSpawn"]),
        // Audio edge, a speaker's half: the Opus codec, libFLAC (opened at first use: a Sendspin server's FLAC, the leader's files and Sendspin encoder), sinks (ALSA), the playout engine.
        .target(name: "TuttiAudio", dependencies: ["TuttiCore", "TuttiSystem", "CALSA", "COpus", "CFLAC"]),
        // Audio edge, the leader's half: file and stream decoders (libmpg123, FLAC through TuttiAudio's libFLAC, WAV; FFmpeg for every other format), the tags and exact length they read for the library, the resampler (libsoxr), previews' Ogg Opus (libogg, opened at first use).
        .target(name: "TuttiDecode", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "CMPG123", "CFLAC", "CSoxr", "CFFmpeg", "COgg"]),
        // Speed and pitch at the leader (librubberband); its own module, so speakers do not load it.
        .target(name: "TuttiTimeStretch", dependencies: ["TuttiCore", "TuttiSystem", "CRubberBand"]),
        // The room key: HMAC-SHA256 proofs between speakers and leader, control passwords (libsodium); the one SHA-256 type (libcrypto's code where it loads, libsodium's otherwise).
        .target(name: "TuttiAuth", dependencies: ["TuttiCore", "TuttiSystem", "CSodium", "CCrypto"]),
        // Network edge: sockets, framing over TCP.
        .target(name: "TuttiNet", dependencies: ["TuttiCore", "CTuttiNet"]),
        // The JSON-RPC client (`tutti`, tests), in JSONValue; no Foundation.
        .target(name: "TuttiControlClient", dependencies: ["TuttiCore", "TuttiNet"]),
        // Music library: SQLite store, tag scanner (MP3 and FLAC read through TuttiDecode), full-text search, playlists.
        .target(name: "TuttiLibrary", dependencies: ["TuttiCore", "TuttiSystem", "TuttiDecode", "TuttiAuth", "CSQLite"]),
        // Network sources: HTTP(S) streams (libcurl), ICY metadata, offline cache, podcast feeds and station playlists (expat).
        .target(name: "TuttiStreams", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiDecode", "CCurl", "CExpat"]),
        // Buttons and remotes: Linux input events and GPIO lines.
        .target(name: "TuttiInput", dependencies: ["TuttiGestures", "TuttiCore", "TuttiSystem", "CGPIOD"]),
        // mDNS/DNS-SD through avahi-daemon: announcing leaders, finding them.
        .target(name: "TuttiDiscovery", dependencies: ["TuttiCore", "TuttiSystem", "CAvahi"]),
        // The web app's server: HTTP and WebSocket (civetweb), static files gzipped once (zlib).
        .target(name: "TuttiWeb", dependencies: ["TuttiCore", "TuttiSystem", "CCivetweb", "CZlib"]),
        // A speaker: clock model, jitter buffer, DAC. No Foundation, so a
        // speaker's process stays small (tutti-follower).
        .target(name: "TuttiFollower", dependencies: ["TuttiGestures", "TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiDiscovery", "TuttiInput", "TuttiAuth"]),
        // What every control surface needs of the leader, and nothing of its insides: the
        // `LeaderControl` protocol, its events and types, and the way clients are served
        // (TCPService and the accept loop, connection budgets, ClientWriter, logins).
        .target(name: "TuttiControlKit", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiAuth", "TuttiStreams"]),
        // The MPD protocol surface (mpc, ncmpcpp, phone apps), against `LeaderControl` only.
        .target(name: "TuttiMPD", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiAuth", "TuttiControlKit"]),
        // Snapcast's control API (Home Assistant, python-snapcast, Snapweb), against `LeaderControl` only.
        .target(name: "TuttiSnapcastControl", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiAuth", "TuttiWeb", "TuttiControlKit"]),
        // The leader's JSON-RPC API (`tutti`, programs, the web app's pages), against `LeaderControl` only.
        .target(name: "TuttiJSONRPC", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiStreams", "TuttiAuth", "TuttiControlKit"]),
        // The web app (`--web`): its files, covers, and the JSON-RPC API over WebSocket and POST (civetweb), against `LeaderControl` and `JSONRPCServing` only.
        .target(name: "TuttiWebApp", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiLibrary", "TuttiAuth", "TuttiWeb", "TuttiControlKit"]),
        // Sources from outside the library that feed a group: AirPlay receivers, podcasts.
        .target(name: "TuttiSources", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiLibrary", "TuttiStreams", "TuttiControlKit"]),
        // The leader's engine: streams, players, speaker sessions, groups, library access, mDNS and AirPlay;
        // `LeaderControl` for the surfaces, which it knows only as `LeaderSurfaces` (no surface module, no web server).
        .target(name: "TuttiLeader", dependencies: ["TuttiGestures", "TuttiSources", "TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiDecode", "TuttiNet", "TuttiLibrary", "TuttiInput", "TuttiStreams", "TuttiDiscovery", "TuttiTimeStretch", "TuttiAuth", "TuttiControlKit"]),
        // Sendspin (Music Assistant's protocol): its players join as rooms, its controllers command groups; against `LeaderControl` only.
        .target(name: "TuttiSendspin", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiAuth", "TuttiDecode", "TuttiNet", "TuttiWeb", "TuttiControlKit"]),
        // Composition root: `tuttid`'s command line, the leader engine with its surfaces (`ControlSurfaces`), the demo, and the follower in the same binary.
        .target(name: "TuttiDaemon", dependencies: ["TuttiCore", "TuttiSystem", "TuttiAudio", "TuttiNet", "TuttiFollower", "TuttiTimeStretch", "TuttiAuth", "TuttiControlKit", "TuttiLeader", "TuttiMPD", "TuttiSnapcastControl", "TuttiJSONRPC", "TuttiWebApp", "TuttiSendspin", "TuttiDiscovery"]),
        .executableTarget(name: "tuttid", dependencies: ["TuttiDaemon"], linkerSettings: leanLink),
        .executableTarget(name: "tutti-follower", dependencies: ["TuttiFollower", "TuttiSystem", "TuttiCore"], linkerSettings: leanLink),
        // Helpers shared by the test targets (temporary folders, running real programs to their end).
        .target(name: "CTuttiSpawn"),
        .target(name: "TuttiTestSupport", dependencies: ["CTuttiSpawn"]),
        // The client: its parsing, printing and commands (testable), and a
        // main of a few lines. No audio library (`tutti doctor` runs `tutti-follower doctor`).
        .target(name: "TuttiCLI", dependencies: ["TuttiCore", "TuttiNet", "TuttiControlClient", "TuttiDiscovery"]),
        .executableTarget(name: "tutti", dependencies: ["TuttiCLI"], linkerSettings: leanLink),

        // Fuzz targets: each parser that reads outside input, fed the way the daemons feed it (Fuzz/).
        .target(name: "TuttiFuzzTargets", dependencies: ["TuttiGestures", "TuttiCore", "TuttiSystem", "TuttiAuth", "TuttiLeader", "TuttiControlKit", "TuttiMPD", "TuttiJSONRPC", "TuttiSnapcastControl", "TuttiFollower", "TuttiLibrary", "TuttiStreams", "TuttiDecode", "TuttiNet"],
                path: "Fuzz/Targets"),

        .testTarget(name: "TuttiCoreTests", dependencies: ["TuttiGestures", "TuttiCore"]),
        .testTarget(name: "TuttiAudioTests", dependencies: ["TuttiTestSupport", "TuttiAudio", "TuttiDecode", "TuttiTimeStretch", "TuttiCore"]),
        .testTarget(name: "TuttiLibraryTests", dependencies: ["TuttiTestSupport", "TuttiLibrary", "TuttiAuth", "TuttiCore"]),
        .testTarget(name: "TuttiStreamsTests", dependencies: ["TuttiTestSupport", "TuttiStreams", "TuttiDecode", "TuttiAudio", "TuttiCore"]),
        .testTarget(name: "TuttiWebTests", dependencies: ["TuttiTestSupport", "TuttiWeb"]),
        .testTarget(name: "TuttiInputTests", dependencies: ["TuttiGestures", "TuttiInput", "TuttiCore"]),
        .testTarget(name: "TuttiCLITests", dependencies: ["TuttiCLI", "TuttiDiscovery", "TuttiCore"]),
        .testTarget(name: "TuttiDiscoveryTests", dependencies: ["TuttiTestSupport", "TuttiDiscovery", "TuttiDaemon", "TuttiLeader", "TuttiFollower", "TuttiControlClient", "TuttiAudio", "TuttiNet", "TuttiCore"]),
        .testTarget(name: "TuttiFuzzTests", dependencies: ["TuttiFuzzTargets"]),
        // The primitives against known vectors, and Sendspin's Noise against aiosendspin (PyPI).
        .testTarget(name: "TuttiAuthTests", dependencies: ["TuttiTestSupport", "TuttiAuth", "TuttiCore"], exclude: ["sendspin_noise_peer.py"]),
        .testTarget(name: "TuttiDaemonTests", dependencies: ["TuttiGestures", "TuttiTestSupport", "TuttiDaemon", "TuttiLeader", "TuttiSources", "TuttiFuzzTargets", "TuttiControlKit", "TuttiMPD", "TuttiJSONRPC", "TuttiWebApp", "TuttiDiscovery", "TuttiFollower", "TuttiControlClient", "TuttiAudio", "TuttiNet", "TuttiCore"]),
    ],
    swiftLanguageModes: [.v6]
)

// libFuzzer's driver, only for scripts/fuzz.sh (TUTTI_FUZZ=1): it links
// libFuzzer, so an ordinary build neither builds nor needs it.
if Context.environment["TUTTI_FUZZ"] == "1" {
    package.targets.append(.executableTarget(name: "tutti-fuzz", dependencies: ["TuttiFuzzTargets"], path: "Fuzz/Driver"))
    package.products.append(.executable(name: "tutti-fuzz", targets: ["tutti-fuzz"]))
}

// Every Swift target: `any` spelled out, and warnings are errors in release builds.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}

// Every target names every target it builds on, not only its direct
// dependencies: SwiftPM gives a module's compile command the .swiftmodule
// files of the listed dependencies alone as inputs, and the compiler leaves
// a .swiftmodule untouched when its contents did not change. A module that
// sees another one only through a third (tuttid sees TuttiLeader through
// TuttiDaemon's `@_exported import`) was then not compiled again when that
// one changed: release builds inline a class's allocation size and enum
// case numbers across modules, so an incremental build kept main.o
// allocating the Leader 8 bytes smaller than its initialiser writes (heap
// corruption: glibc's "corrupted size vs. prev_size" during a scan), and a
// stale enum case index printed the wrong catalogue message. Conditions
// of the direct dependencies are kept; those added here have none. System
// libraries are left to their owning module (their flags reach every
// dependant anyway).
func dependencyName(_ dependency: Target.Dependency) -> String? {
    switch dependency {
    case .targetItem(let name, _), .byNameItem(let name, _): name
    default: nil
    }
}
let targetsByName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
for target in package.targets {
    var named = Set(target.dependencies.compactMap(dependencyName))
    var pending = Array(named)
    while let name = pending.popLast() {
        for next in targetsByName[name]?.dependencies.compactMap(dependencyName) ?? [] where named.insert(next).inserted {
            pending.append(next)
            if targetsByName[next]?.type != .system { target.dependencies.append(.target(name: next)) }
        }
    }
}
