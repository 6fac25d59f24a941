import TuttiAudio
import TuttiCore
import TuttiTimeStretch
import TuttiAuth
import TuttiNet
import TuttiControlKit
import TuttiLeader

/// What `tuttid` was asked to do. Parsing is pure; `tuttid/main.swift` runs it.
public enum DaemonCommand: Sendable {
    case leader(LeaderConfiguration)
    case follower(FollowerConfiguration)
    case demo(DemoConfiguration)
    case help(String)
    /// `--print-config`: the effective settings, each with where it came from.
    case printConfig(String)
    case version
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

    public static let leader = LeaderUsage.text

    public static let follower = FollowerUsage.text

    public static let demo = """
    usage: tuttid demo [--seconds N] [--codec opus|pcm] [--dir DIR] [--eq PRESET] [--channels MAP|pair] [--reverb PRESET[:MIX]] [--announce] [--speakers N]

    Plays a generated track from a leader to two virtual speakers (file
    outputs at -100 and +120 ppm) in one process and prints, once a second,
    how far apart the speakers are and their buffer levels. --eq gives
    every speaker that EQ preset (bench/realtime measures its cost);
    --channels gives every speaker a channel map (stereo, left, right, mono,
    swap), or makes the two one stereo pair; --reverb gives every speaker
    a reverb preset at MIX % (default 30); --announce mixes a 2 s chime
    over the music of every speaker every 4 s (the music ducked); --speakers 1
    runs only the first.
    """
}

public extension DaemonCommand {
    /// A command line alone, without a settings file.
    static func parse(_ arguments: [String]) throws(UsageError) -> (DaemonCommand, Logger.Level) {
        try parse(arguments, file: nil, hostname: "localhost")
    }

    /// `arguments` over the `[leader]` or `[speaker]` section of `file`.
    /// Pure: `tuttid/main.swift` reads the file (`loadConfigFile`).
    static func parse(_ arguments: [String], file: ConfigFile?, hostname: String,
                      printConfig: Bool = false) throws(UsageError) -> (DaemonCommand, Logger.Level) {
        if arguments.first == "--version" { return (.version, .info) }
        guard let command = arguments.first else { return (.help(DaemonUsage.overview), .info) }
        var args = ArgumentReader(Array(arguments.dropFirst()))
        var level = Logger.Level.info
        if arguments.contains("--help") || arguments.contains("-h") {
            switch command {
            case "leader": return (.help(DaemonUsage.leader), level)
            case "follower": return (.help(DaemonUsage.follower), level)
            case "demo": return (.help(DaemonUsage.demo), level)
            default: return (.help(DaemonUsage.overview), level)
            }
        }

        switch command {
        case "leader":
            let invocation = try LeaderConfiguration.parse(args.remaining, file: file, hostname: hostname)
            if printConfig { return (.printConfig(invocation.settings.render(file: file?.path)), invocation.level) }
            if let error = invocation.missingSource { throw error }
            return (.leader(invocation.configuration), invocation.level)
        case "follower":
            guard let invocation = try FollowerConfiguration.parse(args.remaining, file: file, hostname: hostname) else {
                return (.help(DaemonUsage.follower), .info)
            }
            if printConfig { return (.printConfig(invocation.settings.render(file: file?.path)), invocation.level) }
            return (.follower(invocation.configuration), invocation.level)
        case "demo":
            var c = DemoConfiguration()
            while !args.isEmpty {
                let flag = args.take()
                switch flag {
                case "--seconds": c.seconds = try args.number(flag, 1...86_400)
                case "--codec":
                    let text = try args.value(flag)
                    guard let codec = Codec(name: text) else { throw UsageError("--codec \(text): expected opus or pcm") }
                    c.codec = codec
                case "--dir": c.directory = try args.value(flag)
                case "--eq":
                    let name = try args.value(flag)
                    guard EqualizerPreset.find(name, custom: []) != nil else {
                        throw UsageError("--eq \(name): expected one of \(EqualizerPreset.builtIn.map(\.name).joined(separator: ", "))")
                    }
                    c.equalizerPreset = name
                case "--reverb":
                    // "Large hall:30", "hall" (30 %).
                    let text = try args.value(flag)
                    let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                    guard let preset = ReverbPreset.named(parts.first ?? ""),
                          let reverb = try? ReverbSettings(preset: preset, mix: parts.count > 1 ? Double(parts[1]) ?? -1 : 30) else {
                        throw UsageError("--reverb \(text): expected PRESET[:MIX], a preset of \(ReverbPreset.allCases.map(\.rawValue).joined(separator: ", ")) and a mix 0–100")
                    }
                    c.reverb = reverb
                case "--channels":
                    let text = try args.value(flag)
                    guard text == "pair" || ChannelMap(name: text) != nil else {
                        throw UsageError("--channels \(text): expected pair or one of \(ChannelMap.names.joined(separator: ", "))")
                    }
                    c.channels = text
                case "--announce": c.announce = true
                case "--speakers": c.speakers = Array(c.speakers.prefix(Int(try args.number(flag, 1...2))))
                case "--log-level": level = try args.logLevel(flag)
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

