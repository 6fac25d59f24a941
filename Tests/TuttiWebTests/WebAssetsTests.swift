import Foundation
import Testing
import TuttiTestSupport
@testable import TuttiWeb

@Suite struct WebAssetsTests {
    @Test func filesAreServedGzippedOnceWithAnEntityTag() throws {
        let dir = makeTemporaryDirectory()
        let page = String(repeating: "<p>Tutti plays in every room.</p>\n", count: 200)
        try page.write(toFile: dir + "/index.html", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir + "/js", withIntermediateDirectories: true)
        try "export const x = 1;\n".write(toFile: dir + "/js/app.js", atomically: true, encoding: .utf8)
        try "secret".write(toFile: dir + "/.hidden", atomically: true, encoding: .utf8)
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47] + [UInt8](repeating: 7, count: 100)
        _ = FileManager.default.createFile(atPath: dir + "/icon.png", contents: Data(png))
        let assets = try WebAssets(root: dir)
        #expect(Set(assets.files.keys) == ["/index.html", "/js/app.js", "/icon.png"], "hidden files are not served")

        let plain = try #require(assets.response(for: "/", acceptEncoding: nil, ifNoneMatch: nil))
        #expect(plain.status == 200 && plain.body == Array(page.utf8))
        let zipped = try #require(assets.response(for: "/index.html", acceptEncoding: "gzip, deflate, br", ifNoneMatch: nil))
        #expect(zipped.headers.contains { $0 == ("Content-Encoding", "gzip") })
        #expect(zipped.body.count < page.utf8.count / 10, "\(zipped.body.count) bytes gzipped of \(page.utf8.count)")
        #expect(try gunzip(zipped.body) == Array(page.utf8), "the gzip copy decodes to the file")
        let etag = try #require(plain.headers.first { $0.0 == "ETag" }?.1)
        #expect(assets.response(for: "/", acceptEncoding: "gzip", ifNoneMatch: etag)?.status == 304)
        #expect(assets.response(for: "/js/app.js", acceptEncoding: nil, ifNoneMatch: nil)?.headers.first?.1 == "text/javascript; charset=utf-8")
        let image = try #require(assets.response(for: "/icon.png", acceptEncoding: "gzip", ifNoneMatch: nil))
        #expect(image.body == png && !image.headers.contains { $0.0 == "Content-Encoding" }, "images are not gzipped")
        #expect(assets.response(for: "/nothing.js", acceptEncoding: nil, ifNoneMatch: nil) == nil)
        #expect(assets.response(for: "/../etc/passwd", acceptEncoding: nil, ifNoneMatch: nil) == nil)
    }

    @Test func aFolderWithoutTheAppIsAClearError() {
        let dir = makeTemporaryDirectory()
        #expect { _ = try WebAssets(root: dir) } throws: { "\($0)".contains("index.html is missing") }
    }

    @Test func onlyThePagesOwnOriginMayOpenTheSocket() {
        #expect(WebServer.sameOrigin(origin: "http://tutti.local:8080", host: "tutti.local:8080"))
        #expect(WebServer.sameOrigin(origin: "http://192.168.1.5:8080", host: "192.168.1.5:8080"))
        #expect(!WebServer.sameOrigin(origin: "https://evil.example", host: "tutti.local:8080"))
        #expect(!WebServer.sameOrigin(origin: "http://tutti.local:8080.evil.example", host: "tutti.local:8080"))
        #expect(!WebServer.sameOrigin(origin: "http://tutti.local:8080/x", host: "tutti.local:8080"))
        #expect(!WebServer.sameOrigin(origin: "null", host: "tutti.local:8080"))
        #expect(!WebServer.sameOrigin(origin: "http://tutti.local:8080", host: nil))
    }

    /// gunzip through the system's gzip, an independent decoder.
    private func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let dir = makeTemporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/x.gz", contents: Data(bytes))
        let r = try runProgram("/bin/gzip", ["-d", dir + "/x.gz"])
        #expect(r.status == 0)
        return Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/x")))
    }
}
