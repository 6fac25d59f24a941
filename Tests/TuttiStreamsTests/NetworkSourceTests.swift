import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
@testable import TuttiStreams
import TuttiTestSupport

@Suite struct NetworkSourceTests {
    @Test func finiteFileDecodesExactlyLikeTheFileOnDisk() throws {
        let server = try TestServer()
        let source = try NetworkSource(url: server.url("/file.mp3"), options: testOptions())
        #expect(source.sampleRate == 44_100)
        #expect(!source.isLive)
        #expect(source.contentLength == Int64(fixtureBytes.count))
        let reference = try MP3Decoder(path: fixtureMP3)
        #expect(source.frameCount == reference.frameCount)
        let decoded = try decodeAll(source)
        #expect(decoded.count == fixtureSamples.count)
        #expect(maxAbsDifference(decoded, fixtureSamples) < 1e-6)
        #expect(source.statistics.reconnectAttempts == 0)
    }

    /// A tiny buffer: the transfer pauses when it is full and resumes with
    /// a Range request (or, when the server ignores Range, re-reads and skips).
    @Test(arguments: ["/file.mp3", "/norange.mp3"])
    func boundedBufferPausesAndResumesWithoutLosingBytes(path: String) throws {
        let server = try TestServer()
        var options = testOptions()
        options.bufferCapacity = 16_384
        let source = try NetworkSource(url: server.url(path), options: options)
        var decoded: [Float] = []
        while try source.read(into: &decoded, maxFrames: 1_152) > 0 {
            if decoded.count % (1_152 * 2 * 8) == 0 { usleep(2_000) } // a slow consumer
        }
        let stats = source.statistics
        #expect(stats.pauses > 0)
        #expect(decoded.count == fixtureSamples.count)
        #expect(maxAbsDifference(decoded, fixtureSamples) < 1e-6)
        #expect(try server.connections(path) == stats.pauses + 1)
    }

    @Test func seekingAFiniteFileUsesARangeRequest() throws {
        let server = try TestServer()
        let source = try NetworkSource(url: server.url("/file.mp3"), options: testOptions())
        var head: [Float] = []
        _ = try source.read(into: &head, maxFrames: 4_096)
        let target = 2 * 44_100 + 123
        try source.seek(toFrame: target)
        var after: [Float] = []
        while after.count < 44_100 * 2, try source.read(into: &after, maxFrames: 4_096) > 0 {}
        let count = 40_000
        // after[i + lag] ≈ reference[i] from i = 2·target: a perfect seek has lag −2·target.
        let (lag, c) = SignalMetrics.bestLag(fixtureSamples, aStart: 2 * target, after,
                                             candidates: (-2 * target - 2 * 1_152)...(-2 * target + 2 * 1_152), count: count)
        #expect(c > 0.99, "correlation \(c) at lag \(lag)")
        #expect(lag == -2 * target, "seek landed \((lag + 2 * target) / 2) frames off")
        try source.seek(toFrame: 0)
        let all = try decodeAll(source)
        #expect(all.count == fixtureSamples.count)
    }

    /// "?v1" answers `ICY 200 OK` (SHOUTcast v1), which libcurl takes like
    /// HTTP/1.0 only through `CURLOPT_HTTP200ALIASES`.
    @Test(arguments: ["/icy.mp3", "/icy.mp3?v1"])
    func icyStreamStripsMetadataAndReportsTitlesInOrder(path: String) throws {
        let server = try TestServer()
        let titles = Collector<String>()
        let stations = Collector<String>()
        let url = server.url(path)
        let source = try NetworkSource(url: url, options: testOptions(), onMetadata: { m in
            if let t = m.title, titles.all.last != t { titles.append(t) }
            if let s = m.stationName { stations.append(s) }
        })
        #expect(source.isLive)
        #expect(source.frameCount == nil)
        #expect(throws: AudioError.self) { try source.seek(toFrame: 10) }
        let decoded = try decodeAll(source)
        // The metadata was cut out exactly: the same samples as the file on disk.
        #expect(decoded.count == fixtureSamples.count)
        let c = SignalMetrics.correlation(fixtureSamples, 0, decoded, 0, count: min(decoded.count, fixtureSamples.count))
        #expect(c > 0.99)
        #expect(maxAbsDifference(decoded, fixtureSamples) < 1e-6)
        let expected = ["Artist 0 - Song 0", "Guns N' Roses - Don't Cry", "Sigur Rós – Hoppípolla", "Björk - Jóga"]
        waitUntil(timeout: 2) { titles.all.count >= expected.count }
        #expect(titles.all == expected)
        #expect(source.metadata.title == "Björk - Jóga")
        #expect(source.metadata.titleURL == "http://example.com/9")
        #expect(source.metadata.stationName == "Tutti Test FM")
        #expect(source.metadata.bitrateKbps == 128)
        #expect(stations.all.first == "Tutti Test FM")
    }

    /// The client follows relative and absolute redirects (up to 5) and
    /// decodes chunked bodies (with extensions and a trailer).
    @Test(arguments: ["/redirect?n=3", "/chunked.mp3"])
    func redirectsAndChunkedBodiesDecodeExactly(path: String) throws {
        let server = try TestServer()
        let source = try NetworkSource(url: server.url(path), options: testOptions())
        let decoded = try decodeAll(source)
        #expect(decoded.count == fixtureSamples.count)
        #expect(maxAbsDifference(decoded, fixtureSamples) < 1e-6)
        if path.hasPrefix("/redirect") { #expect(try server.connections("/redirect") == 4) }
    }

    @Test func tooManyRedirectsAndOversizedHeadersAreClearErrors() throws {
        let server = try TestServer()
        let cases = [("/redirect?n=5", "more than 5 redirects"), ("/longheader", "longer than 8192 bytes"),
                     ("/manyheaders", "more than 100 headers")]
        for (path, words) in cases {
            let error = #expect(throws: StreamError.self) { try NetworkSource(url: server.url(path), options: testOptions()) }
            #expect(error?.description.contains(words) == true, "\(path): \(String(describing: error))")
        }
    }

    @Test func slowStreamWaitsWithoutSpinningThenTimesOut() throws {
        let server = try TestServer()
        let source = try NetworkSource(url: server.url("/slow.mp3"), options: testOptions(stall: 1))
        var decoded: [Float] = []
        let cpuBefore = threadCPUSeconds()
        let start = Date()
        var failure: AudioError?
        do {
            while try source.read(into: &decoded, maxFrames: 1_152) > 0 {}
        } catch {
            failure = error
        }
        let elapsed = Date().timeIntervalSince(start)
        let cpu = threadCPUSeconds() - cpuBefore
        #expect(decoded.count / 2 > 44_100, "the trickled 40 KiB hold about 2.5 s of audio")
        #expect(failure?.description.contains("nothing received for 1 s") == true, "\(String(describing: failure))")
        #expect(elapsed > 2.0 && elapsed < 6)
        #expect(cpu < 0.3 * elapsed, "the reader used \(cpu) s of CPU in \(elapsed) s")
    }

    @Test func liveStreamReconnectsAfterADropAndKeepsDelivering() throws {
        let server = try TestServer()
        let log = Collector<String>()
        let logger = Logger(label: "test") { level, _, message in if level >= .warning { log.append(message) } }
        let source = try NetworkSource(url: server.url("/live?drop=40000&icy"),
                                       options: testOptions(reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.2)),
                                       log: logger)
        #expect(source.isLive)
        var decoded: [Float] = []
        while decoded.count < 2 * 44_100 * 10 {
            #expect(try source.read(into: &decoded, maxFrames: 4_096) > 0)
        }
        let stats = source.statistics
        // 40,000 bytes ≈ 2.5 s at 128 kbit/s: 10 s of audio needs at least 3 reconnects.
        #expect(stats.reconnects >= 3)
        #expect(stats.reconnectAttempts >= stats.reconnects)
        #expect(try server.connections("/live") >= 4)
        // The first wait is 50 ms less up to 20 % jitter (ReconnectBackoffTests has the exact schedule).
        let firstWait = log.all.lazy.compactMap { line -> Double? in
            guard let r = line.range(of: "reconnect attempt 1 in ") else { return nil }
            return Double(line[r.upperBound...].prefix { $0 != " " })
        }.first
        #expect(firstWait.map { $0 >= 0.04 && $0 <= 0.05 } == true, "\(log.all)")
        #expect(source.metadata.title == "Live")
    }

    @Test func finiteFileThatDropsMidwayIsAnErrorNotAReconnect() throws {
        let server = try TestServer()
        let source = try NetworkSource(url: server.url("/truncated.mp3"), options: testOptions(reconnect: ReconnectPolicy(initialDelay: 0.05)))
        #expect(!source.isLive)
        var decoded: [Float] = []
        let error = #expect(throws: AudioError.self) {
            while try source.read(into: &decoded, maxFrames: 4_096) > 0 {}
        }
        #expect(error?.description.contains("ended after \(fixtureBytes.count / 2) of \(fixtureBytes.count) bytes") == true, "\(String(describing: error))")
        #expect(decoded.count > 0)
        #expect(source.statistics.reconnectAttempts == 0)
        #expect(try server.connections("/truncated.mp3") == 1)
    }

    @Test func notFoundIsATypedErrorNamingTheURLAndStatus() throws {
        let server = try TestServer()
        let url = server.url("/missing.mp3")
        let error = #expect(throws: StreamError.self) { try NetworkSource(url: url, options: testOptions()) }
        #expect(error == .httpStatus(url: url, status: 404))
        #expect(error?.description.contains(url) == true)
        #expect(error?.description.contains("404") == true)
    }

    @Test func garbageServedAsAudioIsADecodingError() throws {
        let server = try TestServer()
        let error = #expect(throws: StreamError.self) { try NetworkSource(url: server.url("/garbage.mp3"), options: testOptions()) }
        guard case .undecodable(_, let reason) = error else { Issue.record("expected .undecodable, got \(String(describing: error))"); return }
        #expect(reason.contains("text/html"))
    }

    @Test func refusedConnectionAndBadURLs() throws {
        // A port nobody listens on: bind one, note it, close it.
        let server = try TestServer()
        let url = server.url("/file.mp3")
        server.stop()
        let refused = #expect(throws: StreamError.self) { try NetworkSource(url: url, options: testOptions()) }
        guard case .network(let u, let reason) = refused else { Issue.record("expected .network, got \(String(describing: refused))"); return }
        #expect(u == url)
        #expect(reason.contains("connection refused"), "\(reason)")
        #expect(throws: StreamError.unsupportedURL("ftp://example.com/a.mp3")) { try NetworkSource(url: "ftp://example.com/a.mp3") }
    }
}

/// https:// through libcurl and OpenSSL, against Python's http.server
/// behind TLS with a self-signed certificate made for the test.
@Suite struct HTTPSSourceTests {
    /// Starts the server on a folder holding the fixture; returns it, the URL and the certificate's path.
    func serve() throws -> (TestServer, String, String) {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixtureMP3, toPath: dir + "/www/file.mp3")
        try runTool(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                     "-days", "1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"])
        try httpsFileServerScript.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        let server = try TestServer(script: dir + "/server.py", arguments: [dir + "/www", dir + "/cert.pem", dir + "/key.pem"])
        return (server, "https://127.0.0.1:\(server.port)/file.mp3", dir + "/cert.pem")
    }

    /// Trusted through `caFile`, the stream decodes exactly (http.server has no Range: no seek here).
    @Test func aCAFileIsTrusted() throws {
        let (server, url, cert) = try serve()
        defer { server.stop() }
        var options = testOptions()
        options.caFile = cert
        let source = try NetworkSource(url: url, options: options)
        #expect(!source.isLive)
        let decoded = try decodeAll(source)
        #expect(decoded.count == fixtureSamples.count)
        #expect(maxAbsDifference(decoded, fixtureSamples) < 1e-6)
    }

    /// Without it, the system store does not trust the certificate: a clear error, not a hang.
    @Test func anUntrustedCertificateIsANetworkErrorNamingIt() throws {
        let (server, url, _) = try serve()
        defer { server.stop() }
        let error = #expect(throws: StreamError.self) { try NetworkSource(url: url, options: testOptions()) }
        guard case .network(_, let reason) = error else { Issue.record("expected .network, got \(String(describing: error))"); return }
        #expect(reason.lowercased().contains("certificate"), "\(reason)")
    }
}
