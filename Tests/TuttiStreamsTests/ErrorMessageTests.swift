import Testing
import TuttiAudio
import TuttiCore
@testable import TuttiStreams

/// Stream, feed and audio errors come from the message catalogue: English as
/// it always read (clients and tests pin it), Korean complete.
@Suite struct ErrorMessageTests {
    /// Words of three or more ASCII letters (with a lowercase one) left in
    /// `text` once the `data` put in (URLs, paths, reasons from libcurl,
    /// expat or FFmpeg) and the `syntax` it names are taken out: English a
    /// translation forgot. ROOM, HTTP, MP3: names, not words.
    static func leftoverEnglish(_ text: String, data: [String]) -> [String] {
        var plain = text
        for value in data.sorted(by: { $0.count > $1.count }) where !value.isEmpty { plain = plain.replacing(value, with: " ") }
        var words: [String] = [], word = ""
        for c in plain + " " {
            if c.isASCII && (c.isLetter || c.isNumber || c == "-") { word.append(c); continue }
            if !word.isEmpty { words.append(word); word = "" }
        }
        return words.filter { w in
            var run = 0, longest = 0
            for c in w { run = c.isASCII && c.isLetter ? run + 1 : 0; longest = max(longest, run) }
            return longest >= 3 && w.contains { $0.isLowercase } && !w.hasPrefix("--") && !syntax.contains(w)
        }
    }

    /// Units, names and what is typed as it is (a setting, a URL scheme, an XML element).
    static let syntax: Set<String> = ["MiB", "Tutti", "http", "https", "Content-Length", "local-streams", "yes", "tutti", "conf", "leader",
                                      "rss", "feed", "Atom", "line-in"]

    static let url = "http://radio.example/live"
    static let loopback = StreamDestinationRefusal(address: IPAddress(bytes: [127, 0, 0, 1])!, scope: .loopback, fixable: true)
    static let metadata = StreamDestinationRefusal(address: IPAddress(bytes: [169, 254, 169, 254])!, scope: .linkLocal, fixable: false)
    static let home = StreamDestinationRefusal(address: IPAddress(bytes: [192, 168, 1, 20])!, scope: .privateNetwork, fixable: true)

    /// Every case, with the English each said before the catalogue, and its data.
    static let cases: [(message: UserMessage, english: String, data: [String])] = [
        (StreamError.unsupportedURL("ftp://x/a").message, "unsupported source 'ftp://x/a': expected an http:// or https:// URL or a local path", ["ftp://x/a"]),
        (StreamError.httpStatus(url: url, status: 404).message, "\(url): the server answered HTTP 404 (not found)", [url]),
        (StreamError.httpStatus(url: url, status: 403).message, "\(url): the server answered HTTP 403 (access denied)", [url]),
        (StreamError.httpStatus(url: url, status: 416).message, "\(url): the server answered HTTP 416 (range not satisfiable)", [url]),
        (StreamError.httpStatus(url: url, status: 503).message, "\(url): the server answered HTTP 503 (server error)", [url]),
        (StreamError.httpStatus(url: url, status: 418).message, "\(url): the server answered HTTP 418", [url]),
        (StreamError.network(url: url, reason: "Could not resolve host: radio.example").message, "\(url): Could not resolve host: radio.example",
         [url, "Could not resolve host: radio.example"]),
        (StreamError.timedOut(url: url, seconds: 10, waitingFor: .responseHeaders).message,
         "\(url): nothing received for 10 s while waiting for the response headers", [url]),
        (StreamError.timedOut(url: url, seconds: 2.5, waitingFor: .audioData).message, "\(url): nothing received for 2.5 s while waiting for audio data", [url]),
        (StreamError.timedOut(url: url, seconds: 30, waitingFor: .audioAfterReconnect).message,
         "\(url): nothing received for 30 s while waiting for audio (reconnecting)", [url]),
        (StreamError.truncated(url: url, received: 1_000, expected: 4_096).message, "\(url): the connection ended after 1000 of 4096 bytes", [url]),
        (StreamError.overran(url: url, declared: 512).message,
         "\(url): the server sent more than the 512 bytes it declared (Content-Length); nothing was kept", [url]),
        (StreamError.refused(url: url, loopback).message,
         "\(url): refused to fetch from 127.0.0.1: it is this machine (the leader's own address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network",
         [url]),
        (StreamError.refused(url: url, metadata).message,
         "\(url): refused to fetch from 169.254.169.254: it is a link-local address (cloud metadata and the like), never a stream the leader plays", [url]),
        (StreamError.undecodable(url: url, reason: "no MPEG audio frame in 0 bytes").message, "\(url): not decodable as MP3: no MPEG audio frame in 0 bytes",
         [url, "no MPEG audio frame in 0 bytes"]),
        (StreamError.notSeekable(url: url, reason: "it is a live stream").message, "\(url): cannot seek: it is a live stream", [url, "it is a live stream"]),
        (StreamError.tooLarge(url: url, limit: 8 << 20).message, "\(url): larger than the 8 MiB Tutti reads; refused", [url]),
        (StreamError.tooLarge(url: url, limit: 1_000).message, "\(url): larger than the 1000 bytes Tutti reads; refused", [url]),
        (StreamError.isPlaylist(url: url, kind: .pls).message, "\(url): a station playlist (PLS), not audio", [url]),
        (StreamError.playlist(url: url, reason: "the PLS playlist lists no http(s) stream").message, "\(url): the PLS playlist lists no http(s) stream",
         [url, "the PLS playlist lists no http(s) stream"]),
        (StreamError.cache(operation: "write", path: "/var/cache/t/a.part", reason: "No space left on device").message,
         "cache: write /var/cache/t/a.part: No space left on device", ["/var/cache/t/a.part", "No space left on device"]),
        (StreamError.cache(operation: "fsync", path: "/var/cache/t/a.part", reason: "Input/output error").message,
         "cache: fsync /var/cache/t/a.part: Input/output error", ["/var/cache/t/a.part", "Input/output error", "fsync"]),
        (StreamError.liveNotCacheable(url: url).message, "cache: add \(url): a live stream (no Content-Length) cannot be cached", [url]),
        (StreamError.largerThanCache(url: url, size: 2_000, capacity: 1_000).message,
         "cache: add \(url): the file (2000 bytes) is larger than the cache (1000 bytes)", [url]),
        (StreamError.audio(.cannotOpen(path: "/music/a.flac", reason: "Permission denied")).message, "cannot open /music/a.flac: Permission denied",
         ["/music/a.flac", "Permission denied"]),
        (loopback.message,
         "refused to fetch from 127.0.0.1: it is this machine (the leader's own address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network",
         []),
        (home.message,
         "refused to fetch from 192.168.1.20: it is the local network (a private address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network",
         []),
        (StreamDestinationRefusal(address: IPAddress(bytes: [0, 0, 0, 0])!, scope: .unspecified, fixable: false).message,
         "refused to fetch from 0.0.0.0: it is an unspecified address, never a stream the leader plays", []),
        (StreamDestinationRefusal(address: IPAddress(bytes: [239, 1, 1, 1])!, scope: .multicast, fixable: false).message,
         "refused to fetch from 239.1.1.1: it is a multicast address, never a stream the leader plays", []),
        (StreamDestinationRefusal(address: IPAddress(bytes: [250, 1, 1, 1])!, scope: .reserved, fixable: false).message,
         "refused to fetch from 250.1.1.1: it is a reserved address, never a stream the leader plays", []),
        (StreamDestinationRefusal(address: IPAddress(bytes: [8, 8, 8, 8])!, scope: .publicInternet, fixable: false).message,
         "refused to fetch from 8.8.8.8: it is the internet, never a stream the leader plays", []),
        (StreamDestinationRefusal(address: IPAddress(bytes: [127, 0, 0, 1])!, scope: .loopback, fixable: true, host: "localhost").message,
         "refused to fetch from localhost: it is this machine (the leader's own address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network",
         ["localhost"]),
        (PathConfinementError(path: "/etc/passwd").message,
         "/etc/passwd is outside the music folder, the cache and the playlist folder: a client may only name files there", ["/etc/passwd"]),
        (PathConfinementError(path: "http://10.0.0.2/x", refusal: StreamDestinationRefusal(address: IPAddress(bytes: [10, 0, 0, 2])!, scope: .privateNetwork,
                                                                                          fixable: true)).message,
         "http://10.0.0.2/x: refused to fetch from 10.0.0.2: it is the local network (a private address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network",
         ["http://10.0.0.2/x"]),
        (PathConfinementError(path: "line-in:hw:1", notLineInput: "hw:1").message,
         "line-in:hw:1: hw:1 is not a line input of this leader: name it in tutti.conf [leader] as line-in = hw:1 (or --line-in hw:1)", ["line-in:hw:1", "hw:1"]),
        (FeedError.notXML(reason: "not well-formed (invalid token)", line: 1, column: 0).message,
         "not an XML feed: not well-formed (invalid token) at line 1, column 0", ["not well-formed (invalid token)"]),
        (FeedError.tooLarge(limit: 8 << 20).message, "the feed is larger than 8 MiB; refused", []),
        (FeedError.entityDeclaration.message, "the feed declares XML entities (a DOCTYPE with <!ENTITY>), which Tutti refuses", []),
        (FeedError.notAFeed(root: "html").message, "not a podcast feed: the document is <html>, not RSS <rss> or Atom <feed>", ["<html>"]),
        (FeedError.noEpisodes(items: 0).message, "the feed has no episodes", []),
        (FeedError.noEpisodes(items: 2).message, "none of the feed's 2 items has an audio enclosure", []),
        (FeedError.tooDeep.message, "the feed nests elements deeper than 64 levels", []),
        (AudioError.cannotOpen(path: "/music/a.flac", reason: "Invalid data found when processing input").message,
         "cannot open /music/a.flac: Invalid data found when processing input", ["/music/a.flac", "Invalid data found when processing input"]),
        (AudioError.undecodable(path: "/music/b.mp3", reason: "Invalid data found when processing input").message,
         "cannot decode /music/b.mp3: Invalid data found when processing input", ["/music/b.mp3", "Invalid data found when processing input"]),
        (AudioError.device(name: "hw:0", operation: "snd_pcm_open", reason: "Device or resource busy").message,
         "audio device hw:0: snd_pcm_open failed: Device or resource busy", ["hw:0", "snd_pcm_open", "Device or resource busy"]),
        (AudioError.codec(operation: "opus_encode", reason: "invalid argument").message, "codec opus_encode failed: invalid argument",
         ["opus_encode", "invalid argument"]),
        (AudioError.resampler(reason: "soxr_process: bad rate").message, "resampler: soxr_process: bad rate", ["soxr_process: bad rate"]),
        (AudioError.badOutput(spec: "alsa:foo", reason: "no such device").message, "output 'alsa:foo': no such device", ["alsa:foo", "no such device"]),
        // Announcements (TuttiCore's `AnnouncementError`): JSON keys, names and what espeak-ng or a decoder said are data.
        (AnnouncementError.noRooms.message, #"an announcement needs "rooms" (room names), "group" or "all""#, ["rooms", "group", "all"]),
        (AnnouncementError.badURL("ftp:/x").message,
         "'ftp:/x' is not a URL or file the leader can play (give a path or an http(s) URL, at most 4096 bytes)", ["ftp:/x"]),
        (AnnouncementError.emptyText.message, "the announcement's text is empty", []),
        (AnnouncementError.textTooLong(bytes: 5000).message, "the announcement's text is 5000 bytes; at most \(AnnouncementRequest.maximumTextBytes)", []),
        (AnnouncementError.badLanguage("xx").message,
         "'xx' is not an espeak-ng voice name (e.g. en, en-us, ko, de; `espeak-ng --voices` lists them)", ["xx", "espeak-ng"]),
        (AnnouncementError.badVolume(1.5).message, "volume 1.5 is outside 0…1", []),
        (AnnouncementError.badDuck(-70).message, "duck_db -70.0 is outside −60…0 dB", ["duck_db"]),
        (AnnouncementError.nobodyListening(rooms: ["kitchen", "den"]).message, "no speaker is connected in kitchen, den: nobody would hear it", ["kitchen", "den"]),
        (AnnouncementError.nobodyListening(rooms: []).message, "no speaker is connected in any room: nobody would hear it", []),
        (AnnouncementError.speakersCannotAnnounce(["study (protocol v8)"]).message,
         "these speakers cannot play announcements: study (protocol v8) (protocol v\(WireProtocol.overlayVersion) needed: update their tutti; Snapcast clients, browsers and Sendspin players cannot mix one)",
         ["study (protocol v8)", "Snapcast", "Sendspin"]),
        (AnnouncementError.undecodable("x.ogg: bad").message, "cannot play the announcement: x.ogg: bad", ["x.ogg: bad"]),
        (AnnouncementError.tooLong(seconds: 75.4).message, "the announcement lasts 75 s; at most \(AnnouncementRequest.maximumSeconds) s", []),
        (AnnouncementError.speech("espeak-ng not found").message, "cannot speak the text: espeak-ng not found", ["espeak-ng not found"]),
        (AnnouncementError.busy(seconds: 61).message, "announcements already fill the next 61 s: try again later", []),
    ]

    @Test func englishIsWhatEachErrorAlwaysSaid() {
        for c in Self.cases { #expect(c.message.description == c.english) }
        // `description` is the message's English: logs and older clients read the same.
        #expect(StreamError.httpStatus(url: Self.url, status: 404).description == "\(Self.url): the server answered HTTP 404 (not found)")
        #expect(FeedError.tooDeep.description == "the feed nests elements deeper than 64 levels")
        #expect(AudioError.resampler(reason: "x").description == "resampler: x")
        #expect(Self.loopback.description == Self.loopback.message.description)
        #expect(PathConfinementError(path: "/etc/passwd").description.hasSuffix("a client may only name files there"))
        // A local file's failure reads as `AudioError` says it.
        #expect(StreamError.audio(.undecodable(path: "/m/x.ogg", reason: "r")).description == "cannot decode /m/x.ogg: r")
    }

    @Test func koreanLeavesNoEnglishButTheData() {
        for c in Self.cases {
            let korean = c.message.text(in: .korean)
            #expect(korean.unicodeScalars.contains { (0xAC00...0xD7A3).contains($0.value) }, "\(c.message.key.rawValue): \(korean)")
            #expect(Self.leftoverEnglish(korean, data: c.data).isEmpty, "\(c.message.key.rawValue): \(Self.leftoverEnglish(korean, data: c.data)) in \(korean)")
            // The check would catch this case left in English (unless its English is only data: "{url}: {reason}";
            // then the Hangul above is what tells).
            let template = c.message.key.template(.english)
            let onlyData = Self.leftoverEnglish(template, data: MessageCatalogue.placeholders(template).map { "{\($0)}" }).isEmpty
            #expect(onlyData || !Self.leftoverEnglish(c.english, data: c.data).isEmpty, "\(c.message.key.rawValue): the English has no word the check sees")
            for value in c.data {
                #expect(korean.contains(value), "\(c.message.key.rawValue): \(value) is data, kept as it is: \(korean)")
            }
        }
        #expect(StreamError.httpStatus(url: Self.url, status: 404).message.text(in: .korean)
                == "\(Self.url): 서버가 HTTP 404 응답을 보냈습니다 (찾을 수 없음)")
        #expect(FeedError.notAFeed(root: "html").message.text(in: .korean) == "팟캐스트 피드가 아닙니다: 문서가 <html>입니다. RSS <rss>나 Atom <feed>여야 합니다")
    }

    /// A message put inside another is said in the same language.
    @Test func anInnerMessageIsInTheLanguageOfTheWhole() {
        let refused = StreamError.refused(url: Self.url, Self.metadata).message
        #expect(refused.text(in: .korean)
                == "\(Self.url): 169.254.169.254에서 가져오기를 거부했습니다: 링크 로컬 주소(클라우드 메타데이터 등)입니다. 리더는 이런 곳의 스트림을 재생하지 않습니다")
        // An operation the catalogue has no word for (a system call's name) is put in as it is.
        #expect(StreamError.cache(operation: "sync", path: "/p", reason: "r").message.text(in: .korean) == "캐시: /p sync 실패: r")
    }
}
