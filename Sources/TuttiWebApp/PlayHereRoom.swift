import Synchronization
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiSystem
import TuttiWeb

/// A web page that plays here: a room the leader treats as any other
/// (`SurfaceRoom`: listed, grouped, moved, its volume and mute the room's),
/// served on the page's own WebSocket (`PlayHere` in TuttiCore says the
/// wire, `PlayHereSession` the rules). Its audio is the group's chunks in
/// the room's channel map and EQ, as 16-bit PCM or, for a page that decodes
/// it (WebCodecs), Opus, stamped with their PTS; the page schedules them on
/// its own clock model (web/js/playhere.js).
///
/// A slow page never holds anyone up: what it is sent is made on the room's
/// own thread (`tutti-playhere`: decoding, the room's sound, encoding), from
/// a queue of at most `maximumJobs`, and goes through its own bounded
/// `ClientWriter` (a writer thread while something waits); a page that falls
/// more than `limits` behind, or whose queue fills, loses its socket, and
/// reconnects by itself. Threads: `deliver` comes on the group's source
/// thread or a control thread, under the stream's backlog lock (it only
/// queues); `close` from any. No speaker's audio thread does any of it.
// Sendable because the mutable state is in `session` (a Mutex), the job queue (`work`, a Condition) and `retired` (an atomic); `codec` is used only on the room's thread; the rest is immutable after init.
final class PlayHereRoom: SurfaceRoom, @unchecked Sendable {
    var kind: SurfaceRoomKind { .browser }
    let name: String
    let format: PlayHere.AudioFormat
    private let socket: WebSocket
    private let log: Logger
    private let session = Mutex(PlayHereSession())
    private let writer: ClientWriter
    private let codec: Transcoder

    /// What a page may fall behind by before its socket is dropped: the
    /// leader sends about a buffer (1 s) ahead, so 3 s of waiting audio
    /// means the page cannot keep up, whatever it does next.
    static let limits = ClientOutbox.Limits(maximumBytes: 1 << 20, maximumMessages: 512, maximumBusyNanoseconds: 5_000_000_000,
                                            maximumAgeNanoseconds: 3_000_000_000)
    /// Work waiting for the room's thread: 5 s of 20 ms chunks (the writer's
    /// 3 s is the bound that acts first while the thread keeps up).
    static let maximumJobs = 256

    private enum Job {
        case audio(Chunk)
        case send([UInt8])
        case channels(ChannelMap)
        case equalizer(EqualizerSettings)
        case resetDecoder
    }

    private let work = Condition()
    private var jobs: [Job] = []
    private var ended = false

    init(name: String, socket: WebSocket, streamCodec: Codec, format: PlayHere.AudioFormat, log: Logger) throws(AudioError) {
        self.name = name
        self.format = format
        self.socket = socket
        self.log = log
        codec = try Transcoder(streamCodec, format: format)
        writer = ClientWriter(peer: "Play here \(name) (\(socket.peer))", limits: Self.limits, log: log,
                              write: { [socket] bytes in try socket.send(binary: bytes) },
                              disconnect: { [socket] in socket.terminate() })
        jobs.reserveCapacity(Self.maximumJobs)
    }

    /// Starts the room's thread in `threads`; it ends when the room closes.
    func start(in threads: ThreadGroup) throws(ThreadError) {
        try threads.start(stackSize: 256 << 10) { [self] in run() }
    }

    func send(_ bytes: [UInt8]) { enqueue([.send(bytes)]) }

    func deliver(_ message: Message) {
        // Queued under the session's lock, so that two threads delivering keep their order.
        session.withLock { session in
            var queued: [Job] = []
            if case .follow = message { queued.append(.resetDecoder) }
            for action in session.handle(message) {
                switch action {
                case .send(let bytes): queued.append(.send(bytes))
                case .setChannels(let map): queued.append(.channels(map))
                case .setEqualizer(let eq): queued.append(.equalizer(eq))
                case .sendAudio(let chunk): queued.append(.audio(chunk))
                }
            }
            if !queued.isEmpty { enqueue(queued) }
        }
    }

    private func enqueue(_ more: [Job]) {
        work.lock()
        guard !ended else { return work.unlock() }
        let overflow = jobs.count + more.count > Self.maximumJobs
        if !overflow {
            jobs += more
            work.signal()
        }
        work.unlock()
        // The thread cannot keep up (a loaded board, many pages): this page goes, and comes back by itself.
        if overflow { writer.close(reason: "its audio could not be made fast enough (\(Self.maximumJobs) chunks waiting)") }
    }

    /// The room's thread: takes the jobs in order, makes the audio, and
    /// hands each message to the writer under `work`'s lock, so that nothing
    /// follows a `stopped` that `close` sends.
    private func run() {
        var batch: [Job] = []
        batch.reserveCapacity(Self.maximumJobs)
        while true {
            work.lock()
            while jobs.isEmpty && !ended { work.wait() }
            if ended { work.unlock(); return }
            swap(&batch, &jobs)
            work.unlock()
            for job in batch {
                let message: [UInt8]?
                switch job {
                case .send(let bytes): message = bytes
                case .channels(let map): codec.sound.set(channels: map); message = nil
                case .equalizer(let eq): codec.sound.set(equalizer: eq); message = nil
                case .resetDecoder: codec.reset(); message = nil
                case .audio(let chunk):
                    message = codec.audio(chunk)
                    if message == nil { log.info("Play here \(name): a chunk of stream \(chunk.streamID) could not be made; skipped") }
                }
                guard let message else { continue }
                work.lock()
                if !ended { writer.send(message) }
                work.unlock()
            }
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// Nothing more is made or sent from the room's thread (it ends).
    private func end() {
        work.withLock {
            ended = true
            jobs.removeAll()
            work.broadcast()
        }
    }

    /// The room plays its channel map and EQ: the leader sends it both, as it sends a Tutti speaker.
    var playsRoomSound: Bool { true }

    /// The room ends: the page is told (it may start again), and nothing more is sent.
    func close(reason: String) {
        let actions = session.withLock { $0.close(reason: reason) }
        end()
        guard !retired.load(ordering: .acquiring) else { return }
        for case .send(let bytes) in actions { writer.sendLast(bytes) }
    }

    /// The page asked for another name: this room leaves without telling it
    /// (its "stopped" could overtake the new room's "joined", which has another writer).
    func retire() {
        retired.store(true, ordering: .releasing)
        end()
    }
    private let retired = Atomic(false)

    /// The page is gone: its writer ends without telling it.
    func socketClosed() {
        _ = session.withLock { $0.close(reason: "gone") }
        end()
        writer.close(reason: "connection closed")
    }

    /// The group's chunks (in the leader's wire codec) in the room's channel
    /// map and EQ, as the page's message: PCM is read as it is, Opus
    /// decoded; then 16-bit PCM, or Opus coded once for this page.
    ///
    /// The Opus sent is continuous from the room's start to its end (the
    /// encoder is never reset, as the page's decoder is not), and each
    /// packet's decoded output lags its input by the encoder's look-ahead
    /// (312 frames, 6.5 ms), so each is stamped that much earlier than the
    /// chunk it carries: a frame of it plays when the same frame would as PCM.
    /// Used only on the room's thread.
    final class Transcoder {
        private let decoder: (any ChunkDecoder)?
        private let encoder: OpusChunkEncoder?
        let sound = PlayHereSound()
        private let delayNanoseconds: Int64

        init(_ codec: Codec, format: PlayHere.AudioFormat) throws(AudioError) {
            decoder = codec == .pcm ? nil : try makeDecoder(codec)
            // The frame size only checks a configuration: each chunk is coded at its own length.
            encoder = format == .opus ? try OpusChunkEncoder(bitrateKbps: PlayHere.opusBitrateKbps, frameSize: 960) : nil
            delayNanoseconds = StreamFormat.nanoseconds(frames: encoder?.delayFrames ?? 0)
        }

        func reset() { decoder?.reset() }

        func audio(_ chunk: Chunk) -> [UInt8]? {
            let frames = Int(chunk.frames)
            guard frames <= PlayHereSound.maxFrames else { return nil }
            if let decoder {
                guard let got = try? decoder.decode(chunk.payload, frames: frames, into: sound.buffer, maxFrames: PlayHereSound.maxFrames),
                      got == frames else { return nil }
            } else {
                guard chunk.payload.count == frames * 4 else { return nil }
                sound.load(s16: chunk.payload, frames: frames)
            }
            // Opus codes 2.5…60 ms frames: a chunk of another length (the last of a PCM list) goes as PCM.
            guard let encoder, OpusChunkEncoder.validFrameSizes.contains(frames) else {
                return PlayHere.audio(streamID: chunk.streamID, pts: chunk.pts.nanoseconds, frames: chunk.frames, pcm: sound.render(frames: frames))
            }
            sound.process(frames: frames)
            guard let packet = try? encoder.encode(sound.buffer, count: frames), packet.count <= PlayHere.maximumOpusPacketBytes else { return nil }
            return PlayHere.opusAudio(streamID: chunk.streamID, pts: chunk.pts.nanoseconds - delayNanoseconds, frames: chunk.frames, packet: packet)
        }
    }
}
