import Testing
@testable import TuttiDaemon
@testable import TuttiLeader
@testable import TuttiControlKit
@testable import TuttiMPD

/// The MPD text layer, with no sockets: tokenizer, line bounds, command
/// lists, idle, filters and response formatting.
struct MPDProtocolTests {
    func tokens(_ line: String) throws -> MPDCommand {
        try MPDTokenizer.tokenize(Array(line.utf8))
    }

    func tokenizeError(_ line: [UInt8]) -> MPDTokenizeError? {
        do { _ = try MPDTokenizer.tokenize(line); return nil } catch { return error }
    }

    @Test func tokenizerSplitsQuotedArgumentsWithEscapes() throws {
        #expect(try tokens("status") == MPDCommand(name: "status", arguments: []))
        #expect(try tokens("  PLAY   3  ") == MPDCommand(name: "play", arguments: ["3"]))
        #expect(try tokens(#"add "Artist/A \"B\" C\\D.mp3""#) == MPDCommand(name: "add", arguments: [#"Artist/A "B" C\D.mp3"#]))
        #expect(try tokens(#"find "(artist == 'x')" sort title window 0:2"#)
                == MPDCommand(name: "find", arguments: ["(artist == 'x')", "sort", "title", "window", "0:2"]))
        #expect(try tokens(#"search any """#) == MPDCommand(name: "search", arguments: ["any", ""]))
        #expect(try tokens("add \"Ünïcödé ♫\"") == MPDCommand(name: "add", arguments: ["Ünïcödé ♫"]))
        #expect(MPDTokenizer.quote(#"a "b" \c"#) == #""a \"b\" \\c""#)
    }

    /// Found by the mpd fuzz target: a quote before a combining mark (one
    /// Character with it) went out unescaped, ending the argument early.
    @Test func aQuoteBeforeACombiningMarkIsEscaped() throws {
        let tricky = "Song \"\u{488}s \"Blue\""
        #expect(try MPDTokenizer.tokenize(Array("find \(MPDTokenizer.quote(tricky))".utf8)) == MPDCommand(name: "find", arguments: [tricky]))
    }

    @Test func tokenizerRejectsMalformedLinesWithMPDMessages() {
        #expect(tokenizeError(Array(#"add "open"#.utf8)) == MPDTokenizeError(name: "add", error: .argument("Missing closing '\"'")))
        #expect(tokenizeError(Array(#"add "a"b"#.utf8)) == MPDTokenizeError(name: "add", error: .argument("Space expected after closing '\"'")))
        #expect(tokenizeError(Array(#"add a"b"#.utf8)) == MPDTokenizeError(name: "add", error: .argument("Invalid unquoted character")))
        #expect(tokenizeError(Array("   ".utf8)) == MPDTokenizeError(name: "", error: MPDError(.unknown, "No command given")))
        #expect(tokenizeError([0x61, 0x64, 0x64, 0x20, 0xff, 0xfe]) == MPDTokenizeError(name: "add", error: .argument("Invalid UTF-8 in an argument")))
        #expect(tokenizeError([0xff, 0x00]) == MPDTokenizeError(name: "", error: .argument("Invalid UTF-8 in the command name")))
        #expect(tokenizeError(Array("9lives".utf8))?.error.code == .unknown)
        let many = "add" + String(repeating: " x", count: MPDTokenizer.maxArguments + 1)
        #expect(tokenizeError(Array(many.utf8)) == MPDTokenizeError(name: "add", error: .argument("Too many arguments")))
    }

    @Test func ackLinesCarryCodeIndexAndCommand() {
        #expect(String(decoding: MPDError(.unknown, "unknown command \"x\"").ackLine(index: 0, command: "x"), as: UTF8.self)
                == "ACK [5@0] {x} unknown command \"x\"\n")
        #expect(String(decoding: MPDError(.argument, "two\nlines").ackLine(index: 3, command: "play"), as: UTF8.self)
                == "ACK [2@3] {play} two lines\n")
    }

    @Test func lineSplitterBoundsLinesAndDropsCarriageReturns() {
        var s = MPDLineSplitter(maxLineBytes: 8)
        #expect(s.feed(Array("ping\r\nsta".utf8)) == [Array("ping".utf8)])
        #expect(s.feed(Array("tus\n".utf8)) == [Array("status".utf8)])
        #expect(!s.overflow)
        #expect(s.feed(Array("123456789".utf8)) == [])
        #expect(s.overflow)
        #expect(s.feed(Array("\nping\n".utf8)) == []) // closed for good
    }

    @Test func commandListsGroupCommandsAndAreBounded() {
        var state = MPDSessionState(maxListCommands: 2)
        let ping = MPDCommand(name: "ping", arguments: [])
        #expect(state.receive(line: Array("command_list_ok_begin".utf8)) == .none)
        #expect(state.inCommandList)
        #expect(state.receive(line: Array("ping".utf8)) == .none)
        #expect(state.receive(line: Array("ping".utf8)) == .none)
        #expect(state.receive(line: Array("command_list_end".utf8)) == .run([ping, ping], isList: true, listOK: true))
        #expect(state.receive(line: Array("command_list_end".utf8))
                == .reply(Array("ACK [1@0] {command_list_end} not in command list mode\n".utf8)))
        #expect(state.receive(line: Array("command_list_begin".utf8)) == .none)
        _ = state.receive(line: Array("ping".utf8))
        _ = state.receive(line: Array("ping".utf8))
        #expect(state.receive(line: Array("ping".utf8))
                == .close(reply: Array("ACK [2@2] {ping} Command list too long (more than 2 commands)\n".utf8)))
    }

    @Test func idleAcceptsOnlyNoidle() {
        var state = MPDSessionState()
        #expect(state.receive(line: Array("idle player mixer".utf8)) == .idle(MPDCommand(name: "idle", arguments: ["player", "mixer"])))
        #expect(state.idling)
        #expect(state.receive(line: Array("noidle".utf8)) == .noidle)
        state.idling = false
        #expect(state.receive(line: Array("noidle".utf8)) == .none) // not idling: ignored, no reply
        _ = state.receive(line: Array("idle".utf8))
        #expect(state.receive(line: Array("status".utf8)) == .close(reply: []))
        var fresh = MPDSessionState()
        #expect(fresh.receive(line: Array("close".utf8)) == .close(reply: []))
        #expect(fresh.receive(line: Array("status".utf8)) == .run([MPDCommand(name: "status", arguments: [])], isList: false, listOK: false))
    }

    @Test func filtersParseBothSyntaxesAndMatch() throws {
        let song = MPDSong(uri: "Artist1/Album A/01.mp3", tags: ["Artist": "Alpha Band", "Album": "Album A", "Title": "First Song", "Track": "1"])
        let other = MPDSong(uri: "Misc/other.mp3", tags: ["Artist": "Beta Crew", "Title": "Other Tune"])
        let find = try MPDFilter.parse(["artist", "Alpha Band"], exact: true)
        #expect(find == .tag("Artist", .equals, "Alpha Band"))
        #expect(find.matches(song, foldCase: false) && !find.matches(other, foldCase: false))
        #expect(!(try MPDFilter.parse(["artist", "alpha band"], exact: true)).matches(song, foldCase: false))
        let search = try MPDFilter.parse(["any", "TUNE"], exact: false)
        #expect(!search.matches(song, foldCase: true) && search.matches(other, foldCase: true))
        let expression = try MPDFilter.parse(["((artist == 'Alpha Band') AND (!(title contains \"Second\")))"], exact: true)
        #expect(expression == .and([.tag("Artist", .equals, "Alpha Band"), .not(.tag("Title", .contains, "Second"))]))
        #expect(expression.matches(song, foldCase: false))
        #expect(try MPDFilter.parse(["(base 'Artist1')"], exact: true).matches(song, foldCase: false))
        #expect(!(try MPDFilter.parse(["(base 'Artist')"], exact: true)).matches(song, foldCase: false))
        #expect(try MPDFilter.parse(["(file starts_with 'Misc/')"], exact: true).matches(other, foldCase: false))
        #expect(try MPDFilter.parse(["(AlbumArtist != 'x')"], exact: true).matches(other, foldCase: false))
        #expect(throws: MPDError.argument("Unknown filter type: colour")) { try MPDFilter.parse(["colour", "red"], exact: true) }
        #expect(throws: MPDError.argument("Missing value for \"artist\"")) { try MPDFilter.parse(["artist"], exact: true) }
        #expect(throws: MPDError.argument("Regular expressions are not supported")) { try MPDFilter.parse(["(artist =~ 'a.*')"], exact: true) }
        #expect(throws: MPDError.argument("Closing quote not found")) { try MPDFilter.parse(["(artist == 'open)"], exact: true) }
        let deep = String(repeating: "(", count: 40) + String(repeating: ")", count: 40)
        #expect(throws: MPDError.argument("Filter expression nested too deep")) { try MPDFilter.parse([deep], exact: true) }
    }

    @Test func composedLinesMatchTheLineByLineResponse() {
        let long = String(repeating: "Ω", count: 40) + "\r\nend"
        var composed = MPDResponse()
        var plain = MPDResponse()
        for (text, number, seconds, date) in [("a\nb", 7, 1.23456, Int64(1_714_521_600)), (long, -42, 0.0504, 0), ("", Int.max, 1e20, -1)] {
            var value = Array(text.utf8)
            composed.compose(capacity: value.count + 4 * (16 + LineComposer.lineBytes + LineComposer.numberBytes)) { l in
                value.withUnsafeBufferPointer { l.line("Title", $0) }
                l.line("Track", number)
                l.line("duration", seconds: seconds)
                l.line("Last-Modified", date: date)
            }
            value.removeAll()
            plain.add("Title", text)
            plain.add("Track", number)
            plain.add("duration", seconds: seconds)
            plain.add("Last-Modified", date: date)
        }
        #expect(composed.bytes == plain.bytes)
        let text = String(decoding: composed.bytes, as: UTF8.self)
        #expect(text.hasPrefix("Title: a b\nTrack: 7\nduration: 1.235\nLast-Modified: 2024-05-01T00:00:00Z\n"))
        #expect(text.contains("Title: \(String(repeating: "Ω", count: 40))  end\nTrack: -42\nduration: 0.050\nLast-Modified: 1970-01-01T00:00:00Z\n"))
        #expect(text.hasSuffix("Track: 9223372036854775807\nduration: 1000000000000000.000\nLast-Modified: 1969-12-31T23:59:59Z\n"))
    }

    /// Values copied eight bytes at a time, the last word overlapping: every
    /// length up to 40 with a line break at every place (and none), and
    /// dates on the same day, the next and far apart, one after the other.
    @Test func composedValuesOfEveryLengthAndDatesOfSeveralDays() {
        var composed = MPDResponse()
        var plain = MPDResponse()
        let day: Int64 = 1_714_521_600
        let dates = [day + 5, day + 86_399, day + 86_400, day + 3, day - 400 * 86_400, day - 400 * 86_400 + 61, 0, -1, day + 5]
        var n = 0
        for length in 0...40 {
            for breakAt in [-1] + Array(0..<length) {
                var value = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
                if breakAt >= 0 { value[breakAt] = breakAt % 2 == 0 ? 0x0A : 0x0D }
                let date = dates[n % dates.count]
                n += 1
                composed.compose(capacity: value.count + 2 * (16 + LineComposer.lineBytes + LineComposer.numberBytes)) { l in
                    value.withUnsafeBufferPointer { l.line("Title", $0) }
                    l.line("Last-Modified", date: date)
                }
                plain.add("Title", String(decoding: value, as: UTF8.self))
                plain.add("Last-Modified", date: date)
            }
        }
        #expect(composed.bytes == plain.bytes)
        #expect(String(decoding: composed.bytes, as: UTF8.self).hasPrefix("Title: \nLast-Modified: 2024-05-01T00:00:05Z\nTitle: a\nLast-Modified: 2024-05-01T23:59:59Z\n"))
    }

    @Test func responsesFormatSecondsAndBinary() throws {
        var r = MPDResponse()
        r.add("elapsed", seconds: 1.23456)
        r.add("duration", seconds: 6)
        r.add("Title", "two\nlines")
        r.addBinary([1, 2, 3][...])
        #expect(r.bytes == Array("elapsed: 1.235\nduration: 6.000\nTitle: two lines\nbinary: 3\n".utf8) + [1, 2, 3, 10])
        #expect(MPDResponse.threeDecimals(0.0504) == "0.050")
        #expect(try MPDArguments.range("2:5", count: 9) == 2..<5)
        #expect(try MPDArguments.range("3:", count: 9) == 3..<9)
        #expect(try MPDArguments.range("4", count: 9) == 4..<5)
        #expect(throws: MPDError.argument("Bad range end: 1")) { try MPDArguments.range("3:1", count: 9) }
    }

    @Test func eventsMapToIdleSubsystems() {
        #expect(MPDSubsystem.of(.queue) == [.playlist])
        #expect(MPDSubsystem.of(.mixer) == [.mixer, .output])
        #expect(MPDSubsystem.of(.library) == [.database, .update])
        #expect(MPDSubsystem.of(.playlists) == [.stored_playlist])
    }
}
