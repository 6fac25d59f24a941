import Testing
import TuttiCLI
import TuttiCore

@Suite("tutti: commands from their words")
struct CLICommandTests {
    func command(_ words: String..., group: String? = nil) throws(UsageError) -> CLICommand {
        var options = CLIOptions(command: words[0])
        options.operands = Array(words.dropFirst())
        options.group = group
        return try CLICommand(options, workingDirectory: "/home/anna")
    }

    func usage(_ words: String..., group: String? = nil) -> String? {
        var options = CLIOptions(command: words[0])
        options.operands = Array(words.dropFirst())
        options.group = group
        do { _ = try CLICommand(options, workingDirectory: "/home/anna"); return nil } catch { return error.message }
    }

    @Test("Player commands")
    func player() throws {
        #expect(try command("status") == .status)
        #expect(try command("play") == .player(method: "player.play"))
        #expect(try command("stop") == .player(method: "player.stop"))
        #expect(try command("prev") == .player(method: "player.previous"))
        #expect(try command("previous") == .player(method: "player.previous"))
        #expect(try command("next") == .player(method: "player.next"))
        #expect(try command("seek", "-5") == .seek(-5, relative: true))
        #expect(try command("seek", "+2.5") == .seek(2.5, relative: true))
        #expect(try command("seek", "90") == .seek(90, relative: false))
        #expect(try command("speed") == .speed(nil) && command("speed", "1.25") == .speed(1.25))
        #expect(try command("pitch", "-2") == .pitch(-2))
        #expect(try command("shuffle") == .shuffle(nil) && command("shuffle", "on") == .shuffle(true))
        #expect(try command("consume", "off") == .consume(false))
        #expect(try command("repeat") == .repeatMode(nil) && command("repeat", "one") == .repeatMode("one"))
        #expect(try command("single", "once") == .single("oneshot"))
    }

    @Test("Queue, library and playlists; relative files from the working directory")
    func queueAndLibrary() throws {
        #expect(try command("queue") == .queue(.list))
        #expect(try command("queue", "add", "--next", "a.flac", "/m/b.mp3", "http://x/s") ==
                .queue(.add(uris: ["/home/anna/a.flac", "/m/b.mp3", "http://x/s"], next: true)))
        #expect(try command("queue", "add-search", "blue", "train") == .queue(.addSearch("blue train")))
        #expect(try command("queue", "add-playlist", "x") == .queue(.addPlaylist(-1)))
        #expect(try command("queue", "del", "1") == .queue(.remove(index: 0)))
        #expect(try command("queue", "move", "3", "1") == .queue(.move(from: 2, to: 0)))
        #expect(try command("queue", "play", "2") == .queue(.play(index: 1)))
        #expect(try command("search", "artist:x", "y") == .search("artist:x y"))
        #expect(try command("searches", "clear") == .searches(clear: true))
        #expect(try command("like") == .like(trackID: nil) && command("unlike", "7") == .unlike(trackID: 7))
        #expect(try command("favorites") == .favourites && command("history") == .history)
        #expect(try command("library", "scan", "/srv") == .libraryScan(folder: "/srv"))
        #expect(try command("playlist", "rename", "4", "Road", "trip") == .playlist(.rename(id: 4, name: "Road trip")))
        #expect(try command("playlist", "import", "mix.m3u") == .playlist(.importFile(path: "/home/anna/mix.m3u", name: nil)))
        // A bare name is the leader's playlist folder; a path is from here.
        #expect(try command("playlist", "export", "4", "mix.m3u") == .playlist(.export(id: 4, path: "mix.m3u")))
        #expect(try command("playlist", "export", "4", "out/mix.m3u") == .playlist(.export(id: 4, path: "/home/anna/out/mix.m3u")))
        #expect(try command("cache", "add", "http://x/a.mp3") == .cache(.add(url: "http://x/a.mp3")))
        #expect(try command("cache") == .cache(.list))
    }

    @Test("Podcasts, speakers, rooms, groups, party")
    func theRest() throws {
        #expect(try command("podcast", "play", "Morning", "Episode", "3") == .podcast(.play(podcast: "Morning", episode: "Episode 3")))
        #expect(try command("podcasts", "speed", "Morning", "none") == .podcast(.setSpeed(podcast: "Morning", nil)))
        #expect(try command("podcast", "unplayed", "M", "E") == .podcast(.setPlayed(podcast: "M", episode: "E", false)))
        #expect(try command("podcast", "refresh") == .podcast(.refresh(podcast: nil)))
        #expect(try command("speakers") == .speakers(.list))
        #expect(try command("speakers", "allow", "den") == .speakers(.decide(verb: "allow", name: "den")))
        #expect(try command("speakers", "pair", "123", "456") == .speakers(.pair(code: "123456")))
        #expect(try command("speakers", "code", "123", "456") == .speakers(.sendspinCode(code: "123456", name: nil)))
        #expect(try command("speakers", "code", "1234-5678", "Living", "room") == .speakers(.sendspinCode(code: "1234-5678", name: "Living room")))
        #expect(try command("speakers", "code", "123", "456", "2nd", "floor") == .speakers(.sendspinCode(code: "123456", name: "2nd floor")))
        #expect(try command("vol", "kitchen", "40") == .roomVolume(room: "kitchen", 40))
        #expect(try command("vol", "40", group: "Upstairs") == .groupVolume(group: "Upstairs", 40))
        #expect(try command("mute", group: "Home") == .groupMute(group: "Home", true))
        #expect(try command("unmute", "den") == .roomMute(room: "den", false))
        #expect(try command("latency", "den", "-12.5") == .roomLatency(room: "den", milliseconds: -12.5))
        #expect(try command("group", "new", "Up", "a", "b") == .group(.create(name: "Up", rooms: ["a", "b"])))
        #expect(try command("groups") == .group(.list))
        #expect(try command("party") == .party(.on(group: nil)) && command("party", "on", "Up") == .party(.on(group: "Up")))
        #expect(try command("leaders", "500") == .leaders(seconds: 60) && command("discover") == .leaders(seconds: 2))
        #expect(try command("doctor", "--config", "/etc/x") == .doctor(["--config", "/etc/x"]))
        #expect(try command("watch") == .watch)
    }

    @Test("channels, pair, unpair: a room's channel map and stereo pairs")
    func channels() throws {
        #expect(try command("channels", "den", "mono") == .channels(room: "den", map: "mono"))
        #expect(try command("channels", "den") == .channels(room: "den", map: nil))
        #expect(try command("pair", "living-l", "living-r") == .pair(left: "living-l", right: "living-r", name: nil))
        #expect(try command("pair", "living-l", "living-r", "Living room") == .pair(left: "living-l", right: "living-r", name: "Living room"))
        #expect(try command("pair", "swap", "Living room") == .swapPair("Living room"))
        #expect(try command("unpair", "Living room") == .unpair("Living room"))
        #expect(usage("pair", "living-l") == "pair LEFT RIGHT [NAME]")
        #expect(usage("unpair") == "unpair NAME (the pair's name, or either speaker's)")
        #expect(usage("channels", "den", "left", "right") == "channels ROOM stereo|left|right|mono|swap")
    }

    @Test("reverb: ROOM, then a preset (its words), then a mix; off; the mix alone; nothing (show)")
    func reverb() throws {
        #expect(try command("reverb", "kitchen", "Hall", "30") == .reverb(room: "kitchen", preset: "Hall", mix: 30))
        #expect(try command("reverb", "kitchen", "Large", "hall", "30%") == .reverb(room: "kitchen", preset: "Large hall", mix: 30))
        #expect(try command("reverb", "kitchen", "off") == .reverb(room: "kitchen", preset: "off", mix: nil))
        #expect(try command("reverb", "kitchen", "45") == .reverb(room: "kitchen", preset: nil, mix: 45))
        #expect(try command("reverb", "kitchen") == .reverb(room: "kitchen", preset: nil, mix: nil))
        #expect(usage("reverb", "kitchen", "Hall", "nan") == "reverb needs ROOM, then a preset (Small room, Medium room, Large hall, Plate, Cathedral) or off, and a mix 0–100")
    }

    @Test("announce: rooms, a group or all; text (with --lang) or --url; volume and duck")
    func announce() throws {
        var dinner = CLICommand.Announce()
        dinner.rooms = ["kitchen", "living"]
        dinner.text = "Dinner is ready"
        #expect(try command("announce", "--rooms", "kitchen,living", "Dinner is ready") == .announce(dinner))
        #expect(try command("announce", "--rooms", "kitchen,living", "Dinner", "is", "ready") == .announce(dinner))
        var bell = CLICommand.Announce()
        bell.all = true
        bell.url = "/home/anna/bell.wav"
        bell.volume = 40
        bell.duckDecibels = -30
        #expect(try command("announce", "--all", "--url", "bell.wav", "--volume", "40", "--duck", "30") == .announce(bell))
        var korean = CLICommand.Announce()
        korean.group = "Up"
        korean.text = "저녁 먹어요"
        korean.language = "ko"
        #expect(try command("announce", "--lang", "ko", "저녁 먹어요", group: "Up") == .announce(korean))
        #expect(usage("announce", "hello") == "announce needs one of --rooms R1,R2, --all or --group GROUP")
        #expect(usage("announce", "--all") == "announce needs TEXT or --url URL (not both)")
        #expect(usage("announce", "--all", "--url", "http://x/y.mp3", "hi") == "announce needs TEXT or --url URL (not both)")
        #expect(usage("announce", "--all", "--volume", "200", "hi") == "--volume needs 0–100")
    }

    @Test("eq: a preset, gains, shelves and preamp; `bass` alone is a preset; later words win")
    func equalizer() throws {
        #expect(try command("eq", "den") == .eq(.show(room: "den")))
        #expect(try command("eq", "presets") == .eq(.presets))
        var change = CLICommand.Equalizer.Change()
        change.preset = "Rock"; change.bass = 3; change.preamp = .decibels(-4)
        #expect(try command("eq", "den", "Bass", "bass", "3", "Rock", "preamp", "-4") == .eq(.set(room: "den", change)))
        var bassPreset = CLICommand.Equalizer.Change()
        bassPreset.preset = "bass"
        #expect(try command("eq", "den", "bass") == .eq(.set(room: "den", bassPreset)))
        var gains = CLICommand.Equalizer.Change()
        gains.gains = [1, 2, 3, 4, 5, 6, 5, 4, 3, 2]; gains.preamp = .auto
        #expect(try command("eq", "den", "1, 2,3,4,5,6,5,4,3,2", "preamp", "auto") == .eq(.set(room: "den", gains)))
        #expect(try command("eq", "save", "Mine", "0,0,0,0,0,0,0,0,0,1") == .eq(.save(name: "Mine", from: .gains([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))))
        #expect(try command("eq", "save", "Mine", "den") == .eq(.save(name: "Mine", from: .room("den"))))
    }

    @Test("calibrate: play rooms, analyse a recording against rooms or a plan file")
    func calibrate() throws {
        #expect(try command("calibrate", "--play", "kitchen, living room") == .calibrate(.play(rooms: ["kitchen", "living room"], slotMilliseconds: nil)))
        #expect(try command("calibrate", "--play", "a,b", "--slot-ms", "3000") == .calibrate(.play(rooms: ["a", "b"], slotMilliseconds: 3_000)))
        #expect(try command("calibrate", "--analyse", "rec.wav", "--rooms", "a,b", "--apply")
            == .calibrate(.analyse(recording: "/home/anna/rec.wav", plan: nil, rooms: ["a", "b"], slotMilliseconds: nil, apply: true)))
        #expect(try command("calibrate", "--analyze", "/tmp/r.wav", "--plan", "plan.json", "--eq")
            == .calibrate(.analyse(recording: "/tmp/r.wav", plan: "/home/anna/plan.json", rooms: nil, slotMilliseconds: nil, apply: false, equalise: true)))
        #expect(usage("calibrate") == "calibrate needs --play ROOMS or --analyse RECORDING.wav")
        #expect(usage("calibrate", "--analyse", "r.wav") == "calibrate --analyse needs --rooms ROOM,ROOM... (as played) or --plan PLAN.json")
        #expect(usage("calibrate", "--play", "a", "--slot-ms", "100") == "--slot-ms is 1500–10000")
    }

    @Test("What a bad command line is told (exit 64)")
    func usageErrors() {
        #expect(usage("frobnicate") == "unknown command 'frobnicate' (tutti --help)")
        #expect(usage("--version") == "unknown command '--version' (tutti --help)")
        #expect(usage("seek", "later") == "seek needs SECONDS, +SECONDS or -SECONDS")
        #expect(usage("seek", "nan") == "seek needs SECONDS, +SECONDS or -SECONDS")
        #expect(usage("speed", "fast") == "speed needs a number, 0.5–2.0 (1 is normal)")
        #expect(usage("shuffle", "yes") == "shuffle takes on or off")
        #expect(usage("repeat", "twice") == "repeat takes off, all or one")
        #expect(usage("single", "twice") == "single takes on, off or oneshot")
        #expect(usage("queue", "del", "0") == "queue positions are numbers from 1")
        #expect(usage("queue", "add") == "queue add needs files or URLs")
        #expect(usage("queue", "add-album") == "add-album needs an argument")
        #expect(usage("queue", "shuffle") == "unknown queue command 'shuffle'")
        #expect(usage("search") == "search needs text")
        #expect(usage("like", "x") == "like takes a track id")
        #expect(usage("library") == "library scan [DIR]")
        #expect(usage("playlist", "show") == "playlist show needs a playlist id")
        #expect(usage("playlist", "rename", "x", "y") == "playlist rename needs a playlist id")
        #expect(usage("cache", "fetch") == "unknown cache command 'fetch'")
        #expect(usage("podcast", "speed", "x") == "podcast speed NAME 0.5-2.0|none")
        #expect(usage("podcast", "x") == "unknown podcast command 'x' (tutti podcast --help)")
        #expect(usage("speakers", "pair") == "speakers pair CODE (the six digits `sudo tutti-follower pair` shows)")
        #expect(usage("speakers", "kick") == "unknown speakers command 'kick' (list, allow, deny, pair, code, forget)")
        #expect(usage("speakers", "code") == UserMessage(.cliSpeakersCodeNeeds).description)
        #expect(usage("speakers", "code", "Den") == UserMessage(.cliSpeakersCodeNeeds).description)
        #expect(usage("vol", "den", "101") == "vol needs ROOM and a volume 0–100")
        #expect(usage("vol", group: "Up") == "vol --group GROUP needs a volume 0–100")
        #expect(usage("mute") == "mute needs a room name")
        #expect(usage("latency", "den", "x") == "latency needs ROOM and milliseconds")
        #expect(usage("eq") == "eq needs ROOM (or: eq presets)")
        #expect(usage("eq", "den", "preamp", "loud") == "eq ROOM preamp needs auto or dB")
        #expect(usage("eq", "save", "x") == "eq save NAME ROOM | eq save NAME g1,…,g10")
        #expect(usage("group", "add", "Up") == "group add GROUP ROOM...")
        #expect(usage("group", "split") == "unknown group command 'split' (tutti group --help)")
        #expect(usage("party", "sideways") == "party [on [GROUP]|off|status]")
    }

    @Test("runTutti returns the exit code (main exits): 64 usage, 2 no leader, 0 help")
    func exitCodes() {
        #expect(runTutti(["frobnicate", "--port", "1"], environment: [:]) == 64)
        #expect(runTutti(["seek", "later", "--port", "1"], environment: [:]) == 64)
        #expect(runTutti(["--port", "1", "status"], environment: [:]) == 2)
        #expect(runTutti(["--version"], environment: [:]) == 0)
    }

    @Test("The help lists each command's usage lines, the summaries in one column")
    func helpFromTheTable() {
        let lines = CLIUsage.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.contains("  seek SECONDS | +S | -S absolute or relative seek in the current track"))
        #expect(lines.contains("  queue add-search TEXT  add every track a search finds (also: add-album ALBUM, add-playlist ID)"))
        #expect(lines.contains("  single [on|off|oneshot]   stop after the current track (toggle, every time, or once)"))
        #expect(lines.contains("  play | pause | toggle | stop"))
        #expect(lines.contains(String(repeating: " ", count: 25) + "leader, clock, buttons) with the settings tutti-follower uses; says how to fix each fault"))
        // Every command the help names parses (given operands that make it whole).
        for word in ["status", "play", "pause", "toggle", "stop", "next", "prev", "seek", "speed", "pitch", "shuffle", "repeat", "single",
                     "consume", "queue", "search", "searches", "like", "unlike", "favorites", "history", "library", "playlist", "cache",
                     "podcast", "rooms", "speakers", "vol", "mute", "unmute", "eq", "latency", "group", "party", "watch", "leaders", "doctor"] {
            #expect(lines.contains { $0.hasPrefix("  ") && $0.contains(word) }, "\(word) is not in the help")
            #expect(usage(word) != "unknown command '\(word)' (tutti --help)")
        }
    }
}

@Suite("tutti --json: the text JSONSerialization printed")
struct JSONTextTests {
    @Test("Indented objects and arrays, empty ones, numbers, escapes")
    func layout() {
        let value: JSONValue = ["b": [], "a": [:], "n": [1, 2.5, 0.1, 1e-7, 1e21, 12.34, -0.0, 3.0, 123_456_789_012],
                                "s": "a/b\"c\\d\u{01}\n\t\u{08}\u{0C}\r\u{1F} é😀", "t": true, "nil": .null, "nest": [["x": [[:]]]]]
        #expect(jsonText(value) == """
            {
              "a" : {

              },
              "b" : [

              ],
              "n" : [
                1,
                2.5,
                0.1,
                1e-07,
                1e+21,
                12.34,
                -0,
                3,
                123456789012
              ],
              "nest" : [
                {
                  "x" : [
                    {

                    }
                  ]
                }
              ],
              "nil" : null,
              "s" : "a\\/b\\"c\\\\d\\u0001\\n\\t\\b\\f\\r\\u001f é😀",
              "t" : true
            }
            """)
        #expect(jsonText("x/y") == "\"x\\/y\"" && jsonText(.number(5)) == "5" && jsonText(false) == "false")
    }

    @Test("Keys as .sortedKeys had them: punctuation, digits by value, letters without case, lower case first")
    func keyOrder() {
        let keys = ["z", "x10y", "x02y", "x2y", "health", "hardResyncs", "bufferMs", "buffered", "aB", "ab", "a1", "a-b", "a_b", "A", "a", "1", " ", ""]
        let object = JSONValue.object(Dictionary(uniqueKeysWithValues: keys.map { ($0, JSONValue(0)) }))
        let order = jsonText(object).split(separator: "\n").dropFirst().dropLast().map { $0.split(separator: "\"", omittingEmptySubsequences: false)[safe: 1].map(String.init) ?? "?" }
        // What JSONSerialization printed for these keys (swift-corelibs-foundation, Swift 6.3).
        #expect(order == ["", " ", "1", "a", "A", "a_b", "a-b", "a1", "ab", "aB", "buffered", "bufferMs", "hardResyncs", "health", "x2y", "x02y", "x10y", "z"])
    }

    @Test("Numbers as printf writes them, in the C locale")
    func numbers() {
        #expect(describeRoom(["name": "a", "volume": 5, "latencyMs": 2.25]) == "a: volume 5, latency +2.2 ms")
        #expect(describeStatus(["state": "play", "bufferedFraction": 0.425]) == "play: ? (track 1/0) 0:00 (buffered: 42% downloaded)")
    }
}

private extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
