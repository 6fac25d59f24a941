import TuttiAudio
import TuttiCore
import TuttiSystem

/// One stream's way onto the speaker's timeline: `StreamIntake`'s rules,
/// the decoder, and the writes they decide. A Tutti leader's session and a
/// Sendspin server's both feed their audio through it, so what reaches the
/// playout thread is the same either way.
///
/// Thread contract: the connection thread only (it owns the decoder and the
/// scratch buffer; the timeline's producer side is single-threaded).
final class StreamWriter {
    private let timeline: AudioTimeline
    private let log: Logger
    /// Counts concealed chunks (the speaker's health report).
    private let concealed: (Int) -> Void
    private(set) var intake: StreamIntake
    private var decoder: any ChunkDecoder
    private let scratch = UnsafeMutablePointer<Float>.allocate(capacity: WireProtocol.maxChunkFrames * 2)
    /// Grid index after the last frame written.
    private(set) var nextIndex: Int?

    /// `decoder`: one for the stream's codec unless given (a Sendspin server's FLAC).
    init(stream: StreamDescription, timeline: AudioTimeline, log: Logger, decoder: (any ChunkDecoder)? = nil,
         concealed: @escaping (Int) -> Void) throws(AudioError) {
        self.timeline = timeline
        self.log = log
        self.concealed = concealed
        intake = StreamIntake(stream: stream)
        if let decoder { self.decoder = decoder } else { self.decoder = try makeDecoder(stream.codec) }
    }

    deinit { scratch.deallocate() }

    var streamID: UInt32 { intake.stream.streamID }

    func chunk(_ c: Chunk) throws { try perform(intake.chunk(c)) }
    func flush(streamID: UInt32, from: LeaderTime, fade: Bool) throws { try perform(intake.flush(streamID: streamID, from: from, fade: fade)) }
    func follow(_ next: StreamDescription, from: LeaderTime) throws { try perform(intake.follow(next, from: from)) }
    func streamEnd(streamID: UInt32, at: LeaderTime) throws { try perform(intake.streamEnd(streamID: streamID, at: at)) }

    /// Does what the intake decided, on the timeline and the decoder.
    private func perform(_ actions: [StreamIntake.Action]) throws {
        for action in actions {
            switch action {
            case .begin(let epoch, let buffer):
                timeline.beginStream(epoch: epoch, bufferNanoseconds: buffer)
            case .decode(let c, let floor):
                let index = timeline.frameIndex(of: c.pts)
                do {
                    let n = try decoder.decode(c.payload, frames: Int(c.frames), into: scratch, maxFrames: WireProtocol.maxChunkFrames)
                    let floorIndex = floor.map { timeline.frameIndex(of: $0) } ?? .min
                    let skip = floorIndex > index ? min(n, floorIndex - index) : 0
                    if skip < n { timeline.write(scratch + 2 * skip, count: n - skip, at: index + skip) }
                    nextIndex = index + n
                } catch {
                    log.warning("chunk \(c.sequence): \(error); concealing")
                    let n = decoder.conceal(frames: Int(c.frames), into: scratch)
                    timeline.write(scratch, count: n, at: index)
                    nextIndex = index + n
                    concealed(1)
                }
            case .conceal(let count, let framesPerChunk):
                for _ in 0..<count {
                    let n = decoder.conceal(frames: framesPerChunk, into: scratch)
                    if let at = nextIndex { timeline.write(scratch, count: n, at: at); nextIndex = at + n }
                }
                concealed(count)
            case .cut(let at, let fade):
                let index = timeline.frameIndex(of: at)
                // A 2.5 ms fade into a cut mid-audio, so a pause or skip does not click.
                if fade { timeline.fadeOut(before: index, count: 120) }
                timeline.flush(from: index)
                nextIndex = index
            case .resetDecoder:
                decoder.reset()
            case .follow(let next, let newCodec):
                if newCodec { decoder = try makeDecoder(next.codec) } else { decoder.reset() }
                log.info("following stream \(next.streamID) from now on (room moved to another group)")
            case .end(let at):
                timeline.endStream(at: timeline.frameIndex(of: at))
                log.info("the stream ended")
            }
        }
    }
}
