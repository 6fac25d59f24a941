import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiTimeStretch
import TuttiAuth
import TuttiDiscovery
import TuttiLibrary
import TuttiNet
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// How a leader is set up (`tuttid leader …`).
public struct LeaderConfiguration: Sendable {
    public var listen = Endpoint(host: "0.0.0.0", port: 4953)
    /// Where the JSON-RPC control socket listens (nil: none).
    public var control: Endpoint? = nil
    /// Where the MPD protocol server listens (nil: none).
    public var mpd: Endpoint? = nil
    /// The web app (nil: none).
    public var web: WebOptions? = nil
    /// The music folder to scan into the library (nil: no library scan).
    public var musicDirectory: String? = nil
    /// The library database (nil with a music folder: the default path).
    public var databasePath: String? = nil
    /// A button mapping file (nil: no buttons).
    public var buttons: String? = nil
    /// The offline cache of network tracks (nil: beside the library, or none without one).
    public var cacheDirectory: String? = nil
    public var cacheCapacityMegabytes = 2_048
    /// Seconds between two refreshes of a podcast feed (6 hours).
    public var podcastRefreshSeconds: Double = 6 * 3_600
    /// Keep finite network files in the cache as they play (`--no-auto-cache` turns it off).
    public var autoCache = true
    /// Timeouts, buffer and reconnection for network sources.
    public var network = NetworkOptions()
    public var files: [String] = []
    public var loop = false
    public var codec = Codec.opus
    public var bitrateKbps = 160
    public var frameMilliseconds = 20
    /// Steady-state buffer: how far ahead of its PTS each chunk is sent.
    public var bufferMilliseconds = 1_000
    /// How far ahead new audio is scheduled (start, resume, skip, seek), and
    /// so how soon a command is heard; the leader then sends ahead faster
    /// than real time until the buffer is full.
    public var startLatencyMilliseconds = 100
    /// The room key speakers must prove (nil: any speaker may join).
    public var roomKey: RoomKey? = nil
    public var roomKeyFile: String? = nil
    /// Only speakers paired with this leader (or proving the room key) join
    /// and send room commands (`speakers = paired`, the package's default).
    public var pairedSpeakersOnly = false
    /// Where the leader's key (`leader.key`) and the paired speakers
    /// (`speakers`) are kept (nil: beside the library; without one, in memory).
    public var stateDirectory: String? = nil
    /// With a room key, let snapclients in anyway (they cannot prove it).
    /// About joining the stream only; control is `snapcastControlOpen`.
    public var snapcastWithoutKey = false
    /// Snapcast control (1705, 1780) from other machines may change things
    /// without a password (its clients cannot log in); otherwise they may only look.
    public var snapcastControlOpen = false
    /// The password control clients from other machines log in with (nil:
    /// generated and saved beside the library when a surface listens beyond
    /// loopback; see docs/security.md).
    public var password: String? = nil
    public var passwordFile: String? = nil
    /// Clients from other machines that have not logged in may look (not change).
    public var guestReadOnly = false
    /// No password even beyond loopback: anyone on the network controls the music.
    public var openControl = false
    /// Clients on this machine log in too (a reverse proxy here forwards strangers).
    public var passwordOnLoopback = false
    /// Where M3U playlists are imported from and exported to (nil: `playlists` beside the library).
    public var playlistDirectory: String? = nil
    /// More folders clients may name files in (besides music, cache, playlists).
    public var allowedFolders: [String] = []
    /// Capture devices that may be played as `line:DEVICE` sources (ALSA names).
    public var lineInputs: [String] = []
    /// librubberband's engine for speed and pitch.
    public var timeStretchEngine = TimeStretcher.Engine.faster
    /// Bytes a follower may have queued before it is dropped as too slow.
    public var maximumQueuedBytes = 2 << 20
    /// How long a chunk may wait in a follower's queue before that follower
    /// is dropped as too slow (by then it could no longer play it in time).
    public var maximumQueueDelayMilliseconds = 2_000
    /// A control client (JSON-RPC, MPD, web page) whose writes make no
    /// progress for this long has stopped reading, and is disconnected.
    public var clientStallMilliseconds = 10_000
    /// What may wait for one control client before it is disconnected.
    public var clientOutbox = ClientOutbox.Limits()

    /// The outbox limits with the stall limit in them.
    public var outboxLimits: ClientOutbox.Limits {
        var l = clientOutbox
        if l.maximumBusyNanoseconds == nil { l.maximumBusyNanoseconds = Int64(clientStallMilliseconds) * 1_000_000 }
        return l
    }
    /// Announce this leader over mDNS (`_tutti._tcp`). Off unless asked for,
    /// so tests that build leaders directly stay off the network; the
    /// command line turns it on (see docs/discovery.md).
    public var announce = false
    /// Where stock Snapcast clients (snapclient, Snapdroid, ESP32 speakers)
    /// connect with Snapcast's binary protocol (nil: none); see docs/snapcast.md.
    public var snapcastStream: Endpoint? = nil
    /// Asked for explicitly: a taken port stops the leader; the default one is skipped with a warning.
    public var snapcastStreamRequired = true
    /// Snapcast's control API over TCP (Home Assistant, python-snapcast), and over HTTP/WebSocket at /jsonrpc (snapweb).
    public var snapcastControl: Endpoint? = nil
    public var snapcastHTTP: Endpoint? = nil
    /// Where Sendspin players, controllers and metadata clients connect
    /// (WebSocket at /sendspin; nil: none); see docs/sendspin.md.
    public var sendspin: Endpoint? = nil
    /// AirPlay receivers, one per group, run by the leader (shairport-sync;
    /// `airplay = yes` in the package's tutti.conf). Off unless asked for,
    /// like `announce`: tests that build leaders directly stay off the network.
    public var airplay = false
    /// shairport-sync: a path, or a name looked up in PATH.
    public var airplayProgram = "shairport-sync"
    /// Where each receiver's config, pipes and log are kept (nil: a folder
    /// under XDG_RUNTIME_DIR, /run/tutti for the service, or /tmp).
    public var airplayDirectory: String? = nil
    /// The announced service name (nil: "Tutti on HOSTNAME").
    public var announceName: String? = nil

    public init() {}

    public var framesPerChunk: Int { StreamFormat.sampleRate * frameMilliseconds / 1000 }
}

/// Decodes the play list, stamps and encodes each chunk once, and fans the
/// chunks out to every connected follower.
///
/// Threads: one source thread (decode, encode, pace), one accept thread,
/// and per follower one reader (hello, clock sync, health) and one writer
/// (drains that follower's bounded queue). No follower can block another
/// or the source.
