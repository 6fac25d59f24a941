import Foundation
import Testing
import TuttiCore
import TuttiTestSupport
@testable import TuttiWeb

/// What the server writes in a response head (issue 26, finding 1).
@Suite(.serialized) struct WebServerHeaderTests {
    @Test func aHeaderValueWithALineBreakIsNeverWritten() throws {
        #expect(WebResponse.isWritable(name: "ETag", value: "\"abc\""))
        for value in ["a\r\nSet-Cookie: x=1", "a\nb", "a\rb", "a\u{0}b"] { #expect(!WebResponse.isWritable(name: "X-Test", value: value), "\(value.debugDescription)") }
        for name in ["", "X Test", "X:Test", "X\r\nTest"] { #expect(!WebResponse.isWritable(name: name, value: "v"), "\(name.debugDescription)") }

        // A handler that puts a line break in a value: the server answers 500, and nothing after the break goes out.
        let server = WebServer(endpoint: "127.0.0.1:0", threads: 4, socketHandler: nil, log: .silent) { request in
            if request.path == "/split" {
                return WebResponse(status: 200, headers: [("X-Name", "song\r\nSet-Cookie: tutti.token=stolen")], body: Array("hi".utf8))
            }
            return WebResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("fine".utf8))
        }
        try server.start()
        defer { server.stop() }
        func get(_ path: String) throws -> String {
            let r = try runProgram("/usr/bin/curl", ["-s", "-i", "--max-time", "5", "http://127.0.0.1:\(server.port)\(path)"])
            return r.out
        }
        let split = try get("/split")
        #expect(split.hasPrefix("HTTP/1.1 500"), "\(split)")
        #expect(!split.contains("Set-Cookie") && !split.contains("stolen"), "\(split)")
        #expect(split.contains("X-Content-Type-Options: nosniff"))
        let fine = try get("/")
        #expect(fine.hasPrefix("HTTP/1.1 200") && fine.contains("X-Content-Type-Options: nosniff") && fine.hasSuffix("fine"), "\(fine)")
    }

    @Test func onlyThisServersOwnPagesOrNoBrowserPassTheOriginCheck() {
        func request(_ headers: [String: String]) -> WebRequest { WebRequest(method: "POST", path: "/api", headers: headers, peer: "192.0.2.9:5000") }
        #expect(request(["host": "tutti.local:8080"]).crossSiteRefusal(log: .silent) == nil, "no Origin: not a browser")
        #expect(request(["host": "tutti.local:8080", "origin": "http://tutti.local:8080"]).crossSiteRefusal(log: .silent) == nil)
        for origin in ["http://evil.example", "null", "http://tutti.local:8081", "http://tutti.local:8080.evil.example", "http://tutti.local:8080/x"] {
            #expect(request(["host": "tutti.local:8080", "origin": origin]).crossSiteRefusal(log: .silent)?.status == 403, "\(origin)")
        }
    }
}

/// The query of a request, as the web app's upload sends it (`encodeURIComponent`).
@Suite struct WebRequestQueryTests {
    @Test func aValueIsPercentDecodedAndAbsentOnesAreNil() {
        let r = WebRequest(method: "POST", path: "/calibrate",
                           query: "plan=%7B%22rooms%22%3A%5B%22%EB%B0%A9%22%2C%22b%20c%22%5D%7D&lang=ko&x=a+b&empty=&bad=%E",
                           headers: [:], peer: "127.0.0.1:1")
        #expect(r.queryValue("plan") == #"{"rooms":["방","b c"]}"#)
        #expect(r.queryValue("lang") == "ko")
        #expect(r.queryValue("x") == "a b")
        #expect(r.queryValue("empty") == "")
        #expect(r.queryValue("bad") == "%E")
        #expect(r.queryValue("none") == nil)
    }
}
