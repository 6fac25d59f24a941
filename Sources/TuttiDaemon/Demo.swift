import FoundationEssentials
import Glibc
import TuttiAudio
import TuttiCore
import TuttiNet
import TuttiControlKit

/// `tuttid demo`: a leader and two virtual speakers in one process, playing
/// a generated track, printing once a second how far apart the speakers are.
public struct DemoConfiguration: Sendable {
    public var seconds: Double? = nil
    public var codec = Codec.opus
    public var speakers: [(name: String, ppm: Double)] = [("kitchen", -100), ("living-room", 120)]
    public var directory: String? = nil
    /// An EQ preset for every speaker (nil: flat, bypassed).
    public var equalizerPreset: String? = nil
    /// A channel map for every speaker, or "pair": the two speakers one stereo pair (nil: stereo).
    public var channels: String? = nil
    /// A reverb for every speaker (nil: off, bypassed).
    public var reverb: ReverbSettings? = nil
    /// A 2 s chime announced to every speaker every 4 s (bench/realtime: the overlay mix on the playout thread).
    public var announce = false
    public init() {}
}

public enum Demo {
    /// Runs until `seconds` pass (or forever); returns the per-second
    /// separations measured, in microseconds.
    @discardableResult
    public static func run(_ config: DemoConfiguration, log: Logger, print say: (String) -> Void = { line in _ = Array((line + "\n").utf8).withUnsafeBytes { write(1, $0.baseAddress, $0.count) } }) throws -> [Double] {
        let dir = config.directory ?? ((getenv("TMPDIR").map { String(cString: $0) + "/" } ?? "/tmp/") + "tutti-demo-\(getpid())")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let track = dir + "/demo-track.wav"
        _ = FileManager.default.createFile(atPath: track, contents: Data(TestSignal.wav16(TestSignal.music(seconds: 12))))

        var leaderConfig = LeaderConfiguration()
        leaderConfig.listen = Endpoint(host: "127.0.0.1", port: 0)
        leaderConfig.files = [track]
        leaderConfig.loop = true
        leaderConfig.codec = config.codec
        let chime = dir + "/demo-chime.wav"
        if config.announce {
            _ = FileManager.default.createFile(atPath: chime, contents: Data(TestSignal.wav16(TestSignal.sine(frequency: 1_000, seconds: 2, amplitude: 0.3))))
            leaderConfig.allowedFolders = [dir]
        }
        let leader = try Leader(configuration: leaderConfig, log: log.with(label: "leader"), surfaces: ControlSurfaces())
        try leader.start()
        defer { leader.stop() }
        if let preset = config.equalizerPreset {
            for speaker in config.speakers { _ = try leader.setPreset(room: speaker.name, preset) }
        }

        var followers: [Follower] = []
        for speaker in config.speakers {
            var fc = FollowerConfiguration()
            fc.leader = leader.endpoint
            fc.name = speaker.name
            fc.output = .file(path: "\(dir)/\(speaker.name).raw", ppm: speaker.ppm, delayMilliseconds: 0)
            let follower = try Follower(configuration: fc, log: log.with(label: speaker.name))
            follower.start()
            followers.append(follower)
        }
        defer { for f in followers { f.stop() } }
        let names = config.speakers.map(\.name)
        if config.channels != nil || config.reverb != nil {
            // Once the speakers have joined (a map or a reverb is set on rooms the leader knows).
            let deadline = Monotonic.now() + 5 * nanosecondsPerSecond
            while Set(names).subtracting(leader.speakerNames).count > 0 && Monotonic.now() < deadline { Monotonic.sleep(nanoseconds: 10_000_000) }
        }
        if let reverb = config.reverb {
            for name in names { try leader.setReverb(room: name, reverb) }
        }
        if let channels = config.channels {
            if channels == "pair", names.count == 2 {
                _ = try leader.pair(left: names[0], right: names[1], name: "Demo pair")
            } else if let map = ChannelMap(name: channels) {
                for name in names { try leader.setChannels(room: name, map) }
            }
        }

        say("tutti demo: leader on \(leader.endpoint) playing \(track) (\(config.codec)); speakers: "
            + config.speakers.map { "\($0.name) (DAC \($0.ppm > 0 ? "+" : "")\(Int($0.ppm)) ppm)" }.joined(separator: ", "))
        say("recording what each speaker plays to \(dir)/<speaker>.raw (+ .timing); Ctrl-C to stop")
        var separations: [Double] = []
        let start = Monotonic.now()
        var tick = 1
        while config.seconds.map({ Double(tick) <= $0 }) ?? true {
            Monotonic.sleep(until: start + Int64(tick) * nanosecondsPerSecond)
            var parts: [String] = []
            var offsets: [Int64] = []
            for f in followers {
                let s = f.engine.statistics
                if let timing = f.engine.lastBlockTiming, s.playing {
                    // In one process the leader's clock is this clock: a frame is on time when it leaves at its PTS.
                    let offset = timing.leave - timing.pts.nanoseconds
                    offsets.append(offset)
                    let clock = f.clock.map { "clock \(fixedPoint(Double($0.offset) / 1000, decimals: 1, plus: true)) µs \(fixedPoint($0.skew * 1e6, decimals: 2, plus: true)) ppm" } ?? "no clock"
                    parts.append("\(f.configuration.name) \(fixedPoint(Double(offset) / 1000, decimals: 1, plus: true)) µs, buffer \(s.bufferedNanoseconds / nanosecondsPerMillisecond) ms, "
                                 + "ratio \(fixedPoint(Double(s.ratioPPB) / 1000, decimals: 1, plus: true)) ppm, \(clock)")
                } else {
                    parts.append("\(f.configuration.name) waiting")
                }
            }
            let t = String(tick)
            var line = "t=" + String(repeating: " ", count: max(0, 3 - t.count)) + t + "s  " + parts.joined(separator: " | ")
            if offsets.count == followers.count, let lo = offsets.min(), let hi = offsets.max() {
                let apart = Double(hi - lo) / 1000
                separations.append(apart)
                line += "  => speakers \(fixedPoint(apart, decimals: 1)) µs apart"
            }
            say(line)
            if config.announce, tick % 4 == 2 {
                do {
                    let request = try AnnouncementRequest(target: .all, source: .url(chime))
                    _ = try leader.announce(request)
                } catch {
                    say("announcement: \(error)")
                }
            }
            tick += 1
        }
        if !separations.isEmpty {
            let sorted = separations.sorted()
            say("demo done: speakers apart median \(fixedPoint(sorted[sorted.count / 2], decimals: 1)) µs, max \(fixedPoint(sorted.last!, decimals: 1)) µs over \(sorted.count) s")
        }
        return separations
    }
}
