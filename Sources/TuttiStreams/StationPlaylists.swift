import TuttiAudio
import TuttiCore
import TuttiDecode

/// Station URLs that answer with a playlist (PLS, M3U, ASX, XSPF) instead
/// of audio: the playlist is fetched whole (`DocumentFetch`, at most
/// `StationPlaylist.maxBytes`), its entries are tried in order until one
/// opens (a dead first mirror falls back to the next), and an entry that
/// is itself a playlist is followed, `StationPlaylist.maxDepth` levels at
/// most. An HLS playlist (`.m3u8` with `#EXT-X-` tags) is not a list of
/// stations: it goes to `openHLS`.
///
/// Recognised by the response's Content-Type, then its first bytes
/// (`NetworkSource` reports `StreamError.isPlaylist`), and by a URL's
/// extension before anything is fetched.
///
/// Thread contract: blocks the calling thread (the source's own); any thread.
enum StationPlaylists {
    typealias Opener = (_ url: String) throws(StreamError) -> any AudioDecoder

    /// Opens `url` with `openStream`, resolving station playlists on the way.
    static func open(_ url: String, options: NetworkOptions, log: Logger, depth: Int = 0,
                     openHLS: Opener, openStream: Opener) throws(StreamError) -> any AudioDecoder {
        if let kind = StationPlaylist.kind(url: url) {
            if let decoder = try resolve(url, hint: kind, options: options, log: log, depth: depth, openHLS: openHLS, openStream: openStream) {
                return decoder
            }
            log.info("\(url): named like a playlist, but audio; playing it as a stream")
            return try openStream(url)
        }
        do throws(StreamError) {
            return try openStream(url)
        } catch {
            guard case .isPlaylist(_, let kind) = error else { throw error }
            guard let decoder = try resolve(url, hint: kind, options: options, log: log, depth: depth, openHLS: openHLS, openStream: openStream) else {
                throw .playlist(url: url, reason: "its type says \(kind.rawValue.uppercased()) playlist, but it is not one")
            }
            return decoder
        }
    }

    /// The first stream of the playlist at `url` that opens; nil when what
    /// the URL answers is not a playlist after all (audio, or larger than any playlist).
    private static func resolve(_ url: String, hint: StationPlaylistKind, options: NetworkOptions, log: Logger, depth: Int,
                                openHLS: Opener, openStream: Opener) throws(StreamError) -> (any AudioDecoder)? {
        guard depth < StationPlaylist.maxDepth else {
            throw .playlist(url: url, reason: "playlists nested more than \(StationPlaylist.maxDepth) deep; refused")
        }
        let document: FetchedDocument
        do throws(StreamError) {
            switch try DocumentFetch.fetch(url, options: options, maxBytes: StationPlaylist.maxBytes) {
            case .fetched(let d): document = d
            case .notModified: throw .playlist(url: url, reason: "the server answered 304 to an unconditional request")
            }
        } catch {
            guard case .tooLarge = error else { throw error }
            return nil // larger than any playlist: a stream (a live one has no end)
        }
        let sniffed = StationPlaylist.kind(sniffing: document.body[...]), typed = StationPlaylist.kind(contentType: document.contentType)
        if sniffed == nil, typed == nil, document.contentType?.lowercased().hasPrefix("audio/") == true { return nil }
        let kind = sniffed ?? typed ?? hint
        let entries: [String]
        switch kind {
        case .pls: entries = StationPlaylist.parsePLS(String(decoding: document.body, as: UTF8.self), base: url)
        case .m3u, .hls:
            let text = String(decoding: document.body, as: UTF8.self)
            if kind == .hls || StationPlaylist.isHLS(text) {
                log.info("\(url): an HLS playlist")
                return try openHLS(url)
            }
            entries = StationPlaylist.parseM3U(text, base: url)
        case .asx, .xspf:
            do { entries = try StationPlaylistReader.entries(document.body, kind: kind, base: url) } catch {
                throw .playlist(url: url, reason: "the \(kind.rawValue.uppercased()) playlist is not readable: \(error)")
            }
        }
        guard !entries.isEmpty else { throw .playlist(url: url, reason: "the \(kind.rawValue.uppercased()) playlist lists no http(s) stream") }
        log.info("\(url): a \(kind.rawValue.uppercased()) playlist of \(entries.count) stream\(entries.count == 1 ? "" : "s")")
        var failures: [String] = []
        for entry in entries {
            do throws(StreamError) {
                return try open(entry, options: options, log: log, depth: depth + 1, openHLS: openHLS, openStream: openStream)
            } catch {
                log.warning("\(url): entry \(entry) failed (\(error)); trying the next")
                failures.append(error.description)
            }
        }
        throw .playlist(url: url, reason: "none of its \(entries.count) streams played (\(failures.joined(separator: "; ").prefix(1_000)))")
    }
}

/// The streams an ASX or XSPF playlist lists, read with expat (entities
/// refused, as for feeds): ASX `<ref href>` and `<entryref href>` (any
/// case), XSPF `<track><location>`.
public enum StationPlaylistReader {
    public static func entries(_ bytes: [UInt8], kind: StationPlaylistKind, base: String) throws(FeedError) -> [String] {
        let reader = Reader(kind: kind)
        let parser = ExpatParser(handler: reader, maxBytes: StationPlaylist.maxBytes)
        try bytes.withUnsafeBytes { raw in Result { () throws(FeedError) in try parser.feed(raw) } }.get()
        try parser.finish()
        return Array(reader.found.compactMap { StationPlaylist.resolve(FeedBuilder.trimmed($0), base: base) }.prefix(StationPlaylist.maxEntries))
    }

    private final class Reader: XMLEventHandler {
        let kind: StationPlaylistKind
        var found: [String] = []
        private var inTrack = false
        private var location: [UInt8]?
        init(kind: StationPlaylistKind) { self.kind = kind }

        func start(_ name: String, attributes: [(String, String)]) {
            guard found.count < 4 * StationPlaylist.maxEntries else { return }
            let local = FeedBuilder.split(name).local.lowercased()
            switch (kind, local) {
            case (.asx, "ref"), (.asx, "entryref"):
                if let href = attributes.first(where: { $0.0.lowercased() == "href" })?.1 { found.append(href) }
            case (.xspf, "track"): inTrack = true
            case (.xspf, "location") where inTrack: location = []
            default: break
            }
        }

        func characters(_ bytes: UnsafeRawBufferPointer) {
            if location != nil, location!.count < 4_096 { location!.append(contentsOf: bytes.prefix(4_096 - location!.count)) }
        }

        func end(_ name: String) {
            let local = FeedBuilder.split(name).local.lowercased()
            if local == "location", let text = location {
                found.append(String(decoding: text, as: UTF8.self))
                location = nil
            }
            if local == "track" { inTrack = false }
        }
    }
}
