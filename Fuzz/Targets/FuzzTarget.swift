import Glibc
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiGestures
import TuttiDecode
import TuttiLeader
import TuttiJSONRPC
import TuttiMPD
import TuttiFollower
import TuttiLibrary
import TuttiStreams

/// One parser that reads outside input, as a fuzz target: bytes in, the
/// real module's parser called exactly as the daemon calls it. Nothing here
/// parses; a target only feeds the parser (in pieces, as a socket delivers)
/// and checks what must hold whatever the input (round trips, bounds). A
/// broken check is a `precondition`, so libFuzzer records it as a crash.
/// The `-exec` targets go further: the requests are run by a playing
/// leader (`CommandExecution`).
///
/// `tutti-fuzz` (Fuzz/Driver, built by scripts/fuzz.sh) runs one under
/// libFuzzer; `TuttiFuzzTests` runs the committed seeds (Fuzz/corpus/) in CI.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case wire, snapcast, jsonrpc, mpd
    case httpHead = "http-head", icy
    case id3, flac, wav, m3u, buttons, config, feed
    case stationPlaylist = "station-playlist", hls
    /// shairport-sync's metadata pipe, as the leader reads it from each AirPlay receiver.
    case airplayMetadata = "airplay-metadata"
    /// Command execution: requests run by a playing leader (`CommandExecution`).
    case mpdExec = "mpd-exec", jsonrpcExec = "jsonrpc-exec", snapcastExec = "snapcast-exec"
    /// A Sendspin connection's security: the first message, Noise message 2, and fragment reassembly.
    case sendspinNoise = "sendspin-noise"
    /// A Sendspin server's FLAC as a Tutti speaker decodes it: `codec_header`, then one frame a chunk, into libFLAC.
    case sendspinFLAC = "sendspin-flac"
    /// What a listening Tutti speaker reads from whoever dials it: the WebSocket opening request, then client frames.
    case sendspinListen = "sendspin-listen"

    /// Runs one input. Returns normally for every input the parser handles
    /// (accepting or refusing it); traps on a bug.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .wire: Self.wire(bytes)
        case .snapcast: Self.snapcast(bytes)
        case .jsonrpc: Self.jsonrpc(bytes)
        case .mpd: Self.mpd(bytes)
        case .httpHead: Self.httpHead(bytes)
        case .icy: Self.icy(bytes)
        case .id3: Self.file(bytes, format: .mp3)
        case .flac: Self.file(bytes, format: .flac)
        case .wav: Self.wav(bytes)
        case .m3u: Self.m3u(bytes)
        case .buttons: _ = try? ButtonMapping.parse(String(decoding: bytes, as: UTF8.self))
        case .config: Self.config(bytes)
        case .feed: Self.feed(bytes)
        case .stationPlaylist: Self.stationPlaylist(bytes)
        case .hls: Self.hls(bytes)
        case .airplayMetadata: Self.airplayMetadata(bytes)
        case .mpdExec: CommandExecution.mpd(bytes)
        case .jsonrpcExec: CommandExecution.jsonrpc(bytes)
        case .snapcastExec: CommandExecution.snapcast(bytes)
        case .sendspinNoise: Self.sendspinNoise(bytes)
        case .sendspinFLAC: Self.sendspinFLAC(bytes)
        case .sendspinListen: Self.sendspinListen(bytes)
        }
    }

    /// The input cut into the pieces a socket might deliver: the first byte
    /// picks the piece size (1–64 bytes, or all at once), so the fuzzer
    /// also explores how a framer resumes mid-message.
    static func pieces(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        guard let first = bytes.first else { return [] }
        let rest = bytes.dropFirst()
        let size = first >= 192 ? max(rest.count, 1) : Int(first % 64) + 1
        return stride(from: rest.startIndex, to: rest.endIndex, by: size).map { rest[$0..<min($0 + size, rest.endIndex)] }
    }

    // MARK: - Network protocols

    static let sendspinCrypto = NoisePrimitives()
    static let sendspinServer = NoiseKeyPair(secret: [UInt8](repeating: 5, count: 32), crypto: sendspinCrypto)

    /// Sendspin's security layer: records `[kind][length, 2 bytes][bytes]`; kind bit 0 a binary
    /// message, bit 1 a decrypted plaintext for the reassembler (the transport reader past the
    /// AEAD, which random bytes never pass) instead of a WebSocket message for the server channel.
    /// Whatever comes in: at most one close, nothing after it, no message over the bound.
    static func sendspinNoise(_ bytes: [UInt8]) {
        let limit = 100_000
        var channel = SendspinServerChannel(identity: sendspinServer, crypto: sendspinCrypto,
                                            configuration: .init(allowPlain: bytes.first.map { $0 & 4 != 0 } ?? false, maxMessageBytes: limit)) { _ in .stranger }
        var reassembler = SendspinReassembler(limit: limit)
        var closed = false
        var at = 0
        while at + 3 <= bytes.count {
            let kind = bytes[at], n = Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            let record = Array(bytes[(at + 3)..<min(bytes.count, at + 3 + n)])
            at += 3 + n
            if kind & 2 != 0 {
                if case .message(let m) = reassembler.accept(record) { precondition(!m.isEmpty && m.count <= limit) }
                precondition(reassembler.inFlight <= limit)
                continue
            }
            let events = channel.received(binary: kind & 1 != 0, bytes: record)
            precondition(!closed || events.isEmpty, "events after a close")
            for e in events {
                if case .close = e { closed = true }
                if case .sendRaw(_, let raw) = e { precondition(raw.count <= 65_535 * 2) }
            }
        }
    }

    /// A Sendspin FLAC stream as the speaker meets it: `[length, 2 bytes][codec_header]`, then
    /// chunks `[length, 2 bytes][frame]`, each through `FLACChunkDecoder` (libFLAC) into a
    /// buffer of a Tutti chunk's size. Whatever comes in: an error or a frame that fits, every
    /// sample a finite value in [−1, 1].
    static func sendspinFLAC(_ bytes: [UInt8]) {
        func record(at i: inout Int) -> [UInt8]? {
            guard i + 2 <= bytes.count else { return nil }
            let n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            defer { i = min(bytes.count, i + 2 + n) }
            return Array(bytes[(i + 2)..<min(bytes.count, i + 2 + n)])
        }
        var at = 0
        guard let header = record(at: &at), let decoder = try? FLACChunkDecoder(header: header) else { return }
        let flacOutput = UnsafeMutablePointer<Float>.allocate(capacity: 2 * WireProtocol.maxChunkFrames)
        defer { flacOutput.deallocate() }
        while let chunk = record(at: &at) {
            guard let n = try? decoder.decode(chunk, frames: CodecFrames.flacSamples(chunk) ?? 0, into: flacOutput,
                                               maxFrames: WireProtocol.maxChunkFrames) else { continue }
            precondition(n >= 0 && n <= WireProtocol.maxChunkFrames, "\(n) frames into a chunk of \(WireProtocol.maxChunkFrames)")
            for i in 0..<(2 * n) { precondition(flacOutput[i].isFinite && abs(flacOutput[i]) <= 1, "sample \(flacOutput[i])") }
        }
    }

    /// A listening speaker's socket, in the pieces a peer sends: the opening request
    /// (`WebSocketUpgrade.request`, as `SendspinSocket` accumulates it), then masked client
    /// frames (`WebSocketFrameReader(fromClient: true)`). Whatever comes in: a refusal with
    /// an HTTP status, or a 16-byte key; the request never held past its bound; frames
    /// read to an error or to messages within the bound, never more bytes held than the bound.
    static func sendspinListen(_ bytes: [UInt8]) {
        let limit = 65_536
        var request: [UInt8] = []
        var reader = WebSocketFrameReader(maximumMessageBytes: limit, fromClient: true)
        var opened = false
        for piece in pieces(bytes) {
            if !opened {
                request += piece
                let result: (key: [UInt8], rest: [UInt8])?
                do { result = try WebSocketUpgrade.request(request, path: "/sendspin") } catch {
                    precondition([400, 404, 405, 426, 431].contains(error.status), "status \(error.status)")
                    precondition(!WebSocketUpgrade.refusal(error).isEmpty)
                    return
                }
                guard let (key, rest) = result else {
                    precondition(request.count <= WebSocketUpgrade.maximumRequestBytes, "\(request.count) bytes held before the request ended")
                    continue
                }
                precondition(key.count == 16)
                opened = true
                reader.append(rest)
            } else {
                reader.append(Array(piece))
            }
            while true {
                let message: WebSocketMessage?
                do { message = try reader.next() } catch { return }
                guard let message else { break }
                if case .binary(let m) = message { precondition(m.count <= limit) }
                if case .text(let m) = message { precondition(m.count <= limit) }
            }
            precondition(reader.pendingBytes <= limit + 14 + 65_536, "\(reader.pendingBytes) bytes held")
        }
    }

    /// Leader ↔ follower frames: every message decoded re-encodes to one that decodes the same.
    static func wire(_ bytes: [UInt8]) {
        var framer = MessageFramer()
        for piece in pieces(bytes) {
            framer.append(piece)
            while true {
                let message: Message?
                do { message = try framer.next() } catch { return } // the connection is closed
                guard let message else { break }
                let again = message.encoded()
                precondition(again.count <= 4 + WireProtocol.maxMessageBytes, "re-encoded \(message.type) exceeds the frame limit")
                precondition((try? Message.decode(body: again[4...])) == message, "\(message.type) does not survive a round trip")
            }
            precondition(framer.pendingBytes <= WireProtocol.maxMessageBytes + 4 + piece.count, "the framer holds \(framer.pendingBytes) bytes")
        }
    }

    /// Snapcast's binary protocol from a client: bounded buffering, and round trips.
    static func snapcast(_ bytes: [UInt8]) {
        var framer = SnapcastFramer()
        for piece in pieces(bytes) {
            framer.append(piece)
            while true {
                let next: (header: SnapcastHeader, message: SnapcastMessage?)?
                do { next = try framer.next() } catch { return }
                guard let next else { break }
                guard let message = next.message else { continue }
                var again = SnapcastFramer(limit: Int.max)
                again.append(message.encoded(id: next.header.id, refersTo: next.header.refersTo, sent: next.header.sent, received: next.header.received))
                precondition((try? again.next())??.message == message, "\(message.type) does not survive a round trip")
            }
            precondition(framer.pendingBytes <= SnapcastProtocol.maximumClientMessageBytes + SnapcastProtocol.headerBytes + piece.count,
                         "the framer holds \(framer.pendingBytes) bytes")
        }
    }

    /// A JSON-RPC line as ControlServer reads it.
    static func jsonrpc(_ bytes: [UInt8]) {
        guard bytes.count <= ControlServer.maxLineBytes else { return } // longer lines are discarded unread
        switch JSONRPCRequest.parse(bytes) {
        case .request: break
        case .invalid(_, let code, _): precondition((-32700 ... -32600).contains(code), "error code \(code)")
        }
    }

    /// MPD: lines as the server cuts them, through the session state
    /// machine; every command re-quotes to itself; filters of search commands.
    static func mpd(_ bytes: [UInt8]) {
        var splitter = MPDLineSplitter(maxLineBytes: MPDServer.maxLineBytes)
        var session = MPDSessionState()
        for piece in pieces(bytes) {
            for line in splitter.feed(piece) {
                precondition(line.count <= MPDServer.maxLineBytes)
                guard case .run(let commands, _, _) = session.receive(line: line) else { continue }
                for command in commands {
                    let quoted = ([command.name] + command.arguments.map(MPDTokenizer.quote)).joined(separator: " ")
                    precondition((try? MPDTokenizer.tokenize(Array(quoted.utf8))) == command, "'\(command.name)' does not re-quote to itself")
                    switch command.name {
                    case "find", "search", "count", "findadd", "searchadd", "list", "playlistfind", "playlistsearch":
                        _ = try? MPDFilter.parse(command.name == "list" ? Array(command.arguments.dropFirst()) : command.arguments,
                                                 exact: command.name.hasPrefix("find") || command.name == "count" || command.name == "playlistfind")
                    default: break
                    }
                }
            }
            if splitter.overflow { return }
        }
    }

    /// An HTTP response head (status line and headers) as the stream client reads it.
    static func httpHead(_ bytes: [UInt8]) {
        var reader = HeadReader()
        for piece in pieces(bytes) where !reader.done {
            do { _ = try piece.withUnsafeBytes { try reader.feed($0) } } catch { return }
        }
        precondition(reader.lines.count <= ResponseHead.maxHeaders + 1)
        guard reader.done, let head = try? ResponseHead.parse(lines: reader.lines) else { return }
        precondition((100...599).contains(head.status))
        if let length = head.contentLength { precondition(length >= 0, "a Content-Length of \(length) bytes is accepted") }
        _ = StreamMetadata(headers: head.headers)
        _ = ICYText.metaint(head.headers)
    }

    /// ICY metadata: the first two bytes are the metaint (1–65,536), the
    /// rest is the stream; audio and metadata add up to what came in.
    static func icy(_ bytes: [UInt8]) {
        guard bytes.count >= 3 else { return }
        let metaint = (Int(bytes[0]) << 8 | Int(bytes[1])) + 1
        var demuxer = ICYDemuxer(metaint: metaint)
        var metadata = StreamMetadata()
        var accounted = 0
        for piece in pieces(Array(bytes.dropFirst(2))) {
            piece.withUnsafeBytes { raw in
                demuxer.process(raw, audio: { accounted += $0.count }) { block in
                    precondition(block.count <= ICYDemuxer.maxBlock)
                    accounted += block.count
                    ICYText.apply(block, to: &metadata)
                }
            }
        }
        precondition(accounted <= bytes.count)
    }

    /// AirPlay metadata items, in pieces, into a session: data within its
    /// bound, what the reader holds bounded, the session's actions sane.
    static func airplayMetadata(_ bytes: [UInt8]) {
        var reader = AirPlayMetadataReader(maximumDataBytes: 64 << 10)
        var session = AirPlaySession(releaseGrace: 1_000)
        var now: Int64 = 0
        for piece in pieces(bytes) {
            for item in reader.feed(piece) {
                precondition(item.data.count <= 64 << 10 && item.type.utf8.count == 4 && item.code.utf8.count == 4)
                for action in session.handle(item, now: now) where action == .takeOver { precondition(session.holding) }
            }
            now += 500
            _ = session.tick(now: now)
            if let remote = session.nowPlaying.remote {
                precondition(remote.activeRemote.utf8.allSatisfy { (48...57).contains($0) } && (1...65_535).contains(remote.port))
                precondition(!remote.address.contains("/") && !remote.address.contains(" "))
            }
        }
        _ = session.receiverGone()
    }

    // MARK: - Files

    /// Where an input becomes a file for the C tag readers (libmpg123,
    /// libFLAC), which read paths: tmpfs when there is one.
    static let scratchPath: String = {
        var st = stat()
        let dir = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp"
        return "\(dir)/tutti-fuzz-\(getpid())"
    }()

    static func withFile(_ bytes: [UInt8], suffix: String, _ body: (String) -> Void) {
        let path = scratchPath + suffix
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "cannot create \(path)")
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            precondition(n > 0, "cannot write \(path)")
            written += n
        }
        close(fd)
        body(path)
        unlink(path)
    }

    /// ID3v2 (MP3) or FLAC tags and length, as the scanner reads a file.
    static func file(_ bytes: [UInt8], format: AudioFormatKind) {
        withFile(bytes, suffix: "." + format.rawValue) { path in
            guard case .success(let tags) = AudioFileTags.read(path: path, format: format) else { return }
            precondition(tags.durationFrames > 0 && tags.sampleRate > 0)
            precondition(tags.pictureBytes <= bytes.count)
        }
    }

    /// WAV: the header parser, the sample conversion of what it promises,
    /// and the scanner's RIFF INFO tags.
    static func wav(_ bytes: [UInt8]) {
        if let format = try? WAVParser.parse(header: Array(bytes.prefix(65_536)), fileSize: bytes.count) {
            precondition(format.dataOffset >= 0 && format.dataLength >= 0)
            precondition(format.dataOffset + format.dataLength <= bytes.count, "data runs past the file")
            precondition(format.dataLength % format.bytesPerFrame == 0)
            var out: [Float] = []
            bytes[format.dataOffset..<(format.dataOffset + format.dataLength)].withUnsafeBytes {
                WAVParser.appendStereoFloats(from: $0, format: format, to: &out)
            }
            precondition(out.count == format.frameCount * 2)
        }
        _ = AudioFileTags.wavInfo(bytes)
        withFile(bytes, suffix: ".wav") { path in _ = AudioFileTags.read(path: path, format: .wav) }
    }

    /// M3U: items, their paths resolved against a playlist folder, and back to relative paths.
    static func m3u(_ bytes: [UInt8]) {
        let base = "/srv/music/playlists"
        for item in M3U.parse(bytes: bytes) {
            guard let path = M3U.resolve(item.location, baseDirectory: base) else { continue }
            precondition(path.hasPrefix("/") && M3U.normalize(path) == path, "'\(path)' is not normalised")
            let relative = M3U.relativePath(from: base, to: path)
            precondition(M3U.resolve(relative, baseDirectory: base) == path || path == "/", "'\(relative)' does not lead back to '\(path)'")
        }
    }

    /// A podcast feed, whole (as `PodcastService` parses what `DocumentFetch`
    /// read): whatever it says, what comes out is bounded.
    static func feed(_ bytes: [UInt8]) {
        guard let feed = try? FeedParser.parse(bytes) else { return }
        precondition(!feed.episodes.isEmpty && feed.episodes.count <= FeedLimits.maxEpisodes)
        precondition(feed.title.utf8.count <= FeedLimits.maxTitleBytes && !feed.title.isEmpty)
        precondition((feed.description?.utf8.count ?? 0) <= FeedLimits.maxDescriptionBytes)
        for e in feed.episodes {
            let scheme = e.url.prefix(8).lowercased()
            precondition(scheme.hasPrefix("http://") || scheme.hasPrefix("https://"), "enclosure \(e.url) is not http(s)")
            precondition(e.url.utf8.count <= FeedLimits.maxURLBytes && e.guid.utf8.count <= FeedLimits.maxURLBytes && !e.guid.isEmpty)
            precondition(e.title.utf8.count <= FeedLimits.maxTitleBytes && !e.title.isEmpty)
            precondition((e.description?.utf8.count ?? 0) <= FeedLimits.maxDescriptionBytes)
            precondition(e.durationSeconds.map { $0 >= 0 && $0.isFinite } ?? true)
            precondition(e.length.map { $0 > 0 } ?? true)
        }
    }

    /// What a station URL answered, read as each kind of playlist (as
    /// `StationPlaylists` reads one): at most `maxEntries` absolute http(s) URLs.
    static func stationPlaylist(_ bytes: [UInt8]) {
        let base = "http://radio.example/dir/station"
        _ = StationPlaylist.kind(sniffing: bytes[...])
        let text = String(decoding: bytes, as: UTF8.self)
        _ = StationPlaylist.isHLS(text)
        var lists = [StationPlaylist.parsePLS(text, base: base), StationPlaylist.parseM3U(text, base: base)]
        for kind in [StationPlaylistKind.asx, .xspf] { if let l = try? StationPlaylistReader.entries(bytes, kind: kind, base: base) { lists.append(l) } }
        for list in lists {
            precondition(list.count <= StationPlaylist.maxEntries)
            for url in list {
                let scheme = url.prefix(8).lowercased()
                precondition(scheme.hasPrefix("http://") || scheme.hasPrefix("https://"), "entry \(url) is not http(s)")
            }
        }
    }

    /// An HLS playlist as `HLSSource` reads one, then the session run over
    /// it twice (a reload): bounded, absolute http(s) URLs only, and each
    /// segment fetched at most once, in media-sequence order. The bytes are
    /// also read as a packed-audio segment's ID3 tag.
    static func hls(_ bytes: [UInt8]) {
        let base = "http://radio.example/live/index.m3u8"
        // The same bytes as a packed-audio segment's ID3 tag: never longer than what it claims, text bounded.
        if let tag = HLSTimedMetadata.read(bytes[...]) {
            precondition(tag.length >= 10)
            precondition((tag.title?.utf8.count ?? 0) <= 3 * 4_096 && (tag.artist?.utf8.count ?? 0) <= 3 * 4_096)
        }
        guard let playlist = try? HLSPlaylist.parse(String(decoding: bytes, as: UTF8.self), url: base) else { return }
        func isHTTP(_ url: String) -> Bool { let s = url.prefix(8).lowercased(); return s.hasPrefix("http://") || s.hasPrefix("https://") }
        switch playlist {
        case .multivariant(let variants):
            precondition(!variants.isEmpty && variants.count <= HLSPlaylist.maxVariants)
            if let chosen = HLSVariant.choose(variants) { precondition(isHTTP(chosen)) }
        case .media(let media):
            precondition(media.segments.count <= HLSPlaylist.maxSegments)
            precondition(media.segments.allSatisfy { isHTTP($0.url) } && (media.initSection.map(isHTTP) ?? true))
            var session = HLSSession()
            var last = Int.min, steps = 0
            for now in [0.0, 1_000.0] {
                session.update(media, now: now)
                while case .fetch(let segment, _) = session.step(now: now) {
                    precondition(segment.sequence > last, "segment \(segment.sequence) after \(last)")
                    last = segment.sequence
                    steps += 1
                    precondition(steps <= media.segments.count)
                }
            }
        }
    }

    /// tutti.conf: the file, then each daemon's own reading of its section.
    static func config(_ bytes: [UInt8]) {
        guard let file = try? ConfigFile.parse(String(decoding: bytes, as: UTF8.self), path: "tutti.conf") else { return }
        _ = try? LeaderConfiguration.parse([], file: file, hostname: "fuzz")
        _ = try? FollowerConfiguration.parse([], file: file, hostname: "fuzz")
    }
}
