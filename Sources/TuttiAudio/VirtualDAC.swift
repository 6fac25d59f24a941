import Glibc
import TuttiCore

/// The project's own virtual DAC (`--output file:PATH,ppm=N,delay-ms=N`).
///
/// It behaves like a sound card with its own crystal: it holds a small
/// hardware buffer that drains at `48000 · (1 + ppm/1e6)` frames per second
/// of CLOCK_MONOTONIC, so `write` blocks in real time and `delay` reports
/// what is queued. Everything it plays is appended to PATH as raw S16LE
/// stereo, and PATH.timing gets one line per written block:
///
///     <frame index in PATH> <CLOCK_MONOTONIC ns when that frame leaves the DAC>
///
/// `delay-ms` is latency after the DAC (an amplifier): it is in the logged
/// times but not in `delay()`, as with real hardware. If the writer falls
/// behind and the buffer runs dry, that is an underrun: the next block
/// starts a new segment at the time it is written, as ALSA restarts.
/// Periods are 10 ms, as the ALSA sink asks of a card, in an 80 ms buffer.
/// A write that has to wait waits until five periods fit, so the playout
/// thread wakes 20 times a second, not 100 (a file has no clock to keep up
/// with; snapclient's file player wakes as often). The queue stays 30–80 ms
/// and `delay()` says exactly how much. Silence and audio still arriving
/// wait until the queue is down to 30 ms (`writeDueFrames`,
/// `PlayoutSchedule`), as a 40 ms buffer woken every period would have:
/// batching never writes off late audio early. The files are written by a
/// thread of their own (`FileSpool`): a disk that stalls does not stall
/// the DAC, as it would not stall a real one.
public final class VirtualDAC: AudioSink {
    public let name: String
    public let periodFrames: Int
    public let bufferFrames: Int
    public let ppm: Double
    /// Periods written per wake-up of the playout thread.
    public let periodsPerWake: Int
    public var writeDueFrames: Int { bufferFrames - periodsPerWake * periodFrames }
    public private(set) var underruns = 0

    private let framesPerNanosecond: Double
    private let extraDelay: Int64
    /// The audio file (0) and the timing file (1), written by a thread of their own.
    private let files: FileSpool
    private var written = 0
    private var segmentStart: Int64 = 0
    private var segmentFirstFrame = 0
    private var started = false
    /// It ran dry and `delay` counted the underrun already.
    private var ranDry = false
    private var line = [UInt8](repeating: 0, count: 64)
    /// When the first frame of the most recent write leaves (truth, including ppm and delay-ms).
    public private(set) var lastBlockLeaveTime: Int64 = 0
    public var lastWriteLeaveTime: Int64? { lastBlockLeaveTime }

    public init(path: String, ppm: Double = 0, delayMilliseconds: Double = 0, periodFrames: Int = 480, bufferFrames: Int = 3_840, periodsPerWake: Int = 5) throws(AudioError) {
        func create(_ path: String) throws(AudioError) -> Int32 {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
            return fd
        }
        let audio = try create(path)
        let timing: Int32
        do { timing = try create(path + ".timing") } catch { Glibc.close(audio); throw error }
        // 2.7 s of audio and about 6 s of timing lines ride out a disk that
        // stalls; the writer wakes every 85 ms of audio, or 100 ms at the
        // longest (tests and benches read the files while it plays). Every
        // byte of a ring is touched as it cycles, so it stays resident: 1 MiB
        // rings made a speaker 0.6 MiB bigger than snapclient (bench/resources).
        files = FileSpool(files: [(audio, 1 << 19), (timing, 1 << 14)], wakeBytes: 1 << 15,
                          maximumDelay: 100_000_000, name: "tutti-dac-files")
        name = "file:\(path)"
        self.ppm = ppm
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
        self.periodsPerWake = min(max(1, periodsPerWake), bufferFrames / periodFrames)
        framesPerNanosecond = Double(StreamFormat.sampleRate) * (1 + ppm * 1e-6) / 1e9
        extraDelay = Int64(delayMilliseconds * 1e6)
    }

    deinit { close() }

    private var closed = false
    /// Writes what was played to the files and closes them.
    public func close() {
        guard !closed else { return }
        closed = true
        files.close()
    }

    /// Frames that have left the DAC by `now`.
    @inline(__always)
    private func consumed(at now: Int64) -> Int {
        guard started else { return 0 }
        let played = segmentFirstFrame + Int((Double(now - segmentStart) * framesPerNanosecond).rounded(.down))
        return min(written, played)
    }

    @inline(__always)
    private func leaveTime(ofFrame frame: Int) -> Int64 {
        segmentStart + Int64((Double(frame - segmentFirstFrame) / framesPerNanosecond).rounded())
    }

    /// What is queued, and the instant that became exactly true: when the
    /// oldest queued frame's predecessor left (as ALSA's status timestamps
    /// say). Stamped with the time of asking, the count was up to a frame
    /// (20.8 µs) stale; with five periods decided per wake-up those errors
    /// came in runs, and bench/sync's p99 rose by 5–10 µs.
    public func delay() -> (frames: Int, at: Int64) {
        let now = Monotonic.now()
        let played = consumed(at: now)
        if started && played >= written && !ranDry {
            // Counted when seen, before the write that restarts it (as the ALSA sink does).
            ranDry = true
            underruns += 1
        }
        guard started, played < written else { return (written - played, now) }
        return (written - played, leaveTime(ofFrame: played))
    }

    public func write(_ samples: UnsafePointer<Int16>, frames: Int) -> Bool {
        guard !closed, frames > 0 else { return !closed }
        var now = Monotonic.now()
        if !started || consumed(at: now) >= written {
            if started && !ranDry { underruns += 1 }
            ranDry = false
            started = true
            segmentStart = now
            segmentFirstFrame = written
        }
        // Block until the hardware buffer has room: this is the real-time pace.
        // Once it has to wait, it waits until `periodsPerWake` periods fit.
        var room = bufferFrames - frames
        if written - consumed(at: now) > room { room = min(room, writeDueFrames) }
        while written - consumed(at: now) > room {
            let excess = written - consumed(at: now) - room
            Monotonic.sleep(nanoseconds: Int64(Double(excess) / framesPerNanosecond) + 1_000)
            now = Monotonic.now()
        }
        files.append(samples, count: 4 * frames, to: 0)
        lastBlockLeaveTime = leaveTime(ofFrame: written) + extraDelay
        writeTimingLine(frame: written, time: lastBlockLeaveTime)
        written += frames
        return true
    }

    /// Formats "frame time\n" without allocating (this runs on the audio thread).
    private func writeTimingLine(frame: Int, time: Int64) {
        line.withUnsafeMutableBufferPointer { buf in
            var n = 0
            func put(_ value: Int64) {
                var v = value
                if v < 0 { buf[n] = UInt8(ascii: "-"); n += 1; v = -v }
                let start = n
                repeat { buf[n] = UInt8(ascii: "0") + UInt8(v % 10); n += 1; v /= 10 } while v > 0
                var i = start, j = n - 1
                while i < j { buf.swapAt(i, j); i += 1; j -= 1 }
            }
            put(Int64(frame)); buf[n] = UInt8(ascii: " "); n += 1
            put(time); buf[n] = UInt8(ascii: "\n"); n += 1
            files.append(buf.baseAddress!, count: n, to: 1)
        }
    }
}
