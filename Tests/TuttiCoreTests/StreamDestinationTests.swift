import Testing
import TuttiCore

@Suite struct StreamDestinationTests {
    private func scope(_ text: String) -> AddressScope? { IPAddress(parsing: text).map(AddressScope.init) }

    @Test func addressesParseFromTextAndNothingElseDoes() {
        #expect(IPAddress(parsing: "192.168.1.20")?.bytes == [192, 168, 1, 20])
        #expect(IPAddress(parsing: "::1")?.bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(IPAddress(parsing: "[fe80::1%eth0]")?.bytes == [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])
        #expect(IPAddress(parsing: "::ffff:127.0.0.1")?.bytes == [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 127, 0, 0, 1])
        for (text, shown) in [("2001:db8:0:0:0:0:0:1", "2001:db8::1"), ("::1", "::1"), ("::", "::"), ("fe80::", "fe80::"),
                              ("1:0:0:2:0:0:0:3", "1:0:0:2::3"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"), ("::ffff:7f00:1", "::ffff:127.0.0.1")] {
            #expect(IPAddress(parsing: text)?.description == shown, "\(text)")
        }
        for bad in ["radio.example", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.-4", "1::2::3", ":::", "12345::", "1:2:3:4:5:6:7:8:9", "", "::g"] {
            #expect(IPAddress(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func everyIPv4RangeHasItsScope() {
        let cases: [(String, AddressScope)] = [
            ("127.0.0.1", .loopback), ("127.255.255.254", .loopback), ("127.0.0.2", .loopback),
            ("169.254.169.254", .linkLocal), ("169.254.0.1", .linkLocal),
            ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified),
            ("224.0.0.251", .multicast), ("239.255.255.250", .multicast),
            ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
            ("10.0.0.1", .privateNetwork), ("10.255.255.255", .privateNetwork),
            ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
            ("192.168.1.10", .privateNetwork), ("100.64.0.1", .privateNetwork), ("100.127.255.255", .privateNetwork),
            ("172.15.255.255", .publicInternet), ("172.32.0.0", .publicInternet), ("100.128.0.0", .publicInternet),
            ("169.253.255.255", .publicInternet), ("192.167.1.1", .publicInternet), ("8.8.8.8", .publicInternet),
            ("11.0.0.1", .publicInternet), ("223.255.255.255", .publicInternet),
        ]
        for (text, want) in cases { #expect(scope(text) == want, "\(text)") }
    }

    @Test func everyIPv6RangeHasItsScopeAndEmbeddedIPv4CountsAsIPv4() {
        let cases: [(String, AddressScope)] = [
            ("::1", .loopback), ("::", .unspecified),
            ("fe80::1", .linkLocal), ("febf:ffff::1", .linkLocal),
            ("ff02::1", .multicast), ("ff05::2", .multicast),
            ("fc00::1", .privateNetwork), ("fd12:3456::1", .privateNetwork), ("fec0::1", .privateNetwork),
            ("2001:4860:4860::8888", .publicInternet), ("fbff::1", .publicInternet), ("fe00::1", .publicInternet),
            // IPv4-mapped: what a dual-stack socket connects to for an IPv4 address.
            ("::ffff:127.0.0.1", .loopback), ("::ffff:7f00:1", .loopback), ("::ffff:169.254.169.254", .linkLocal),
            ("::ffff:10.1.2.3", .privateNetwork), ("::ffff:0.0.0.0", .unspecified), ("::ffff:8.8.8.8", .publicInternet),
            // IPv4-compatible, NAT64 and 6to4 reach the IPv4 address they carry.
            ("::127.0.0.1", .loopback), ("::192.168.0.1", .privateNetwork),
            ("64:ff9b::169.254.169.254", .linkLocal), ("64:ff9b::8.8.4.4", .publicInternet),
            ("2002:7f00:1::", .loopback), ("2002:c0a8:101::1", .privateNetwork), ("2002:808:808::", .publicInternet),
        ]
        for (text, want) in cases { #expect(scope(text) == want, "\(text)") }
    }

    @Test func theDefaultPolicyAllowsOnlyTheInternet() {
        let closed = StreamDestinationPolicy()
        let open = StreamDestinationPolicy(allowsLocal: true)
        let allowedOnlyWhenOpen = ["127.0.0.1", "::1", "::ffff:127.0.0.1", "10.0.0.5", "172.20.1.1", "192.168.1.20", "fd00::5", "100.100.1.1"]
        for text in allowedOnlyWhenOpen {
            let a = IPAddress(parsing: text)!
            #expect(closed.refusal(for: a)?.fixable == true, "\(text)")
            #expect(open.refusal(for: a) == nil, "\(text)")
        }
        let neverAllowed = ["169.254.169.254", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"]
        for text in neverAllowed {
            let a = IPAddress(parsing: text)!
            #expect(closed.refusal(for: a)?.fixable == false, "\(text)")
            #expect(open.refusal(for: a)?.fixable == false, "\(text)")
        }
        #expect(closed.refusal(for: IPAddress(parsing: "93.184.216.34")!) == nil)
        #expect(closed.refusal(for: IPAddress(parsing: "2606:2800:220:1::1")!) == nil)
    }

    @Test func theLeadersOwnPublicAddressIsThisMachine() {
        let own = [IPAddress(parsing: "203.0.114.7")!, IPAddress(parsing: "2a01:4f8::7")!]
        let closed = StreamDestinationPolicy()
        #expect(closed.refusal(for: IPAddress(parsing: "203.0.114.7")!, own: own)?.scope == .loopback)
        #expect(closed.refusal(for: IPAddress(parsing: "::ffff:203.0.114.7")!, own: own) != nil)
        #expect(closed.refusal(for: IPAddress(parsing: "2a01:4f8::7")!, own: own) != nil)
        #expect(closed.refusal(for: IPAddress(parsing: "203.0.114.8")!, own: own) == nil)
        #expect(StreamDestinationPolicy(allowsLocal: true).refusal(for: IPAddress(parsing: "203.0.114.7")!, own: own) == nil)
    }

    @Test func aURLsHostIsJudgedBeforeAnyConnection() {
        let closed = StreamDestinationPolicy()
        #expect(StreamDestinationPolicy.host(ofURL: "http://127.0.0.1:8000/secret") == "127.0.0.1")
        #expect(StreamDestinationPolicy.host(ofURL: "https://user:pw@[::1]:8443/x?y") == "[::1]")
        #expect(StreamDestinationPolicy.host(ofURL: "http://radio.example/stream") == "radio.example")
        #expect(StreamDestinationPolicy.host(ofURL: "http://a@169.254.169.254/latest") == "169.254.169.254")
        for host in ["127.0.0.1", "[::1]", "localhost", "LocalHost", "x.localhost", "192.168.0.2", "169.254.169.254", "0.0.0.0"] {
            #expect(closed.refusal(forHost: host) != nil, "\(host)")
        }
        #expect(closed.refusal(forHost: "radio.example") == nil, "names are judged by the address they resolve to")
        #expect(StreamDestinationPolicy(allowsLocal: true).refusal(forHost: "localhost") == nil)
        let message = closed.refusal(forHost: "192.168.0.2")!.description
        #expect(message.contains("192.168.0.2") && message.contains("local-streams = yes"))
        #expect(!closed.refusal(forHost: "169.254.169.254")!.description.contains("local-streams"))
    }
}

@Suite struct MediaFoldersTests {
    /// A file named on the command line is allowed alone: not its folder, not its siblings.
    @Test func aSingleFileIsAllowedWithoutItsFolder() {
        let folders = MediaFolders(roots: ["/srv/music/"], files: ["/home/me/song.mp3"])
        #expect(folders.contains(canonical: "/home/me/song.mp3"))
        for path in ["/home/me", "/home/me/other.mp3", "/home/me/.ssh/id_ed25519", "/home/me/song.mp3.bak", "/home/me/song.mp3/x"] {
            #expect(!folders.contains(canonical: path), "\(path)")
        }
        #expect(folders.contains(canonical: "/srv/music/a/b.flac") && folders.contains(canonical: "/srv/music"))
        #expect(!folders.contains(canonical: "/srv/musical/x.mp3"))
        #expect(folders.root(containing: "/home/me/song.mp3") == nil, "a single file is no folder")
    }
}
