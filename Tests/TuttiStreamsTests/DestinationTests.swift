import Foundation
import Testing
import TuttiAudio
import TuttiCore
@testable import TuttiStreams
import TuttiTestSupport

/// Where the leader may fetch from, checked on the address libcurl connects
/// to (after DNS, after each redirect), and bodies longer than declared.
@Suite struct DestinationTests {
    /// With the default options, the test server on 127.0.0.1 is refused by
    /// address before any connection: it never sees the request.
    @Test func theDefaultRefusesThisMachineByAddressAndNameAlike() throws {
        let server = try TestServer()
        for url in [server.url("/file.mp3?literal"), "http://localhost:\(server.port)/file.mp3?name", "http://[::ffff:127.0.0.1]:\(server.port)/file.mp3?mapped"] {
            let error = #expect(throws: StreamError.self) { try NetworkSource(url: url, options: NetworkOptions()) }
            guard case .refused(let u, let why) = error else { Issue.record("\(url): expected .refused, got \(String(describing: error))"); continue }
            #expect(u == url)
            #expect(why.scope == .loopback && why.fixable)
            #expect(error!.description.contains("local-streams = yes"))
        }
        let cache = try StreamCache(directory: makeTemporaryDirectory(), capacityBytes: 10_000_000)
        #expect(throws: StreamError.self) { try cache.add(server.url("/file.mp3?cache")) }
        #expect(try server.connections("/file.mp3") == 0, "the server never saw a request")
    }

    /// Allowed explicitly, the same server plays.
    @Test func localStreamsOnPlaysFromThisMachine() throws {
        let server = try TestServer()
        var options = NetworkOptions()
        options.destinations = StreamDestinationPolicy(allowsLocal: true)
        let decoded = try decodeAll(try NetworkSource(url: server.url("/file.mp3"), options: options))
        #expect(decoded.count == fixtureSamples.count)
    }

    /// A redirect from an allowed host to a refused address is refused at
    /// the connection (cloud metadata; 0.0.0.0, which Linux connects to
    /// this machine; IPv4-mapped link-local), even with local streams on.
    @Test func aRedirectToARefusedAddressIsRefused() throws {
        let server = try TestServer()
        for target in ["http://169.254.169.254/latest/meta-data/", "http://0.0.0.0:\(server.port)/file.mp3", "http://[::ffff:169.254.169.254]/x",
                       "http://[fe80::1]:\(server.port)/x", "http://224.0.0.1:\(server.port)/x"] {
            let url = server.url("/redirect-to?url=\(target)")
            let error = #expect(throws: StreamError.self) { try NetworkSource(url: url, options: testOptions()) }
            guard case .refused(_, let why) = error else { Issue.record("\(target): expected .refused, got \(String(describing: error))"); continue }
            #expect(!why.fixable, "\(target)")
        }
        #expect(try server.connections("/redirect-to") == 5)
        #expect(try server.connections("/file.mp3") == 0, "0.0.0.0 never reached the server")
    }

    /// Only http and https, on the first request and on redirects.
    @Test func otherSchemesAreRefusedAlsoOnARedirect() throws {
        let server = try TestServer()
        for target in ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1:\(server.port)/x", "dict://127.0.0.1:\(server.port)/x"] {
            let error = #expect(throws: StreamError.self) { try NetworkSource(url: server.url("/redirect-to?url=\(target)"), options: testOptions()) }
            #expect(error.map { if case .network = $0 { true } else { false } } == true, "\(target): \(String(describing: error))")
        }
        #expect(throws: StreamError.unsupportedURL("file:///etc/passwd")) { try NetworkSource(url: "file:///etc/passwd", options: testOptions()) }
    }

    /// A server that declares 1,000 bytes and sends 16 MiB (chunked, which
    /// libcurl reads past Content-Length): the cache stops at the declared
    /// length, never reports or writes more, and keeps nothing.
    @Test func aBodyLongerThanItsContentLengthIsCutOffAndNothingKept() throws {
        let server = try TestServer()
        let dir = makeTemporaryDirectory()
        let cache = try StreamCache(directory: dir, capacityBytes: 10_000_000, options: testOptions())
        let url = server.url("/liar?declared=1000&send=16777216")
        var most: Int64 = 0
        let error = #expect(throws: StreamError.self) { try cache.add(url) { received, _ in most = max(most, received) } }
        #expect(error == .overran(url: url, declared: 1_000))
        #expect(most <= 1_000, "progress never passed the declared length (was \(most))")
        #expect(cache.list().isEmpty && cache.totalSize == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["index.json"])
        // The transfer was cut off: the server could not write the 16 MiB (socket buffers hold a few hundred KiB).
        usleep(200_000)
        #expect(try server.sentBytes("/liar") < 16_777_216)
    }

    /// The same server played, not cached: the stream fails at the declared length.
    @Test func aStreamLongerThanItsContentLengthFails() throws {
        let server = try TestServer()
        let url = server.url("/liar?declared=100000&send=4194304")
        let source = try NetworkSource(url: url, options: testOptions())
        #expect(throws: AudioError.self) { _ = try decodeAll(source) }
    }

    /// No Content-Length and more than the cap: refused at the head as a live stream, nothing written.
    @Test func aBodyWithoutALengthIsNeverCached() throws {
        let server = try TestServer()
        let dir = makeTemporaryDirectory()
        let cache = try StreamCache(directory: dir, capacityBytes: 100_000, options: testOptions())
        let error = #expect(throws: StreamError.self) { try cache.add(server.url("/endless?send=4194304")) }
        #expect(error?.description.contains("live stream") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["index.json"])
    }
}
