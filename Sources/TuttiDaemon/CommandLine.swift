import TuttiAudio
import TuttiCore
import TuttiNet

/// What `tuttid` was asked to do. Parsing is pure; `tuttid/main.swift` runs it.
public enum DaemonCommand: Sendable {
    case leader(LeaderConfiguration)
    case follower(FollowerConfiguration)
    case demo(DemoConfiguration)
    case help(String)
}

public struct UsageError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum DaemonUsage {
    public static let overview = """
    usage: tuttid COMMAND [OPTIONS]

    commands:
      leader     decode a play list and stream it to followers
      follower   receive a leader's stream and play it through a DAC
      demo       a leader and two virtual speakers in one process
      help       this text (also: tuttid COMMAND --help)
    """

    public static let leader = """
    usage: tuttid leader (--play FILE [FILE...] | --music DIR) [OPTIONS]

      --listen HOST:PORT     where followers connect (default 0.0.0.0:4953)
      --control HOST:PORT    JSON-RPC control socket (default 127.0.0.1:4954; "off" for none)
      --mpd HOST:PORT        MPD protocol server (default 127.0.0.1:6600; "off" for none)
      --music DIR            music folder, scanned into the library at start-up
      --buttons FILE         button mapping (media keys, GPIO, IR; see hardware/buttons.md)
      --cache DIR            offline cache of network tracks (default: beside the library)
      --cache-mb N           cache size cap, least recently used evicted (default 2048)
      --no-auto-cache        do not keep network files in the cache as they play
      --net-timeout S        seconds to wait for a server's answer, and for data mid-stream (default 10)
      --db PATH              library database (default ~/.local/share/tutti/library.db,
                             /var/lib/tutti/library.db for the service)
      --play FILE [FILE...]  MP3 or WAV files, played gaplessly in order
      --loop                 start again after the last file
      --codec opus|pcm       wire codec (default opus; pcm is bit-exact)
      --bitrate KBPS         Opus bitrate, 6–510 (default 160)
      --frame-ms 10|20       chunk duration (default 20)
      --buffer-ms N          steady-state buffer, 20–10000 (default 1000)
      --start-ms N           how far ahead new audio and commands are scheduled
                             (default 100, at most the buffer)
      --name NAME            the name announced over mDNS (default "Tutti on HOSTNAME")
      --no-announce          do not announce this leader over mDNS (Avahi)
      --log-level LEVEL      debug, info, warning, error (default info)
    """

    public static let follower = """
    usage: tuttid follower [--leader HOST:PORT | --leader-name NAME] --name NAME [OPTIONS]

      --leader HOST:PORT     the leader (port defaults to 4953); without it the
                             leader is found over mDNS (Avahi) before each connection
      --leader-name NAME     with several leaders announced, use this one
                             (default: the first by name)
      --name NAME            this room's name (default: follower)
      --output OUTPUT        alsa:DEVICE (default alsa:default) or
                             file:PATH[,ppm=N][,delay-ms=N] (virtual DAC)
      --latency-ms N         speaker latency after the DAC to compensate
      --buttons FILE         this room's buttons (see hardware/buttons.md)
      --no-steer             never resample for DAC drift (bit-exact capture)
      --no-realtime          do not ask for real-time scheduling
      --clock-offset-ms N    test: simulate a local clock offset by N ms
      --clock-skew-ppm N     test: simulate a local clock running N ppm fast
      --log-level LEVEL      debug, info, warning, error (default info)
    """

    public static let demo = """
    usage: tuttid demo [--seconds N] [--codec opus|pcm] [--dir DIR]

    Plays a generated track from a leader to two virtual speakers (file
    outputs at -100 and +120 ppm) in one process and prints, once a second,
    how far apart the speakers are and their buffer levels.
    """
}

public extension DaemonCommand {
    static func parse(_ arguments: [String]) throws(UsageError) -> (DaemonCommand, Logger.Level) {
        guard let command = arguments.first else { return (.help(DaemonUsage.overview), .info) }
        var args = Array(arguments.dropFirst())
        var level = Logger.Level.info
        if args.contains("--help") || args.contains("-h") {
            switch command {
            case "leader": return (.help(DaemonUsage.leader), level)
            case "follower": return (.help(DaemonUsage.follower), level)
            case "demo": return (.help(DaemonUsage.demo), level)
            default: return (.help(DaemonUsage.overview), level)
            }
        }
        func value(_ flag: String) throws(UsageError) -> String {
            guard !args.isEmpty, !args[0].hasPrefix("--") else { throw UsageError("\(flag) needs a value") }
            return args.removeFirst()
        }
        func number(_ flag: String, _ range: ClosedRange<Double>) throws(UsageError) -> Double {
            let text = try value(flag)
            guard let v = Double(text), v.isFinite, range.contains(v) else {
                throw UsageError("\(flag) \(text): expected a number in \(range.lowerBound)…\(range.upperBound)")
            }
            return v
        }
        func parseLevel(_ text: String) throws(UsageError) -> Logger.Level {
            switch text {
            case "debug": .debug
            case "info": .info
            case "warning": .warning
            case "error": .error
            default: throw UsageError("--log-level \(text): expected debug, info, warning or error")
            }
        }

        switch command {
        case "leader":
            var c = LeaderConfiguration()
            c.control = Endpoint(host: "127.0.0.1", port: 4954)
            c.mpd = Endpoint(host: "127.0.0.1", port: 6600)
            c.announce = true
            while !args.isEmpty {
                let flag = args.removeFirst()
                switch flag {
                case "--listen":
                    do { c.listen = try Endpoint(parsing: try value(flag)) } catch let e as NetError { throw UsageError("--listen: \(e)") } catch { throw error as! UsageError }
                case "--control":
                    let text = try value(flag)
                    if text == "off" { c.control = nil } else {
                        do { c.control = try Endpoint(parsing: text) } catch { throw UsageError("--control: \(error)") }
                    }
                case "--mpd":
                    let text = try value(flag)
                    if text == "off" { c.mpd = nil } else {
                        do { c.mpd = try Endpoint(parsing: text, defaultPort: 6600) } catch { throw UsageError("--mpd: \(error)") }
                    }
                case "--music": c.musicDirectory = try value(flag)
                case "--buttons": c.buttons = try value(flag)
                case "--db": c.databasePath = try value(flag)
                case "--cache": c.cacheDirectory = try value(flag)
                case "--cache-mb": c.cacheCapacityMegabytes = Int(try number(flag, 1...1_000_000))
                case "--no-auto-cache": c.autoCache = false
                case "--net-timeout":
                    let seconds = try number(flag, 1...600)
                    c.network.connectTimeout = seconds
                    c.network.stallTimeout = seconds
                case "--play":
                    while let next = args.first, !next.hasPrefix("--") { c.files.append(args.removeFirst()) }
                case "--loop": c.loop = true
                case "--codec":
                    let text = try value(flag)
                    guard let codec = Codec(name: text) else { throw UsageError("--codec \(text): expected opus or pcm") }
                    c.codec = codec
                case "--bitrate": c.bitrateKbps = Int(try number(flag, 6...510))
                case "--frame-ms":
                    let ms = Int(try number(flag, 10...20))
                    guard ms == 10 || ms == 20 else { throw UsageError("--frame-ms \(ms): expected 10 or 20") }
                    c.frameMilliseconds = ms
                case "--buffer-ms": c.bufferMilliseconds = Int(try number(flag, 20...10_000))
                case "--start-ms": c.startLatencyMilliseconds = Int(try number(flag, 10...10_000))
                case "--no-announce": c.announce = false
                case "--name":
                    let name = try value(flag)
                    // One DNS label: DNS-SD instance names are at most 63 bytes.
                    guard !name.isEmpty, name.utf8.count <= 63 else { throw UsageError("--name must be 1–63 bytes") }
                    c.announceName = name
                case "--log-level": level = try parseLevel(try value(flag))
                default: throw UsageError("unknown option \(flag) for leader (see tuttid leader --help)")
                }
            }
            guard !c.files.isEmpty || c.musicDirectory != nil else { throw UsageError("leader needs --play FILE [FILE...] or --music DIR") }
            return (.leader(c), level)
        case "follower":
            var c = FollowerConfiguration()
            while !args.isEmpty {
                let flag = args.removeFirst()
                switch flag {
                case "--leader":
                    do { c.leader = try Endpoint(parsing: try value(flag), defaultPort: 4953) } catch let e as NetError { throw UsageError("--leader: \(e)") } catch { throw error as! UsageError }
                case "--leader-name":
                    let name = try value(flag)
                    guard !name.isEmpty, name.utf8.count <= 63 else { throw UsageError("--leader-name must be 1–63 bytes") }
                    c.leaderName = name
                case "--name":
                    let name = try value(flag)
                    guard !name.isEmpty, name.utf8.count <= WireProtocol.maxNameBytes else {
                        throw UsageError("--name must be 1–\(WireProtocol.maxNameBytes) bytes")
                    }
                    c.name = name
                case "--output":
                    do { c.output = try OutputSpec(parsing: try value(flag)) } catch let e as AudioError { throw UsageError("--output: \(e)") } catch { throw error as! UsageError }
                case "--latency-ms": c.latencyMilliseconds = try number(flag, -1_000...5_000)
                case "--no-steer": c.steering = false
                case "--buttons": c.buttons = try value(flag)
                case "--no-realtime": c.realtime = false
                case "--clock-offset-ms": c.clockOffsetMilliseconds = try number(flag, -86_400_000...86_400_000)
                case "--clock-skew-ppm": c.clockSkewPPM = try number(flag, -1_000...1_000)
                case "--log-level": level = try parseLevel(try value(flag))
                default: throw UsageError("unknown option \(flag) for follower (see tuttid follower --help)")
                }
            }
            return (.follower(c), level)
        case "demo":
            var c = DemoConfiguration()
            while !args.isEmpty {
                let flag = args.removeFirst()
                switch flag {
                case "--seconds": c.seconds = try number(flag, 1...86_400)
                case "--codec":
                    let text = try value(flag)
                    guard let codec = Codec(name: text) else { throw UsageError("--codec \(text): expected opus or pcm") }
                    c.codec = codec
                case "--dir": c.directory = try value(flag)
                case "--log-level": level = try parseLevel(try value(flag))
                default: throw UsageError("unknown option \(flag) for demo (see tuttid demo --help)")
                }
            }
            return (.demo(c), level)
        case "help", "--help", "-h":
            return (.help(DaemonUsage.overview), level)
        default:
            throw UsageError("unknown command '\(command)'\n\n\(DaemonUsage.overview)")
        }
    }
}
