import Dispatch
import Glibc
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// One encoded block of an announcement waiting for its turn to go out.
struct PendingOverlay: Sendable {
    let pts: LeaderTime
    let message: Message
    let bytes: [UInt8]
    let sessions: [FollowerSession]
}

/// Announcements (docs/sound.md): decoded (or spoken by espeak-ng) and
/// encoded once here, sent to the chosen rooms' speakers as `overlay`
/// blocks (v9) with PTS on the leader's timeline, and mixed there over
/// whatever plays with the music ducked. No group's queue, position or
/// state changes.
extension Leader {
    /// How far ahead of its PTS a block goes out, and how much goes out at
    /// once: a speaker's outbox holds at most ~1.25 s of an announcement.
    static let announcementSendAhead: Int64 = nanosecondsPerSecond
    static let announcementBatch: Int64 = 250 * nanosecondsPerMillisecond
    /// The least time from the request to the announcement's first frame.
    /// A command's lead (100 ms) is too short here: every speaker must hold
    /// the first blocks before the music's 50 ms duck ramp starts, or the
    /// duck starts late in a loaded room (and the first blocks come too late
    /// to play). A doorbell 0.3 s after the press is still at once to a person.
    static let announcementLead: Int64 = 300 * nanosecondsPerMillisecond
    /// The most a network announcement may weigh, and espeak-ng's output.
    static let announcementMaxBytes = 16 << 20
    /// espeak-ng speaks 1000 bytes of text in well under a second here; a voice that hangs is killed.
    static let speechTimeoutSeconds = 10.0

    public func announce(_ request: AnnouncementRequest) throws(AnnouncementError) -> AnnouncementResult {
        let rooms = try announcementRooms(request.target)
        // A stereo pair is one room of two speakers.
        let pairs = stereoPairs.withLock { $0 }
        var listening: [FollowerSession] = [], speakers: [String] = [], cannot: [String] = [], notConnected: [String] = []
        for room in rooms {
            var connected = false
            for speaker in pairs.pair(named: room)?.speakers ?? [room] {
                for session in sessions(ofRoom: speaker) {
                    connected = true
                    switch session.dialect {
                    case .tutti where session.version >= WireProtocol.overlayVersion:
                        listening.append(session)
                        if !speakers.contains(speaker) { speakers.append(speaker) }
                    case .tutti: cannot.append("\(speaker) (protocol v\(session.version))")
                    case .snapcast: cannot.append("\(speaker) (a Snapcast client)")
                    case .surface: cannot.append("\(speaker) (a browser or Sendspin player)")
                    }
                }
            }
            if !connected { notConnected.append(room) }
        }
        // Those that cannot mix one are skipped and named in the result; refused only when nobody could hear it.
        if listening.isEmpty { throw cannot.isEmpty ? .nobodyListening(rooms: rooms) : .speakersCannotAnnounce(cannot) }

        var audio = try announcementAudio(request.source)
        let chunkFrames = configuration.framesPerChunk
        let frames = audio.count / 2
        guard frames > 0 else { throw .undecodable("it holds no audio") }
        guard frames <= AnnouncementRequest.maximumSeconds * StreamFormat.sampleRate else {
            throw .tooLong(seconds: Double(frames) / Double(StreamFormat.sampleRate))
        }
        // Whole chunks (an Opus frame has one size): the last padded with silence.
        let chunks = (frames + chunkFrames - 1) / chunkFrames
        audio.append(contentsOf: repeatElement(0, count: 2 * (chunks * chunkFrames - frames)))
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity(chunks)
        do {
            let encoder = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: chunkFrames)
            try audio.withUnsafeBufferPointer { (p) throws(AudioError) in
                for k in 0..<chunks { payloads.append(try encoder.encode(p.baseAddress! + 2 * k * chunkFrames, count: chunkFrames)) }
            }
        } catch {
            throw .undecodable("encoding: \(error)")
        }

        // On the leader's timeline, `announcementLead` from now (or the largest command lead of the rooms' groups), or after the one playing.
        let lead = max(Self.announcementLead, speakers.map { stream(forRoom: $0).commandLead.nanoseconds }.max() ?? 0)
        let now = LeaderTime(nanoseconds: Monotonic.now())
        let start = try announcementQueue.withLock { (q: inout AnnouncementQueue) throws(AnnouncementError) -> LeaderTime in
            if let busy = q.busyUntil, busy - now > 60 * nanosecondsPerSecond { throw .busy(seconds: Double(busy - now) / 1e9) }
            return q.schedule(now: now, lead: lead, frames: chunks * chunkFrames)
        }
        let id = UInt32.random(in: 1...UInt32.max)
        var blocks: [PendingOverlay] = []
        blocks.reserveCapacity(chunks)
        for (k, payload) in payloads.enumerated() {
            let pts = start + StreamFormat.nanoseconds(frames: k * chunkFrames)
            let message = Message.overlay(OverlayChunk(announcementID: id, codec: configuration.codec, pts: pts, frames: UInt32(chunkFrames),
                                                       gainPerMille: request.gainPerMille, duckCentibels: request.duckCentibels,
                                                       payload: payload))
            blocks.append(PendingOverlay(pts: pts, message: message, bytes: message.encoded(), sessions: listening))
        }
        announcementOutbox.withLock { q in
            q.append(contentsOf: blocks)
            q.sort { $0.pts < $1.pts }
        }
        announcementPacer.withLock { $0 }?.poke()
        let seconds = Double(frames) / Double(StreamFormat.sampleRate)
        let queued = max(0, Double(start - (now + lead)) / 1e9)
        log.info("announcement \(id) to \(speakers.joined(separator: ", ")): \(fixedPoint(seconds, decimals: 1)) s, music down \(fixedPoint(-request.duckDecibels, decimals: 0)) dB"
                 + (queued > 0 ? ", after the one playing (\(fixedPoint(queued, decimals: 1)) s)" : ""))
        if !cannot.isEmpty { log.info("announcement \(id) skips speakers that cannot mix one: \(cannot.joined(separator: ", "))") }
        return AnnouncementResult(id: id, speakers: speakers, notConnected: notConnected, cannotMix: cannot, startsAt: start, seconds: seconds, queuedSeconds: queued)
    }

    private func announcementRooms(_ target: AnnouncementTarget) throws(AnnouncementError) -> [String] {
        let known = knownRooms
        switch target {
        case .rooms(let names):
            for name in names where !known.contains(name) { throw .unknownRoom(name, known: known) }
            var unique: [String] = []
            for name in names where !unique.contains(name) { unique.append(name) }
            return unique
        case .group(let key):
            let all = groups
            guard let group = all.first(where: { $0.id == key || $0.name == key }) else { throw .unknownGroup(key, known: all.map(\.name)) }
            return group.rooms
        case .all:
            return known
        }
    }

    /// Interleaved stereo frames at 48 kHz: a URL or file through the
    /// leader's decoders, or text spoken by espeak-ng into a WAV file.
    func announcementAudio(_ source: AnnouncementSource) throws(AnnouncementError) -> [Float] {
        let folder = try temporaryFolder()
        defer { removeFolder(folder) }
        switch source {
        case .url(let url) where SourceOpener.isNetworkURL(url):
            do { _ = try confine(url) } catch { throw .undecodable(error.description) }
            let body: [UInt8]
            do {
                guard case .fetched(let document) = try DocumentFetch.fetch(url, options: configuration.network, maxBytes: Self.announcementMaxBytes) else {
                    throw AnnouncementError.undecodable("\(url) answered without a body")
                }
                body = document.body
            } catch let e as AnnouncementError { throw e } catch {
                throw .undecodable("\(url): \(error)")
            }
            let path = folder + "/announcement"
            try writeAnnouncementFile(body, to: path)
            return try decodedFrames(path, name: url)
        case .url(let path):
            // A path on the leader: as given when absolute, else in the music folder.
            var full = path.hasPrefix("file://") ? String(path.dropFirst(7)) : path
            if !full.hasPrefix("/"), let music = configuration.musicDirectory { full = music + "/" + full }
            // Where a queue.add may read, and nowhere else (docs/security.md).
            do { _ = try confine(full) } catch { throw .undecodable(error.description) }
            return try decodedFrames(full, name: path)
        case .text(let text, let language):
            guard let espeak = OneShotProgram.find("espeak-ng") else { throw .speech("espeak-ng is not installed (apt install espeak-ng)") }
            // The text from a file: never an argument espeak-ng could read as an option.
            try writeAnnouncementFile(Array(text.utf8), to: folder + "/text")
            do {
                try OneShotProgram.run(espeak, ["-v", language, "-w", folder + "/speech.wav", "-f", folder + "/text"],
                                       timeoutSeconds: Self.speechTimeoutSeconds)
            } catch {
                throw .speech(error.status == 1 ? "espeak-ng has no voice '\(language)' (`espeak-ng --voices` lists them)" : error.description)
            }
            var info = stat()
            guard stat(folder + "/speech.wav", &info) == 0, Int(info.st_size) <= Self.announcementMaxBytes else {
                throw .speech("espeak-ng wrote no usable file")
            }
            return try decodedFrames(folder + "/speech.wav", name: "speech")
        }
    }

    private func decodedFrames(_ path: String, name: String) throws(AnnouncementError) -> [Float] {
        do {
            let decoder = try AudioFile.open(path)
            let rate = decoder.sampleRate
            let resampler = rate == StreamFormat.sampleRate ? nil : try SoxrResampler(inputRate: rate)
            let limit = (AnnouncementRequest.maximumSeconds + 1) * rate
            var raw: [Float] = [], out: [Float] = []
            var total = 0
            while true {
                raw.removeAll(keepingCapacity: true)
                let n = try decoder.read(into: &raw, maxFrames: 4_096)
                if n == 0 { break }
                total += n
                if total > limit { throw AnnouncementError.tooLong(seconds: Double(total) / Double(rate)) }
                if let resampler {
                    try raw.withUnsafeBufferPointer { (p) throws(AudioError) in try resampler.process(p.baseAddress!, frames: n, into: &out) }
                } else {
                    out.append(contentsOf: raw[0..<(2 * n)])
                }
            }
            if let resampler { try resampler.finish(into: &out) }
            return out
        } catch let e as AnnouncementError {
            throw e
        } catch {
            throw .undecodable("\(name): \(error)")
        }
    }

    private func temporaryFolder() throws(AnnouncementError) -> String {
        var template = Array("/tmp/tutti-announce-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw .undecodable("no temporary folder: \(String(cString: strerror(errno)))") }
        return String(cString: made)
    }

    private func removeFolder(_ folder: String) {
        for name in ["announcement", "text", "speech.wav"] { unlink(folder + "/" + name) }
        rmdir(folder)
    }

    private func writeAnnouncementFile(_ bytes: [UInt8], to path: String) throws(AnnouncementError) {
        guard let file = fopen(path, "wb") else { throw .undecodable("cannot write \(path): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        guard written == bytes.count else { throw .undecodable("cannot write \(path)") }
    }

    /// The blocks go out in PTS order, each batch about a second ahead of
    /// its PTS; returns when the next batch is due (nil: none waits, and
    /// the pacer's thread ends after lingering).
    func announcementRound() -> Int64? {
        let horizon = Monotonic.now() + Self.announcementSendAhead + Self.announcementBatch
        let due: ArraySlice<PendingOverlay> = announcementOutbox.withLock { q in
            let n = q.firstIndex { $0.pts.nanoseconds > horizon } ?? q.count
            defer { q.removeFirst(n) }
            return q[..<n]
        }
        for block in due {
            for session in block.sessions where !session.isClosed { session.send(block.message, encoded: block.bytes) }
        }
        guard let next = announcementOutbox.withLock({ $0.first?.pts.nanoseconds }) else { return nil }
        return max(next - Self.announcementSendAhead, Monotonic.now() + nanosecondsPerMillisecond)
    }
}

extension OneShotProgram.Failure {
    /// The exit status of a program that failed (0 otherwise).
    var status: Int32 { if case .failed(_, let s) = self { s } else { 0 } }
}
