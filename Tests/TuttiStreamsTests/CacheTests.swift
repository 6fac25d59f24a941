import Foundation
import Testing
import TuttiAudio
import TuttiCore
@testable import TuttiStreams
import TuttiTestSupport

@Suite struct CacheTests {
    @Test func addWithProgressThenPlayFromDiskWithTheServerStopped() throws {
        let server = try TestServer()
        let dir = makeTemporaryDirectory()
        let cache = try StreamCache(directory: dir, capacityBytes: 10_000_000, options: testOptions())
        let url = server.url("/file.mp3")
        var progress: [(Int64, Int64)] = []
        let entry = try cache.add(url) { progress.append(($0, $1)) }
        let total = Int64(fixtureBytes.count)
        #expect(entry.size == total)
        #expect(progress.first! == (0, total))
        #expect(progress.last! == (total, total))
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        let path = try #require(cache.cachedPath(for: url))
        #expect([UInt8](FileManager.default.contents(atPath: path)!) == fixtureBytes)
        #expect(cache.totalSize == total)
        #expect(cache.list().map(\.url) == [url])

        server.stop()
        let opener = SourceOpener(cache: cache, options: testOptions())
        let decoder = try opener.open(url)
        #expect(decoder.path == url)
        let decoded = try decodeAll(decoder)
        #expect(decoded.count == fixtureSamples.count)
        // Adding again is a no-op that needs no network.
        #expect(try cache.add(url).size == total)
        // Reopening the directory finds the same entry.
        let again = try StreamCache(directory: dir, capacityBytes: 10_000_000, options: testOptions())
        #expect(again.list().map(\.url) == [url])
    }

    @Test func partialDownloadNeverBecomesAnEntry() throws {
        let server = try TestServer()
        let dir = makeTemporaryDirectory()
        let cache = try StreamCache(directory: dir, capacityBytes: 10_000_000, options: testOptions())
        let url = server.url("/truncated.mp3")
        let error = #expect(throws: StreamError.self) { try cache.add(url) }
        #expect(error == .truncated(url: url, received: Int64(fixtureBytes.count / 2), expected: Int64(fixtureBytes.count)))
        #expect(cache.cachedPath(for: url) == nil)
        #expect(cache.list().isEmpty)
        #expect(cache.totalSize == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["index.json"])
        // With the network gone, the opener cannot fall back to a partial file.
        server.stop()
        #expect(throws: StreamError.self) { try SourceOpener(cache: cache, options: testOptions()).open(url) }
    }

    @Test func leftoverPartFilesAreRemovedOnOpen() throws {
        let dir = makeTemporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/0123456789abcdef.mp3.1.1.part", contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: dir + "/0123456789abcdef.mp3", contents: Data([1, 2, 3]))
        let cache = try StreamCache(directory: dir, capacityBytes: 1_000, options: testOptions())
        #expect(cache.list().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["index.json"])
    }

    @Test func leastRecentlyUsedEvictionListSizeRemoveClear() throws {
        let server = try TestServer()
        let dir = makeTemporaryDirectory()
        let size = Int64(fixtureBytes.count)
        let cache = try StreamCache(directory: dir, capacityBytes: size * 5 / 2, options: testOptions())
        let a = server.url("/file.mp3?a"), b = server.url("/file.mp3?b"), c = server.url("/file.mp3?c")
        try cache.add(a)
        try cache.add(b)
        #expect(cache.cachedPath(for: a) != nil) // a is now more recent than b
        try cache.add(c)
        #expect(cache.list().map(\.url) == [c, a])
        #expect(cache.cachedPath(for: b) == nil)
        #expect(cache.totalSize == 2 * size)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).count == 3) // two files and the index
        #expect(cache.remove(a))
        #expect(!cache.remove(a))
        #expect(cache.totalSize == size)
        #expect(cache.clear() == size)
        #expect(cache.list().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["index.json"])
        let tooBig = try StreamCache(directory: makeTemporaryDirectory(), capacityBytes: size - 1, options: testOptions())
        #expect(throws: StreamError.self) { try tooBig.add(a) }
    }

    @Test func liveStreamsCannotBeCached() throws {
        let server = try TestServer()
        let cache = try StreamCache(directory: makeTemporaryDirectory(), capacityBytes: 10_000_000, options: testOptions())
        let error = #expect(throws: StreamError.self) { try cache.add(server.url("/icy.mp3")) }
        #expect(error?.description.contains("live stream") == true)
    }
}

@Suite struct SourceOpenerTests {
    @Test func localPathsAndFileURLsAndUnsupportedSchemes() throws {
        let opener = SourceOpener()
        #expect(try opener.open(fixtureMP3).sampleRate == 44_100)
        #expect(try opener.open("file://" + fixtureMP3).sampleRate == 44_100)
        #expect(throws: StreamError.unsupportedURL("ftp://example.com/x.mp3")) { try opener.open("ftp://example.com/x.mp3") }
        let missing = #expect(throws: StreamError.self) { try opener.open("/nonexistent/x.mp3") }
        guard case .audio = missing else { Issue.record("expected .audio, got \(String(describing: missing))"); return }
    }

    @Test func networkURLsWithoutCacheUseTheNetworkAndReportMetadata() throws {
        let server = try TestServer()
        let seen = Collector<String>()
        let opener = SourceOpener(options: testOptions(), onMetadata: { uri, m in seen.append("\(uri) \(m.title ?? "-")") })
        let url = server.url("/icy.mp3")
        let decoder = try opener.open(url)
        #expect(decoder is NetworkSource)
        _ = try decodeAll(decoder)
        waitUntil(timeout: 2) { seen.all.contains("\(url) Björk - Jóga") }
        #expect(seen.all.contains("\(url) Artist 0 - Song 0"))
        #expect(seen.all.contains("\(url) Björk - Jóga"))
    }
}
