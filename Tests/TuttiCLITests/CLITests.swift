import Testing
import TuttiCLI
import TuttiCore
import TuttiDiscovery

@Suite("tutti: the command line")
struct CLIParsingTests {
    func options(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIOptions {
        guard case .run(let o) = try CLIRequest.parse(arguments, environment: environment) else {
            Issue.record("\(arguments) did not parse to a command"); return CLIOptions(command: "")
        }
        return o
    }

    @Test("Global options anywhere on the line; the command and its operands in order")
    func globalsAnywhere() throws {
        let o = try options(["vol", "--host", "pi.local", "kitchen", "--json", "40", "--port", "4999", "--group", "upstairs", "--leader", "Living room"])
        var expected = CLIOptions(command: "vol")
        expected.operands = ["kitchen", "40"]
        expected.host = "pi.local"; expected.port = 4_999; expected.json = true
        expected.group = "upstairs"; expected.leaderName = "Living room"
        #expect(o == expected)
    }

    @Test("Operands that look like flags stay operands: seek -5, queue add --next")
    func operandsThatLookLikeFlags() throws {
        #expect(try options(["seek", "-5"]).operands == ["-5"])
        #expect(try options(["queue", "add", "--next", "a.flac"]).operands == ["add", "--next", "a.flac"])
    }

    @Test("The password: --password over TUTTI_PASSWORD; an empty variable is none")
    func password() throws {
        #expect(try options(["status"], environment: ["TUTTI_PASSWORD": "s3cret"]).password == "s3cret")
        #expect(try options(["status", "--password", "other"], environment: ["TUTTI_PASSWORD": "s3cret"]).password == "other")
        #expect(try options(["status"], environment: ["TUTTI_PASSWORD": ""]).password == nil)
    }

    @Test("A flag without its value says what it needs", arguments: [
        (["status", "--host"], "--host needs a value"),
        (["status", "--port"], "--port needs a number 1–65535"),
        (["status", "--port", "70000"], "--port needs a number 1–65535"),
        (["status", "--port", "x"], "--port needs a number 1–65535"),
        (["status", "--group"], "--group needs a group id or name"),
        (["status", "--leader"], "--leader needs a name"),
        (["status", "--password"], "--password needs a value"),
    ])
    func missingValues(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try CLIRequest.parse(arguments) }
    }

    @Test("Help: the whole text, or the lines of one command; no command is the text with exit 64")
    func help() throws {
        #expect(try CLIRequest.parse(["--help"]) == .print(CLIUsage.text, exitCode: 0))
        #expect(try CLIRequest.parse(["help"]) == .print(CLIUsage.text, exitCode: 0))
        #expect(try CLIRequest.parse([]) == .print(CLIUsage.text, exitCode: 64))
        #expect(try CLIRequest.parse(["--json"]) == .print(CLIUsage.text, exitCode: 64))
        guard case .print(let text, 0) = try CLIRequest.parse(["eq", "--help"]) else { Issue.record("no help"); return }
        let lines = text.split(separator: "\n")
        #expect(lines.first == "usage: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--json]")
        #expect(lines.count == 7 && lines.dropFirst().allSatisfy { $0.drop { $0 == " " }.hasPrefix("eq") })
        // A word that starts no usage line gets the whole text.
        #expect(try CLIRequest.parse(["frobnicate", "-h"]) == .print(CLIUsage.text, exitCode: 0))
        #expect(try CLIRequest.parse(["--version"]) == .version)
    }
}

@Suite("tutti: what it prints")
struct CLIFormattingTests {
    @Test("M:SS, rounded down")
    func clockText() {
        #expect(clock(0) == "0:00" && clock(59.99) == "0:59" && clock(61) == "1:01" && clock(3_725.5) == "62:05")
    }

    @Test("A playing track: artist, title, album, position bar, buffering, then the play options")
    func statusLine() {
        let status: JSONValue = [
            "state": "play", "file": "/music/a/01 song.flac", "title": "Song", "artist": "Band", "album": "Record",
            "track": 2, "trackCount": 10, "position": 45.0, "duration": 180.0,
            "bufferedSeconds": 12.34, "shuffle": true, "repeat": "all", "single": "oneshot", "consume": true,
            "speed": 1.25, "remaining": 108.0, "pitch": -2.0, "error": "stall",
        ]
        #expect(describeStatus(status) == """
            play: Band — Song [Record] (track 3/10) 0:45/3:00 [#######-----------------------] (buffered: 12.3 s ahead)
              shuffle on, repeat all, single oneshot, consume on, speed 1.25×, ends in 1:48, pitch -2.0
              last error: stall
            """)
    }

    @Test("Without tags the file name; without options no second line")
    func statusWithoutTags() {
        #expect(describeStatus(["state": "stop", "file": "/music/x/track.mp3", "track": 0, "trackCount": 1]) == "stop: track.mp3 (track 1/1) 0:00")
        #expect(describeStatus([:]) == "?: ? (track 1/0) 0:00")
    }

    @Test("A room: group, volume, mute, trim and sync health")
    func room() {
        let room: JSONValue = [
            "name": "kitchen", "group": "g2", "groupName": "Upstairs", "volume": 40, "muted": true, "latencyMs": -12.5,
            "health": ["outputErrorUs": 3.25, "bufferMs": 998.0, "ratioPpm": -1.5, "rttUs": 420.0, "underruns": 1, "hardResyncs": 0],
        ]
        #expect(describeRoom(room) == "kitchen [Upstairs]: volume 40 (muted), latency -12.5 ms, sync +3.2 µs, buffer 998 ms, ratio -1.5 ppm, rtt 420 µs, underruns 1, resyncs 0")
        #expect(describeRoom(["name": "hall", "group": "main", "volume": 100]) == "hall: volume 100")
        #expect(describeRoom(["name": "porch", "volume": 80, "health": ["outputErrorUs": 1.0, "bufferMs": 950.0, "streamDelayMaxMs": 212.4]])
                == "porch: volume 80, sync +1.0 µs, buffer 950 ms, ratio +0.0 ppm, rtt 0 µs, underruns 0, resyncs 0, stream up to 212 ms late")
    }

    @Test("An equaliser: bands, shelves and the preamp")
    func equalizer() {
        let eq: JSONValue = ["preset": "Bass", "gains": [6.0, 5, 4, 2, 0, 0, 0, 0, 0, -1], "bass": 3.0, "treble": 0.0,
                                 "preamp": "auto", "preampDb": -6.5]
        #expect(describeEqualizer("kitchen", eq) == """
            kitchen: EQ Bass
              32 +6  64 +5  125 +4  250 +2  500 +0  1k +0  2k +0  4k +0  8k +0  16k -1
              bass +3, treble +0, preamp auto (-6.5 dB)
            """)
        #expect(describeEqualizer("hall", ["flat": true, "gains": JSONValue([Double](repeating: 0, count: 10))]).hasPrefix("hall: EQ custom (flat: bypassed)\n"))
    }

    @Test("A group: rooms and what it plays")
    func group() {
        #expect(describeGroup(["id": "g2", "name": "Upstairs", "rooms": ["bed", "bath"], "state": "play", "artist": "Band", "title": "Song"])
                == "Upstairs (g2): bed, bath — play: Band — Song")
        #expect(describeGroup(["id": "g3", "name": "Empty", "rooms": [], "state": "stop"]) == "Empty (g3): no rooms — stop")
    }

    @Test("Leaders found over mDNS: a line each, and their JSON")
    func leaders() {
        let here = DiscoveredLeader(name: "Living room", hostName: "pi.local", address: "192.168.1.20", port: 4_953,
                                    txt: ["control": "4954", "mpd": "6600"], isLocal: true)
        let there = DiscoveredLeader(name: "Attic", hostName: "attic.local", address: "192.168.1.30", port: 4_953, txt: [:], isLocal: false)
        #expect(describeLeaders([]) == "no leaders found over mDNS")
        #expect(describeLeaders([here, there]) == "Living room\t192.168.1.20:4953  control 4954  mpd 6600  (this machine)\nAttic\t192.168.1.30:4953")
        #expect(jsonText(describeLeader(there)) == """
            {
              "address" : "192.168.1.30",
              "hostName" : "attic.local",
              "local" : false,
              "name" : "Attic",
              "port" : 4953
            }
            """)
    }
}

@Suite("tutti podcast: what it prints")
struct PodcastFormattingTests {
    @Test("A show: id, title, counts, author, the last refresh's failure")
    func show() {
        #expect(describePodcast(["id": 3, "title": "Morning", "episodes": 12, "unplayed": 4, "author": "Kim"]) == "3\tMorning\t12 episodes, 4 unplayed\tKim")
        #expect(describePodcast(["id": 1, "title": "T", "episodes": 1, "unplayed": 0, "refreshError": "HTTP 404"]) == "1\tT\t1 episode, 0 unplayed\t(last refresh failed: HTTP 404)")
    }

    @Test("An episode: its mark, date, how far in, title")
    func episode() {
        // 2024-01-03 09:30 UTC.
        #expect(describeEpisode(["id": 7, "title": "New one", "published": 1_704_274_200_000, "duration": 2_400.0, "position": 0.0, "played": false])
                == "7\t·\t2024-01-03\t40:00\tNew one")
        #expect(describeEpisode(["id": 8, "title": "Half", "duration": 3_725.0, "position": 65.2, "played": false]) == "8\t▶\t\t1:05/62:05\tHalf")
        #expect(describeEpisode(["id": 9, "title": "Done", "duration": 60.0, "position": 58.0, "played": true]) == "9\t✓\t\t1:00\tDone")
    }
}
