import CALSA
import Glibc
import TuttiCore

/// Playback through libasound: S16LE stereo 48 kHz, interleaved, with a
/// short hardware buffer (about 40 ms in 10 ms periods) so that `delay` is
/// small and timely. Underruns are recovered and counted. Any PCM name
/// works (`default`, `hw:0`, `null`, plugin devices such as `vdac`).
public final class ALSASink: AudioSink {
    public let name: String
    public let periodFrames: Int
    public let bufferFrames: Int
    public private(set) var underruns = 0
    /// The current underrun was counted already (by `delay`).
    private var underrunCounted = false
    public private(set) var failure: String?
    private var pcm: OpaquePointer?

    // A device that never blocks (`null`, `file`) is paced by the system
    // clock so the follower does not spin.
    private var pacingStart: Int64 = 0
    private var pacedFrames = 0

    public init(device: String, periodMicroseconds: UInt32 = 10_000, bufferMicroseconds: UInt32 = 40_000) throws(AudioError) {
        name = "alsa:\(device)"
        var handle: OpaquePointer?
        let rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let pcm = handle else { throw Self.failure(device, "open", rc) }
        do {
            (periodFrames, bufferFrames) = try Self.configure(pcm, device: device, periodMicroseconds: periodMicroseconds,
                                                              bufferMicroseconds: bufferMicroseconds)
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
        self.pcm = pcm
    }

    private static func configure(_ pcm: OpaquePointer, device: String, periodMicroseconds: UInt32,
                                  bufferMicroseconds: UInt32) throws(AudioError) -> (period: Int, buffer: Int) {
        func check(_ rc: Int32, _ what: String) throws(AudioError) {
            if rc < 0 { throw Self.failure(device, what, rc) }
        }
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "hw_params_any")
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 1), "enable rate conversion")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "set interleaved access")
        try check(snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE), "set format S16_LE")
        try check(snd_pcm_hw_params_set_channels(pcm, hw, 2), "set 2 channels")
        var rate = UInt32(StreamFormat.sampleRate)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "set rate 48000")
        guard rate == UInt32(StreamFormat.sampleRate) else {
            throw .device(name: device, operation: "set rate", reason: "device offers \(rate) Hz, not 48000")
        }
        var bufferTime = bufferMicroseconds
        try check(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &bufferTime, &dir), "set buffer time")
        var periodTime = periodMicroseconds
        try check(snd_pcm_hw_params_set_period_time_near(pcm, hw, &periodTime, &dir), "set period time")
        try check(snd_pcm_hw_params(pcm, hw), "apply hw params")
        var period: snd_pcm_uframes_t = 0, buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        let periodFrames = max(32, Int(period))
        let bufferFrames = max(periodFrames * 2, Int(buffer))

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "sw_params_current")
        // Start as soon as two periods are queued; wake when a period is free.
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, snd_pcm_uframes_t(periodFrames * 2)), "set start threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(periodFrames)), "set avail_min")
        try check(snd_pcm_sw_params(pcm, sw), "apply sw params")
        try check(snd_pcm_prepare(pcm), "prepare")
        return (periodFrames, bufferFrames)
    }

    deinit { close() }

    private static func failure(_ device: String, _ what: String, _ rc: Int32) -> AudioError {
        .device(name: device, operation: what, reason: String(cString: snd_strerror(rc)))
    }

    public func close() {
        if let pcm { snd_pcm_drop(pcm); snd_pcm_close(pcm) }
        pcm = nil
    }

    public func delay() -> (frames: Int, at: Int64) {
        guard let pcm else { return (0, Monotonic.now()) }
        var frames: snd_pcm_sframes_t = 0
        let rc = snd_pcm_delay(pcm, &frames)
        let now = Monotonic.now()
        let state = snd_pcm_state(pcm)
        if state == SND_PCM_STATE_XRUN && !underrunCounted {
            // Counted when seen, before the write that restarts the device:
            // the schedule lines up on the clock instead of resyncing first.
            underruns += 1
            underrunCounted = true
        }
        if rc < 0 || state != SND_PCM_STATE_RUNNING {
            // Not running yet (or in xrun): what is queued starts when the start threshold is hit.
            var avail: snd_pcm_sframes_t = snd_pcm_avail(pcm)
            if avail < 0 { avail = snd_pcm_sframes_t(bufferFrames) }
            return (max(0, bufferFrames - Int(avail)), now)
        }
        return (max(0, Int(frames)), now)
    }

    public func write(_ samples: UnsafePointer<Int16>, frames: Int) -> Bool {
        guard let pcm else { return false }
        let started = Monotonic.now()
        var offset = 0
        while offset < frames {
            let n = snd_pcm_writei(pcm, samples + 2 * offset, snd_pcm_uframes_t(frames - offset))
            if n >= 0 { offset += Int(n); continue }
            let err = Int32(n)
            if err == -EPIPE {
                if !underrunCounted { underruns += 1 }
                underrunCounted = false
            }
            if err == -EAGAIN || err == -EINTR { continue }
            // Recover from underrun (EPIPE) and suspend (ESTRPIPE); anything else is fatal.
            if snd_pcm_recover(pcm, err, 1) < 0 {
                failure = String(cString: snd_strerror(err)) // allocates, but the device is gone: nothing to glitch
                return false
            }
        }
        // A device that blocks has a clock of its own (a DAC, a plugin that plays
        // in real time): it paces us. Only one that never blocks needs pacing.
        if !deviceKeepsTime && Monotonic.now() - started > 1_000_000 { deviceKeepsTime = true }
        if !deviceKeepsTime { pace(frames) }
        return true
    }

    /// Set once a write has blocked: from then on the device sets the pace.
    /// (Pacing a DAC that runs faster than nominal by the system clock would
    /// starve it after a few minutes: +150 ppm gains 80 ms in 9 minutes.)
    private var deviceKeepsTime = false

    private func pace(_ frames: Int) {
        let now = Monotonic.now()
        if pacedFrames == 0 { pacingStart = now }
        pacedFrames += frames
        let due = pacingStart + StreamFormat.nanoseconds(frames: pacedFrames)
        let ahead = due - now - StreamFormat.nanoseconds(frames: 2 * bufferFrames)
        if ahead > 0 { Monotonic.sleep(nanoseconds: ahead) }
        // Fell far behind the system clock (a real device, or a long stall): restart the reference.
        if now - due > nanosecondsPerSecond { pacedFrames = 0 }
    }
}
