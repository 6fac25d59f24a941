import TuttiAudio
import TuttiAuth
import TuttiControlKit
import TuttiCore
import TuttiNet
import TuttiSystem
import TuttiTimeStretch

/// `tuttid leader --help`.
public enum LeaderUsage {
    public static let text = """
    usage: tuttid leader (--play FILE [FILE...] | --music DIR) [OPTIONS]

      --listen HOST:PORT     where followers connect (default 0.0.0.0:4953)
      --control HOST:PORT    JSON-RPC control socket (default 127.0.0.1:4954; "off" for none)
      --mpd HOST:PORT        MPD protocol server (default 127.0.0.1:6600; "off" for none)
      --web HOST:PORT        the web app, http://HOST:PORT (default 0.0.0.0:8080, skipped with a
                             warning if that port is taken; "off" for none)
      --snapcast-stream HOST:PORT  where stock Snapcast clients (snapclient) join (default 0.0.0.0:1704,
                             skipped with a warning if taken; "off" for none; see docs/snapcast.md)
      --snapcast-control HOST:PORT  Snapcast's JSON-RPC for Home Assistant and python-snapcast
                             (default 0.0.0.0:1705; "off" for none)
      --snapcast-http HOST:PORT     the same over HTTP and WebSocket at /jsonrpc (default 0.0.0.0:1780)
      --sendspin HOST[:PORT] Sendspin players and controllers join at ws://HOST:PORT/sendspin
                             (port 8927 unless given; off unless asked for; see docs/sendspin.md)
      --web-root DIR         the web app's files (default: found beside tuttid, or /usr/share/tutti/web)
      --music DIR            music folder, scanned into the library at start-up
      --buttons FILE         button mapping (media keys, GPIO, IR; see hardware/buttons.md)
      --cache DIR            offline cache of network tracks (default: beside the library)
      --cache-mb N           cache size cap, least recently used evicted (default 2048)
      --no-auto-cache        do not keep network files in the cache as they play
      --net-timeout S        seconds to wait for a server's answer, and for data mid-stream (default 10)
      --ca-file FILE         PEM certificates trusted for https:// sources (default: the system store)
      --allow-local-streams  play streams and fetch files from this machine and the private network
                             (10/8, 172.16/12, 192.168/16, fc00::/7: a home's NAS or Icecast);
                             otherwise only from the internet (see docs/streams.md)
      --airplay, --no-airplay  an AirPlay receiver per group, named after it (shairport-sync;
                             on in the package's tutti.conf; see docs/sources.md)
      --line-in "DEVICE ..."  capture devices (ALSA names, as arecord -L lists them) that
                             may be played as line:DEVICE?name=Turntable sources
      --db PATH              library database (default ~/.local/share/tutti/library.db,
                             /var/lib/tutti/library.db for the service)
      --play FILE [FILE...]  audio files (MP3, FLAC, WAV, AAC, Ogg, Opus…), played gaplessly in order
      --loop                 start again after the last file
      --codec opus|pcm       wire codec (default opus; pcm is bit-exact)
      --bitrate KBPS         Opus bitrate, 6–510 (default 160)
      --frame-ms 10|20       chunk duration (default 20)
      --buffer-ms N          steady-state buffer, 20–10000 (default 1000)
      --start-ms N           how far ahead new audio and commands are scheduled
                             (default 100, at most the buffer)
      --speakers paired|open paired (the package's tutti.conf): only speakers paired with
                             this leader (web app, `tutti speakers`) join and send room
                             commands; open (the default here): any speaker joins
      --state DIR            where the leader's key and paired speakers are kept
                             (default: beside the library; without one, in memory)
      --room-key-file FILE   legacy: a passphrase speakers prove (or room-key in tutti.conf
                             [leader]), mixed into the handshake; paired speakers need none
      --snapcast-unkeyed     on a closed system, still let snapclients join the stream (they
                             cannot pair or prove a key); about the stream only, not control
      --snapcast-control-open  Snapcast control (1705, 1780) from other machines may change things
                             without the password (its clients cannot log in); otherwise they may
                             only look when a password is set
      --password-file FILE   the password clients on other machines log in with (JSON-RPC
                             auth.login, MPD password, the web app); or password in tutti.conf.
                             Without one, a surface beyond loopback gets a generated password
                             (saved as control-password beside the library)
      --guest-read-only      clients on other machines that have not logged in may look
      --open-control         no password at all: anyone on the network controls the music
      --password-on-loopback clients on this machine log in too (behind a reverse proxy)
      --playlists DIR        where M3U playlists are imported from and exported to
                             (default: playlists beside the library)
      --allow-folder DIR     one more folder clients may name files in (repeatable); otherwise
                             only the music folder, the cache and the playlist folder
      --time-stretch faster|finer
                             librubberband engine for speed and pitch (default faster:
                             a third of finer's CPU, fit for a Pi-class leader)
      --name NAME            the name announced over mDNS (default "Tutti on HOSTNAME")
      --no-announce          do not announce this leader over mDNS (Avahi)
      --log-level LEVEL      debug, info, warning, error (default info)
      --config FILE          settings file, [leader] section (default /etc/tutti/tutti.conf;
                             a missing default file means defaults); flags override it
      --print-config         print the effective settings and where each came from
      --version              print the version
    """
}

/// A leader's settings as its command line and `[leader]` section gave them.
public struct LeaderInvocation: Sendable {
    public var configuration: LeaderConfiguration
    public var level: Logger.Level
    /// Every setting and where it came from (`--print-config`).
    public var settings: ConfigSettings

    /// Why the leader cannot run as asked (nil: it can): it has nothing to play.
    public var missingSource: UsageError? {
        configuration.files.isEmpty && configuration.musicDirectory == nil && configuration.lineInputs.isEmpty
            ? UsageError("leader needs --play FILE [FILE...], --music DIR or --line-in DEVICE") : nil
    }
}

extension LeaderConfiguration {
    /// The `[leader]` section: every key, its default, and the flag it is.
    public static func options(hostname: String) -> [ConfigOption] {
        [
            ConfigOption("listen", "0.0.0.0:4953", .value(flag: "--listen")),
            ConfigOption("control", "127.0.0.1:4954", .value(flag: "--control")),
            ConfigOption("mpd", "127.0.0.1:6600", .value(flag: "--mpd")),
            ConfigOption("web", "0.0.0.0:8080", .value(flag: "--web")),
            ConfigOption("snapcast-stream", "0.0.0.0:1704", .value(flag: "--snapcast-stream")),
            ConfigOption("snapcast-control", "0.0.0.0:1705", .value(flag: "--snapcast-control")),
            ConfigOption("snapcast-http", "0.0.0.0:1780", .value(flag: "--snapcast-http")),
            ConfigOption("sendspin", "", .value(flag: "--sendspin")),
            ConfigOption("web-root", "", .value(flag: "--web-root")),
            ConfigOption("music", "", .value(flag: "--music")),
            ConfigOption("db", "", .value(flag: "--db")),
            ConfigOption("cache", "", .value(flag: "--cache")),
            ConfigOption("cache-mb", "2048", .value(flag: "--cache-mb")),
            ConfigOption("auto-cache", "yes", .disabledBy(flag: "--no-auto-cache")),
            ConfigOption("net-timeout", "10", .value(flag: "--net-timeout")),
            ConfigOption("ca-file", "", .value(flag: "--ca-file")),
            ConfigOption("local-streams", "no", .enabledBy(flag: "--allow-local-streams")),
            ConfigOption("line-in", "", .value(flag: "--line-in")),
            ConfigOption("airplay", "no", .enabledBy(flag: "--airplay")),
            ConfigOption("codec", "opus", .value(flag: "--codec")),
            ConfigOption("bitrate", "160", .value(flag: "--bitrate")),
            ConfigOption("frame-ms", "20", .value(flag: "--frame-ms")),
            ConfigOption("buffer-ms", "1000", .value(flag: "--buffer-ms")),
            ConfigOption("start-ms", "100", .value(flag: "--start-ms")),
            ConfigOption("time-stretch", "faster", .value(flag: "--time-stretch")),
            ConfigOption("speakers", "open", .value(flag: "--speakers")),
            ConfigOption("state", "", .value(flag: "--state")),
            ConfigOption("room-key", "", .value(flag: "--room-key")),
            ConfigOption("room-key-file", "", .value(flag: "--room-key-file")),
            ConfigOption("snapcast-unkeyed", "no", .enabledBy(flag: "--snapcast-unkeyed")),
            ConfigOption("snapcast-control-open", "no", .enabledBy(flag: "--snapcast-control-open")),
            ConfigOption("password", "", .value(flag: "--password")),
            ConfigOption("password-file", "", .value(flag: "--password-file")),
            ConfigOption("guest-read-only", "no", .enabledBy(flag: "--guest-read-only")),
            ConfigOption("open-control", "no", .enabledBy(flag: "--open-control")),
            ConfigOption("password-on-loopback", "no", .enabledBy(flag: "--password-on-loopback")),
            ConfigOption("playlists", "", .value(flag: "--playlists")),
            ConfigOption("name", "Tutti on \(hostname)", .value(flag: "--name")),
            ConfigOption("announce", "yes", .disabledBy(flag: "--no-announce")),
            ConfigOption("buttons", "", .value(flag: "--buttons")),
            ConfigOption("log-level", "info", .value(flag: "--log-level")),
        ]
    }

    /// `[leader]` from `file`, then `arguments` (after `tuttid leader`)
    /// over it, with the defaults `tuttid leader` serves by (every
    /// surface on, announced). Pure: the caller reads the file (`loadConfigFile`).
    public static func parse(_ arguments: [String], file: ConfigFile?, hostname: String) throws(UsageError) -> LeaderInvocation {
        var level = Logger.Level.info
        var c = LeaderConfiguration()
        c.control = Endpoint(host: "127.0.0.1", port: 4954)
        c.mpd = Endpoint(host: "127.0.0.1", port: 6600)
        c.web = WebOptions(endpoint: Endpoint(host: "0.0.0.0", port: 8080), required: false)
        c.snapcastStream = Endpoint(host: "0.0.0.0", port: 1704)
        c.snapcastStreamRequired = false
        c.snapcastControl = Endpoint(host: "0.0.0.0", port: 1705)
        c.snapcastHTTP = Endpoint(host: "0.0.0.0", port: 1780)
        c.announce = true
        var settings = ConfigSettings(section: "leader", options: options(hostname: hostname))
        try applyConfiguration(file, &settings, arguments: arguments) { flag, args throws(UsageError) in
            switch flag {
            case "--listen":
                let text = try args.value(flag)
                do { c.listen = try Endpoint(parsing: text) } catch { throw UsageError("--listen: \(error)") }
            case "--control":
                let text = try args.value(flag)
                if text == "off" { c.control = nil } else {
                    do { c.control = try Endpoint(parsing: text) } catch { throw UsageError("--control: \(error)") }
                }
            case "--mpd":
                let text = try args.value(flag)
                if text == "off" { c.mpd = nil } else {
                    do { c.mpd = try Endpoint(parsing: text, defaultPort: 6600) } catch { throw UsageError("--mpd: \(error)") }
                }
            case "--web":
                let text = try args.value(flag)
                if text == "off" { c.web = nil } else {
                    do { c.web = WebOptions(endpoint: try Endpoint(parsing: text, defaultPort: 8080), required: true, root: c.web?.root) } catch { throw UsageError("--web: \(error)") }
                }
            case "--snapcast-stream":
                let text = try args.value(flag)
                if text == "off" { c.snapcastStream = nil } else {
                    do { c.snapcastStream = try Endpoint(parsing: text, defaultPort: 1704) } catch { throw UsageError("--snapcast-stream: \(error)") }
                    c.snapcastStreamRequired = true
                }
            case "--snapcast-control", "--snapcast-http":
                let text = try args.value(flag)
                let endpoint: Endpoint?
                if text == "off" { endpoint = nil } else {
                    do { endpoint = try Endpoint(parsing: text) } catch { throw UsageError("\(flag): \(error)") }
                    c.snapcastStreamRequired = true
                }
                if flag == "--snapcast-control" { c.snapcastControl = endpoint } else { c.snapcastHTTP = endpoint }
            case "--sendspin":
                let text = try args.value(flag)
                if text == "off" || text.isEmpty { c.sendspin = nil } else {
                    do { c.sendspin = try Endpoint(parsing: text, defaultPort: 8927) } catch { throw UsageError("--sendspin: \(error)") }
                }
            case "--web-root":
                guard let dir = try args.value(flag).nonEmpty else { break }
                if c.web != nil { c.web?.root = dir } else { c.web = WebOptions(endpoint: Endpoint(host: "0.0.0.0", port: 8080), required: false, root: dir) }
            case "--music": c.musicDirectory = try args.value(flag).nonEmpty
            case "--buttons": c.buttons = try args.value(flag).nonEmpty
            case "--db": c.databasePath = try args.value(flag).nonEmpty
            case "--cache": c.cacheDirectory = try args.value(flag).nonEmpty
            case "--cache-mb": c.cacheCapacityMegabytes = Int(try args.number(flag, 1...1_000_000))
            case "--no-auto-cache": c.autoCache = false
            case "--net-timeout":
                let seconds = try args.number(flag, 1...600)
                c.network.connectTimeout = seconds
                c.network.stallTimeout = seconds
            case "--ca-file": c.network.caFile = try args.value(flag).nonEmpty
            case "--allow-local-streams": c.network.destinations = StreamDestinationPolicy(allowsLocal: true)
            case "--airplay": c.airplay = true
            case "--no-airplay": c.airplay = false
            case "--line-in": c.lineInputs += try args.value(flag).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            case "--play":
                while let next = args.next, !next.hasPrefix("--") { c.files.append(args.take()) }
            case "--loop": c.loop = true
            case "--codec":
                let text = try args.value(flag)
                guard let codec = Codec(name: text) else { throw UsageError("--codec \(text): expected opus or pcm") }
                c.codec = codec
            case "--bitrate": c.bitrateKbps = Int(try args.number(flag, 6...510))
            case "--frame-ms":
                let ms = Int(try args.number(flag, 10...20))
                guard ms == 10 || ms == 20 else { throw UsageError("--frame-ms \(ms): expected 10 or 20") }
                c.frameMilliseconds = ms
            case "--buffer-ms": c.bufferMilliseconds = Int(try args.number(flag, 20...10_000))
            case "--start-ms": c.startLatencyMilliseconds = Int(try args.number(flag, 10...10_000))
            case "--room-key": c.roomKey = try args.roomKey(flag)
            case "--room-key-file": c.roomKeyFile = try args.optionalPath(flag)
            case "--speakers":
                switch try args.value(flag) {
                case "paired": c.pairedSpeakersOnly = true
                case "open", "": c.pairedSpeakersOnly = false
                case let other: throw UsageError("--speakers \(other): expected paired or open")
                }
            case "--state": c.stateDirectory = try args.optionalPath(flag)
            case "--snapcast-unkeyed": c.snapcastWithoutKey = true
            case "--snapcast-control-open": c.snapcastControlOpen = true
            case "--password":
                let text = try args.value(flag)
                guard text.isEmpty || (8...256).contains(text.utf8.count) else { throw UsageError("password must be 8–256 bytes") }
                c.password = text.isEmpty ? nil : text
            case "--password-file": c.passwordFile = try args.optionalPath(flag)
            case "--guest-read-only": c.guestReadOnly = true
            case "--open-control": c.openControl = true
            case "--password-on-loopback": c.passwordOnLoopback = true
            case "--playlists": c.playlistDirectory = try args.optionalPath(flag)
            case "--allow-folder": c.allowedFolders.append(try args.value(flag))
            case "--time-stretch":
                let text = try args.value(flag)
                guard let engine = TimeStretcher.Engine(rawValue: text) else { throw UsageError("--time-stretch \(text): expected faster or finer") }
                c.timeStretchEngine = engine
            case "--no-announce": c.announce = false
            case "--name":
                let name = try args.value(flag)
                // One DNS label: DNS-SD instance names are at most 63 bytes.
                guard !name.isEmpty, name.utf8.count <= 63 else { throw UsageError("--name must be 1–63 bytes") }
                c.announceName = name
            case "--log-level": level = try args.logLevel(flag)
            default: throw UsageError("unknown option \(flag) for leader (see tuttid leader --help)")
            }
        }
        return LeaderInvocation(configuration: c, level: level, settings: settings)
    }
}

extension String {
    /// nil for "": an option left empty in the file means its default.
    var nonEmpty: String? { isEmpty ? nil : self }
}
