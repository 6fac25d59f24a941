import CALSA
import Glibc
import TuttiCore

/// Capture through libasound: a line input (a turntable, a TV, a CD player)
/// as interleaved S16LE at the rate asked for, or the nearest the device has.
/// Opened non-blocking, so a read waits in `poll` a bounded time and the
/// owner can stop it; overruns are recovered and counted.
public final class ALSACapture {
    public let device: String
    /// What the device agreed to (it may differ from what was asked).
    public let sampleRate: Int
    public let channels: Int
    public let periodFrames: Int
    public private(set) var overruns = 0
    private var pcm: OpaquePointer?
    private var pollDescriptors: [pollfd]
    private var samples: [Int16]

    public init(device: String, sampleRate: Int, channels: Int, periodMicroseconds: UInt32 = 10_000,
                bufferMicroseconds: UInt32 = 200_000) throws(AudioError) {
        self.device = device
        var handle: OpaquePointer?
        let rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard rc >= 0, let pcm = handle else { throw Self.failure(device, "open for capture", rc) }
        func check(_ rc: Int32, _ what: String) throws(AudioError) {
            if rc < 0 { snd_pcm_close(pcm); throw Self.failure(device, what, rc) }
        }
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "hw_params_any")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "set interleaved access")
        try check(snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE), "set format S16_LE")
        var count = UInt32(channels)
        try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &count), "set \(channels) channels")
        var rate = UInt32(sampleRate)
        var dir: Int32 = 0
        // The device's own rate: resampling is the leader's (libsoxr), and the
        // crystal's error is measured against the monotonic clock (CaptureClock).
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 0), "disable rate conversion")
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "set rate \(sampleRate)")
        var bufferTime = bufferMicroseconds
        try check(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &bufferTime, &dir), "set buffer time")
        var periodTime = periodMicroseconds
        try check(snd_pcm_hw_params_set_period_time_near(pcm, hw, &periodTime, &dir), "set period time")
        try check(snd_pcm_hw_params(pcm, hw), "apply hw params")
        var period: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        self.sampleRate = Int(rate)
        self.channels = Int(count)
        periodFrames = max(16, Int(period))
        let n = snd_pcm_poll_descriptors_count(pcm)
        guard n > 0 else { snd_pcm_close(pcm); throw .device(name: device, operation: "poll descriptors", reason: "none") }
        pollDescriptors = [pollfd](repeating: pollfd(), count: Int(n))
        snd_pcm_poll_descriptors(pcm, &pollDescriptors, UInt32(n))
        samples = [Int16](repeating: 0, count: 8 * periodFrames * Int(count))
        try check(snd_pcm_prepare(pcm), "prepare")
        try check(snd_pcm_start(pcm), "start")
        self.pcm = pcm
    }

    deinit { close() }

    public func close() {
        if let pcm { snd_pcm_drop(pcm); snd_pcm_close(pcm) }
        pcm = nil
    }

    private static func failure(_ device: String, _ what: String, _ rc: Int32) -> AudioError {
        .device(name: device, operation: what, reason: String(cString: snd_strerror(rc)))
    }

    /// One read: waits up to `timeoutMilliseconds` for a period, then takes
    /// what is captured (up to eight periods). Calls `body` with the frames
    /// as stereo floats (mono doubled), the monotonic time of the read and
    /// the frames still waiting in the device; returns the frames read (0
    /// when nothing came in time).
    public func read(timeoutMilliseconds: Int32, into output: inout [Float]) throws(AudioError) -> (frames: Int, at: Int64, pending: Int) {
        guard let pcm else { throw .device(name: device, operation: "read", reason: "closed") }
        let ready = poll(&pollDescriptors, nfds_t(pollDescriptors.count), timeoutMilliseconds)
        if ready < 0 && errno != EINTR { throw .device(name: device, operation: "poll", reason: String(cString: strerror(errno))) }
        let maxFrames = samples.count / channels
        let n = samples.withUnsafeMutableBufferPointer { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(maxFrames)) }
        let now = Monotonic.now()
        if n < 0 {
            let err = Int32(n)
            if err == -EAGAIN || err == -EINTR { return (0, now, 0) }
            if err == -EPIPE { overruns += 1 } // we were late: the device dropped frames
            // Overrun (EPIPE) and suspend (ESTRPIPE) recover; anything else means the device is gone.
            guard snd_pcm_recover(pcm, err, 1) >= 0 else { throw Self.failure(device, "read", err) }
            snd_pcm_start(pcm)
            return (0, now, 0)
        }
        let frames = Int(n)
        let waiting = snd_pcm_avail(pcm)
        output.reserveCapacity(output.count + 2 * frames)
        for f in 0..<frames {
            let left = Float(samples[f * channels]) / 32_768
            output.append(left)
            output.append(channels > 1 ? Float(samples[f * channels + 1]) / 32_768 : left)
        }
        return (frames, now, max(0, Int(waiting)))
    }
}
