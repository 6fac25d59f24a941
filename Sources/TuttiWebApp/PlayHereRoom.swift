import Synchronization
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiSystem
import TuttiWeb

/// A web page that plays here: a room the leader treats as any other
/// (`SurfaceRoom`: listed, grouped, moved, its volume and mute the room's),
/// served on the page's own WebSocket (`PlayHere` in TuttiCore says the
/// wire, `PlayHereSession` the rules). Its audio is the group's chunks as
/// 16-bit PCM stamped with their PTS; the page schedules them on its own
/// clock model (web/js/playhere.js).
///
/// A slow page never holds anyone up: everything it is sent goes through
/// its own bounded `ClientWriter` (a writer thread while something waits);
/// a page that falls more than `limits` behind loses its socket, and
/// reconnects by itself. Threads: `deliver` comes on the group's source
/// thread or a control thread (it decodes and queues, never blocks);
/// `close` from any.
// Sendable because the mutable state is in `session` and `codec` (Mutexes) and `retired` (an atomic); the rest is immutable after init.
final class PlayHereRoom: SurfaceRoom, @unchecked Sendable {
    var kind: SurfaceRoomKind { .browser }
    let name: String
    private let socket: WebSocket
    private let log: Logger
    private let session = Mutex(PlayHereSession())
    private let writer: ClientWriter
    private let codec: Mutex<Transcoder>

    /// What a page may fall behind by before its socket is dropped: the
    /// leader sends about a buffer (1 s) ahead, so 3 s of waiting audio
    /// means the page cannot keep up, whatever it does next.
    static let limits = ClientOutbox.Limits(maximumBytes: 1 << 20, maximumMessages: 512, maximumBusyNanoseconds: 5_000_000_000,
                                            maximumAgeNanoseconds: 3_000_000_000)

    init(name: String, socket: WebSocket, streamCodec: Codec, log: Logger) throws(AudioError) {
        self.name = name
        self.socket = socket
        self.log = log
        codec = Mutex(try Transcoder(streamCodec))
        writer = ClientWriter(peer: "Play here \(name) (\(socket.peer))", limits: Self.limits, log: log,
                              write: { [socket] bytes in try socket.send(binary: bytes) },
                              disconnect: { [socket] in socket.terminate() })
    }

    func send(_ bytes: [UInt8]) { writer.send(bytes) }

    func deliver(_ message: Message) {
        if case .follow = message { codec.withLock { $0.reset() } }
        for action in session.withLock({ $0.handle(message) }) {
            switch action {
            case .send(let bytes): writer.send(bytes)
            case .setChannels(let map): codec.withLock { $0.sound.set(channels: map) }
            case .setEqualizer(let eq): codec.withLock { $0.sound.set(equalizer: eq) }
            case .sendAudio(let chunk):
                guard let pcm = codec.withLock({ $0.pcm(chunk) }) else {
                    log.info("Play here \(name): a chunk of stream \(chunk.streamID) could not be decoded; skipped")
                    continue
                }
                writer.send(PlayHere.audio(streamID: chunk.streamID, pts: chunk.pts.nanoseconds, frames: chunk.frames, pcm: pcm))
            }
        }
    }

    /// The room plays its channel map and EQ: the leader sends it both, as it sends a Tutti speaker.
    var playsRoomSound: Bool { true }

    /// The room ends: the page is told (it may start again), and nothing more is sent.
    func close(reason: String) {
        let actions = session.withLock { $0.close(reason: reason) }
        guard !retired.load(ordering: .acquiring) else { return }
        for case .send(let bytes) in actions { writer.sendLast(bytes) }
    }

    /// The page asked for another name: this room leaves without telling it
    /// (its "stopped" could overtake the new room's "joined", which has another writer).
    func retire() {
        retired.store(true, ordering: .releasing)
    }
    private let retired = Atomic(false)

    /// The page is gone: its writer ends without telling it.
    func socketClosed() {
        _ = session.withLock { $0.close(reason: "gone") }
        writer.close(reason: "connection closed")
    }

    /// The group's chunks (in the leader's wire codec) as 16-bit PCM in
    /// the room's channel map and EQ: PCM is read as it is, Opus decoded.
    struct Transcoder {
        private let decoder: (any ChunkDecoder)?
        let sound = PlayHereSound()

        init(_ codec: Codec) throws(AudioError) {
            decoder = codec == .pcm ? nil : try makeDecoder(codec)
        }

        func reset() { decoder?.reset() }

        func pcm(_ chunk: Chunk) -> [UInt8]? {
            let frames = Int(chunk.frames)
            guard frames <= PlayHereSound.maxFrames else { return nil }
            if let decoder {
                guard let got = try? decoder.decode(chunk.payload, frames: frames, into: sound.buffer, maxFrames: PlayHereSound.maxFrames),
                      got == frames else { return nil }
            } else {
                guard chunk.payload.count == frames * 4 else { return nil }
                sound.load(s16: chunk.payload, frames: frames)
            }
            return sound.render(frames: frames)
        }
    }
}
