import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiSystem
import TuttiNet

public enum FollowerUsage {
    public static let text = """
    usage: tuttid follower [--leader HOST:PORT | --leader-name NAME] --name NAME [OPTIONS]

      --leader HOST:PORT     the leader (port defaults to 4953); without it (or "auto") the
                             leader is found over mDNS (Avahi) before each connection
      --leader-name NAME     with several leaders announced, use this one
                             (default: the first by name)
      --sendspin-server URL  play for a Sendspin server (Music Assistant, aiosendspin)
                             instead of a Tutti leader: ws://HOST:PORT/PATH, or HOST:PORT
                             (port 8927, path /sendspin by default); encrypted (Noise),
                             joining with unpaired access (docs/sendspin.md). "mdns":
                             find one announced as _sendspin-server._tcp (Avahi) before
                             each connection (--leader-name picks one by name)
      --sendspin-listen [HOST][:PORT][/PATH]
                             play for the Sendspin servers that dial in (Music Assistant
                             finds players this way): listen on PORT (8928) at PATH
                             (/sendspin), announced as _sendspin._tcp (Avahi); one server
                             plays at a time, as the spec decides (docs/sendspin.md).
                             "yes": the defaults. Not with --sendspin-server
      --sendspin-codecs LIST the formats offered to a Sendspin server, preferred first:
                             flac, pcm, opus (16-bit), flac24, pcm24; "auto" (the default):
                             flac,pcm,opus for a 16-bit output, 24-bit FLAC and PCM first
                             for a deeper one (docs/sendspin.md)
      --name NAME            this room's name (default: the host name)
      --output OUTPUT        alsa:DEVICE (default alsa:default) or
                             file:PATH[,ppm=N][,delay-ms=N] (virtual DAC)
      --mixer MIXER          who sets the volume: software (default; a dB-linear
                             curve on the samples), hw:CONTROL (that ALSA mixer
                             control, e.g. hw:Digital; samples stay bit-exact)
                             or none (the amplifier's knob; mute still works).
                             A bare CONTROL (e.g. Digital): software volume, and
                             that control unmuted and set to 0 dB at start
      --latency-ms N         speaker latency after the DAC to compensate
      --buttons FILE         this room's buttons (see hardware/buttons.md)
      --no-steer             never resample for DAC drift (bit-exact capture)
      --no-realtime          do not ask for real-time scheduling
      --clock-offset-ms N    test: simulate a local clock offset by N ms
      --clock-skew-ppm N     test: simulate a local clock running N ppm fast
      --protocol-version N   test: announce an older protocol (6: no handshake, nothing
                             sealed; an open leader only), for bench/resources
      --state DIR            where this speaker keeps its key and its paired leader's
                             (state in tutti.conf; the package: /var/lib/tutti). Without
                             one both live in memory: pairing lasts until it stops
      --pair                 pair with a leader by code: shows a six-digit code to type
                             in the web app or `tutti speakers pair CODE`
                             (`tutti-follower pair` is the same)
      --room-key-file FILE   legacy: a passphrase shared with the leader (or room-key in
                             tutti.conf [speaker]), mixed into the handshake; pairing is
                             the default way (docs/security.md)
      --log-level LEVEL      debug, info, warning, error (default info)
      --config FILE          settings file, [speaker] section (default /etc/tutti/tutti.conf;
                             a missing default file means defaults); flags override it
      --print-config         print the effective settings and where each came from
      --version              print the version

    tuttid follower runs tutti-follower, the same speaker without the
    leader's libraries, when it is installed beside tuttid.
    """
}

/// What a speaker's command line and `[speaker]` section asked for.
public struct FollowerInvocation: Sendable {
    public var configuration: FollowerConfiguration
    public var level: Logger.Level
    /// The effective settings and where each came from (`--print-config`).
    public var settings: ConfigSettings
    public var configFile: String?
}

extension FollowerConfiguration {
    /// The `[speaker]` section: every key, its default, and the flag it is.
    public static func options(hostname: String) -> [ConfigOption] {
        [
            ConfigOption("name", hostname, .value(flag: "--name")),
            ConfigOption("output", "alsa:default", .value(flag: "--output")),
            ConfigOption("mixer", "", .value(flag: "--mixer")),
            ConfigOption("latency-ms", "0", .value(flag: "--latency-ms")),
            ConfigOption("buttons", "", .value(flag: "--buttons")),
            ConfigOption("leader", "auto", .value(flag: "--leader")),
            ConfigOption("leader-name", "", .value(flag: "--leader-name")),
            ConfigOption("sendspin-server", "", .value(flag: "--sendspin-server")),
            ConfigOption("sendspin-listen", "", .value(flag: "--sendspin-listen")),
            ConfigOption("sendspin-codecs", "auto", .value(flag: "--sendspin-codecs")),
            ConfigOption("realtime", "yes", .disabledBy(flag: "--no-realtime")),
            ConfigOption("steer", "yes", .disabledBy(flag: "--no-steer")),
            ConfigOption("state", "", .value(flag: "--state")),
            ConfigOption("room-key", "", .value(flag: "--room-key")),
            ConfigOption("room-key-file", "", .value(flag: "--room-key-file")),
            ConfigOption("log-level", "info", .value(flag: "--log-level")),
        ]
    }

    /// With `--room-key-file`: the key read from it (at start, not while parsing, which stays pure).
    public func loadingRoomKey() throws(UsageError) -> FollowerConfiguration {
        var c = self
        if let path = roomKeyFile { c.roomKey = try readRoomKey(path) }
        return c
    }

    /// The options after `tuttid follower` alone, without a file (nil: help was asked for).
    public static func parse(_ arguments: [String]) throws(UsageError) -> (FollowerConfiguration, Logger.Level)? {
        guard let invocation = try parse(arguments, file: nil, hostname: "follower") else { return nil }
        return (invocation.configuration, invocation.level)
    }

    /// `[speaker]` from `file`, then `arguments` over it (nil: help was
    /// asked for). Pure: the caller reads the file (`loadConfigFile`).
    public static func parse(_ arguments: [String], file: ConfigFile?, hostname: String) throws(UsageError) -> FollowerInvocation? {
        if arguments.contains("--help") || arguments.contains("-h") { return nil }
        var c = FollowerConfiguration()
        let host = String(hostname.utf8.prefix(WireProtocol.maxNameBytes)) ?? ""
        c.name = host.isEmpty ? "follower" : host
        var level = Logger.Level.info
        var settings = ConfigSettings(section: "speaker", options: options(hostname: c.name))
        try applyConfiguration(file, &settings, arguments: arguments) { flag, args throws(UsageError) in
            switch flag {
            case "--leader":
                let text = try args.value(flag)
                if text.isEmpty || text == "auto" { c.leader = nil; break }
                do { c.leader = try Endpoint(parsing: text, defaultPort: 4953) } catch { throw UsageError("--leader: \(error)") }
            case "--leader-name":
                let name = try args.value(flag)
                if name.isEmpty { c.leaderName = nil; break }
                guard name.utf8.count <= 63 else { throw UsageError("--leader-name must be 1–63 bytes") }
                c.leaderName = name
            case "--sendspin-server":
                let text = try args.value(flag)
                c.sendspinDiscovery = text == "mdns"
                if text.isEmpty || text == "mdns" { c.sendspinServer = nil; break }
                guard let address = SendspinServerAddress(parsing: text) else {
                    throw UsageError("--sendspin-server: expected ws://HOST:PORT/PATH or HOST:PORT, not '\(text.prefix(80))'")
                }
                c.sendspinServer = address
            case "--sendspin-listen":
                let text = try args.value(flag)
                if text.isEmpty || text == "no" { c.sendspinListen = nil; break }
                guard let address = SendspinListenAddress(parsing: text) else {
                    throw UsageError("--sendspin-listen: expected [HOST][:PORT][/PATH], not '\(text.prefix(80))'")
                }
                c.sendspinListen = address
            case "--sendspin-codecs":
                let text = try args.value(flag)
                if text == "auto" { c.sendspinFormats = nil; break }
                let names = text.split(separator: ",").map { String($0.filter { $0 != " " }).lowercased() }
                var formats: [SendspinAudioFormat] = []
                for name in names {
                    guard let format = SendspinPlayerLink.format(named: name) else {
                        throw UsageError("--sendspin-codecs: '\(name.prefix(20))' is not flac, pcm, opus, flac24 or pcm24")
                    }
                    if !formats.contains(format) { formats.append(format) }
                }
                guard !formats.isEmpty else { throw UsageError("--sendspin-codecs: name at least one of flac, pcm, opus, flac24, pcm24") }
                c.sendspinFormats = formats
            case "--name":
                let name = try args.value(flag)
                guard !name.isEmpty, name.utf8.count <= WireProtocol.maxNameBytes else {
                    throw UsageError("--name must be 1–\(WireProtocol.maxNameBytes) bytes")
                }
                c.name = name
            case "--output":
                let text = try args.value(flag)
                do { c.output = try OutputSpec(parsing: text) } catch { throw UsageError("--output: \(error)") }
            case "--mixer":
                let text = try args.value(flag)
                switch text {
                case "": c.mixer = nil
                case _ where text == "software" || text == "none" || text.hasPrefix("hw:"):
                    do { c.volumeMixer = try MixerSpec(parsing: text) } catch { throw UsageError("--mixer: \(error)") }
                default:
                    // A control's name: put at full scale once, volume in software.
                    c.mixer = text
                }
            case "--latency-ms": c.latencyMilliseconds = try args.number(flag, -1_000...5_000)
            case "--no-steer": c.steering = false
            case "--buttons":
                let path = try args.value(flag)
                c.buttons = path.isEmpty ? nil : path
            case "--no-realtime": c.realtime = false
            case "--clock-offset-ms": c.clockOffsetMilliseconds = try args.number(flag, -86_400_000...86_400_000)
            case "--clock-skew-ppm": c.clockSkewPPM = try args.number(flag, -1_000...1_000)
            case "--protocol-version": c.protocolVersion = UInt16(try args.number(flag, Double(WireProtocol.oldestFollowerVersion)...Double(WireProtocol.version)))
            case "--room-key": c.roomKey = try args.roomKey(flag)
            case "--room-key-file": c.roomKeyFile = try args.optionalPath(flag)
            case "--state": c.stateDirectory = try args.optionalPath(flag)
            case "--pair": c.pairByCode = true
            case "--log-level": level = try args.logLevel(flag)
            default: throw UsageError("unknown option \(flag) for follower (see tuttid follower --help)")
            }
        }
        // The spec: a client that advertises _sendspin._tcp does not dial servers itself.
        if c.sendspinListen != nil && (c.sendspinServer != nil || c.sendspinDiscovery) {
            throw UsageError("--sendspin-listen and --sendspin-server exclude each other: a Sendspin player either waits for servers or dials one")
        }
        return FollowerInvocation(configuration: c, level: level, settings: settings, configFile: file?.path)
    }
}

/// A room key from a file (its first 1 KiB; blanks around it dropped).
public func readRoomKey(_ path: String) throws(UsageError) -> RoomKey {
    let bytes: [UInt8]
    do { bytes = try readWholeFile(path, limit: 4_096) } catch { throw UsageError("--room-key-file: \(error)") }
    do { return try RoomKey(String(decoding: bytes, as: UTF8.self)) } catch { throw UsageError("\(path): \(error)") }
}
