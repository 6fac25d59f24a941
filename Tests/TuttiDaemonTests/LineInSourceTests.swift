import Foundation
import Testing
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// A capture device that exists here: a private PulseAudio's null sink,
/// whose monitor ALSA's `pulse` plugin reads as a line input. What a real
/// program (aplay) plays into the sink arrives at the input.
final class PulseLineIn {
    let folder: String
    let server: String
    private let daemon: BackgroundProgram

    static var available: Bool {
        FileManager.default.fileExists(atPath: "/usr/bin/pulseaudio")
            && ["/usr/lib/x86_64-linux-gnu/alsa-lib", "/usr/lib/aarch64-linux-gnu/alsa-lib"].contains {
                FileManager.default.fileExists(atPath: $0 + "/libasound_module_pcm_pulse.so")
            }
    }

    init(_ folder: String) throws {
        self.folder = folder
        // A socket's path has at most 107 bytes: a short one of its own.
        var template = Array("/tmp/tutti-pulse-XXXXXX".utf8CString)
        guard let short = mkdtemp(&template) else { throw CommandFailed(description: "mkdtemp: \(String(cString: strerror(errno)))") }
        let socket = String(cString: short) + "/socket"
        server = "unix:" + socket
        daemon = try BackgroundProgram("/usr/bin/env", ["HOME=" + folder, "PULSE_RUNTIME_PATH=" + folder + "/run",
                                                        "/usr/bin/pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=false",
                                                        "-L", "module-null-sink sink_name=line rate=48000",
                                                        "-L", "module-native-protocol-unix socket=\(socket) auth-anonymous=1"],
                                       log: folder + "/pulse.log")
        guard waitUntil(timeout: 10, { FileManager.default.fileExists(atPath: socket) }) else {
            throw CommandFailed(description: "pulseaudio did not start: \((try? String(contentsOfFile: folder + "/pulse.log", encoding: .utf8)) ?? "")")
        }
        // Full volume, so what is played arrives at its level.
        _ = try runProgram("/usr/bin/pactl", ["set-sink-volume", "line", "100%"], environment: ["PULSE_SERVER": server], timeout: 10)
    }

    /// The ALSA name of the input (the sink's monitor).
    static let device = "pulse:DEVICE=line.monitor"

    func stop() { daemon.stop() }
}

@Suite(.serialized) struct LineInSourceTests {
    /// 440 Hz at half scale, stereo 48 kHz, with `silence` seconds before it.
    static func toneFile(_ path: String, seconds: Double, silence: Double = 0) throws {
        var samples: [Int16] = Array(repeating: 0, count: Int(silence * 48_000) * 2)
        for i in 0..<Int(seconds * 48_000) {
            let v = Int16(16_384 * sin(2 * Double.pi * 440 * Double(i) / 48_000))
            samples.append(v); samples.append(v)
        }
        try Data(wavImage(samples)).write(to: URL(fileURLWithPath: path))
    }

    @Test func aTurntableOnTheLineInputIsHeardInTheRoomAtItsPitchWithTheLatencyReported() throws {
        guard PulseLineIn.available else {
            Issue.record("needs pulseaudio and libasound2-plugins (scripts/setup.sh installs them)")
            return
        }
        let dir = makeTemporaryDirectory()
        let pulse = try PulseLineIn(dir)
        defer { pulse.stop() }
        // The pulse plugin finds its server here (read when the device opens).
        setenv("PULSE_SERVER", pulse.server, 1)
        defer { unsetenv("PULSE_SERVER") }
        let leader = try startLeader(files: [], codec: .pcm) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.lineInputs = [PulseLineIn.device]
        }
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { room.stop() }
        #expect(waitUntilInStep(leader, [room], timeout: 20))

        // A device the settings do not name is refused, with what to do.
        let control = try #require(leader.controlEndpoint)
        #expect { try ControlClient(endpoint: control).call("queue.add", ["uris": ["line:hw:0?name=Microphone"]]) } throws: {
            "\($0)".contains("line-in = hw:0")
        }
        _ = try ControlClient(endpoint: control).call("queue.add", ["uris": ["line:\(PulseLineIn.device)?name=Turntable"]])
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntil(timeout: 5) { leader.nowPlaying.state == .playing })
        let status = try #require(try ControlClient(endpoint: control).call("player.status").object)
        #expect(status["title"]?.string == "Turntable")

        // A real program plays 5 s of 440 Hz into the input, in real time.
        try Self.toneFile(dir + "/tone.wav", seconds: 5, silence: 0.2)
        var latencies: [Double] = []
        let player = try BackgroundProgram("/usr/bin/env", ["PULSE_SERVER=" + pulse.server, "/usr/bin/aplay", "-q", "-D", "pulse:DEVICE=line", dir + "/tone.wav"])
        defer { player.stop() }
        for _ in 0..<50 {
            usleep(100_000)
            if let s = try? ControlClient(endpoint: control).call("player.status").object, let b = s["bufferedSeconds"]?.number {
                latencies.append(b)
            }
        }
        usleep(3_000_000) // the end of the tone reaches the room a buffer later
        #expect(leader.nowPlaying.state == .playing && leader.nowPlaying.error == nil, "\(leader.nowPlaying)")

        // What the room played: the tone at its pitch and length, without a gap.
        let s = readRaw(dir + "/den.raw")
        let frames = s.count / 2
        let loud = (0..<frames).filter { abs(Int(s[2 * $0])) > 8_000 }
        let (first, last) = (loud.first ?? 0, loud.last ?? 0)
        let seconds = Double(last - first) / 48_000
        #expect(seconds > 4.9 && seconds < 5.1, "\(seconds) s of tone, from \(Double(first) / 48_000) s to \(Double(last) / 48_000) s of \(Double(frames) / 48_000); latency \(latencies)")
        var crossings = 0
        for i in (first + 1)..<max(first + 2, last) where (s[2 * i - 2] < 0) != (s[2 * i] < 0) { crossings += 1 }
        let hz = Double(crossings) / 2 / max(seconds, 0.001)
        #expect(abs(hz - 440) < 440 * 0.005, "\(hz) Hz")
        // No gap: every 10 ms of the tone has its peak (a dropout or inserted silence would not).
        var quietBlocks = 0
        for block in stride(from: first, to: last - 480, by: 480) where !(block..<(block + 480)).contains(where: { abs(Int(s[2 * $0])) > 12_000 }) {
            quietBlocks += 1
        }
        #expect(quietBlocks == 0, "\(quietBlocks) blocks of 10 ms without the tone")
        // The input's latency to the rooms is reported and within its bound (1 s buffer).
        // The input's delay to the rooms is reported, and once the tone flows it
        // is the buffer (1 s) and a little: silence went first, so the rooms
        // have a buffer's reserve (without it, 0.1 s), and never more than 1.2 s.
        let steady = latencies.suffix(3)
        #expect(steady.count == 3 && steady.allSatisfy { $0 >= 0.95 && $0 <= 1.2 }, "delay to the rooms \(latencies)")
    }
}
