/// A Play here page's room sound, made at the leader: the page plays the
/// PCM it is sent, so its room's channel map and EQ are applied here, by
/// the kernels a speaker's audio thread runs (`ChannelMapper`, then
/// `EqualizerProcessor`), on each chunk before it becomes 16-bit PCM (or
/// is coded as Opus, from `buffer`, for a page that decodes it).
/// A change fades in over 10 ms as on a speaker; at stereo and flat the
/// samples pass untouched, and 16-bit → float → 16-bit returns every
/// sample as it was, so the page gets the stream bit-exact.
///
/// The page hears a change about a buffer later than a speaker does: what
/// was sent already plays as it was made.
///
/// Thread contract: one owner, under its lock (TuttiWebApp's
/// `PlayHereRoom`); nothing here allocates after `init` but the PCM returned.
// Sendable because its owner uses it only under one lock; `buffer` is allocated in init and freed in deinit.
public final class PlayHereSound: @unchecked Sendable {
    public static let maxFrames = PlayHere.maximumFrames
    /// Interleaved stereo float frames (at most `maxFrames`): a decoder writes here, `render` reads.
    public let buffer: UnsafeMutablePointer<Float>
    public private(set) var channels = ChannelMap.stereo
    public private(set) var equalizer = EqualizerSettings.flat
    private var mapper = ChannelMapper()
    private let published = PublishedEqualizer()
    private let kernel: EqualizerProcessor
    /// Audio went through: a change of map fades from here on (before, it is taken at once).
    private var started = false

    public init() {
        buffer = .allocate(capacity: 2 * Self.maxFrames)
        buffer.initialize(repeating: 0, count: 2 * Self.maxFrames)
        kernel = EqualizerProcessor(source: published, maxFrames: Self.maxFrames)
    }

    deinit { buffer.deallocate() }

    public func set(channels map: ChannelMap) {
        channels = map
        if !started { mapper.settle(on: map) }
    }

    public func set(equalizer settings: EqualizerSettings) {
        guard settings != equalizer else { return }
        equalizer = settings
        published.publish(EqualizerDesign(settings))
    }

    /// Reads 16-bit little-endian interleaved PCM (`frames` × 4 bytes) into `buffer`.
    public func load(s16 pcm: [UInt8], frames: Int) {
        precondition(frames <= Self.maxFrames && pcm.count == frames * 4, "\(frames) frames of 16-bit stereo PCM")
        for i in 0..<(2 * frames) {
            buffer[i] = Float(Int16(bitPattern: UInt16(pcm[2 * i]) | UInt16(pcm[2 * i + 1]) << 8)) / 32_768
        }
    }

    /// Maps and filters the first `frames` frames of `buffer` in place (for an encoder to read there).
    public func process(frames: Int) {
        precondition(frames <= Self.maxFrames)
        started = true
        mapper.process(buffer, frames: frames, target: channels)
        kernel.process(buffer, frames: frames)
    }

    /// Maps and filters the first `frames` frames of `buffer`, and returns them as 16-bit little-endian PCM.
    public func render(frames: Int) -> [UInt8] {
        process(frames: frames)
        var out = [UInt8](repeating: 0, count: frames * 4)
        for i in 0..<(2 * frames) {
            let v = UInt16(bitPattern: Int16(max(-32_768, min(32_767, (buffer[i] * 32_768).rounded()))))
            out[2 * i] = UInt8(v & 0xff)
            out[2 * i + 1] = UInt8(v >> 8)
        }
        return out
    }
}
