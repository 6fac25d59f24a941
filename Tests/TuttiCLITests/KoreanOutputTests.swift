import Testing
@testable import TuttiCLI
import TuttiCore
import TuttiDiscovery

/// English a translation forgot: the words of three or more ASCII letters in
/// `text` once its placeholders, `backquoted` commands, `--options` and
/// `allowed` words (data put in, units, names, command syntax) are taken out. A word in capitals
/// is syntax or a name (ROOM, URL, WAV) and stays.
func leftoverEnglish(_ text: String, allowing allowed: Set<String>) -> [String] {
    var plain = ""
    var inCode = false, inPlaceholder = false
    for c in text {
        if c == "`" { inCode.toggle(); plain.append(" "); continue }
        if c == "{" { inPlaceholder = true; continue }
        if c == "}" && inPlaceholder { inPlaceholder = false; plain.append(" "); continue }
        if !inCode && !inPlaceholder { plain.append(c) }
    }
    let isWordCharacter: (Character) -> Bool = { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "µ" }
    var words: [String] = [], word = ""
    for c in plain + " " {
        if isWordCharacter(c) { word.append(c); continue }
        if !word.isEmpty { words.append(word); word = "" }
    }
    // An option (`--lang`) is syntax.
    return words.filter { !$0.hasPrefix("--") }.map { String($0.drop { $0 == "-" }.reversed().drop { $0 == "-" }.reversed()) }.filter { w in
        var run = 0, longest = 0
        for c in w { run = c.isASCII && c.isLetter ? run + 1 : 0; longest = max(longest, run) }
        guard longest >= 3, !allowed.contains(w) else { return false }
        return w.contains { $0.isLowercase } // ROOM, URL, WAV: syntax and names
    }
}

/// Units, and names that are no English to translate.
let unitsAndNames: Set<String> = ["ms", "µs", "dB", "dBFS", "ppm", "Hz", "kHz", "MiB", "MB", "RT60", "mDNS", "Sendspin", "Tutti", "tutti",
                                  "tuttid", "tutti-follower", "espeak-ng", "avahi-daemon", "Atom", "sudo"]

/// Every word of the command syntax `tutti --help` shows (`queue add-search TEXT`),
/// and what else a summary names as it is typed: filters, presets, flags' values.
let commandSyntax: Set<String> = {
    var words = Set(CLICommandTable.rows.flatMap(\.help).flatMap { leftoverEnglish($0.usage, allowing: []) })
    words.formUnion(["artist", "album", "title", "genre", "add-album", "add-playlist", "prev", "mute", "unmute", "Tuned", "hall",
                     "Flat", "Bass", "Treble", "Vocal", "Electronic", "Rock", "Pop", "Jazz", "Classical", "Loudness",
                     "Small", "room", "Medium", "Large", "Plate", "Cathedral", "ko", "HOST", "PORT", "wav", "json", "m3u"])
    return words
}()

@Suite("tutti in Korean: what it prints comes from the catalogue")
struct KoreanOutputTests {
    let status: JSONValue = [
        "state": "play", "file": "/music/a/01 song.flac", "title": "Song", "artist": "Band", "album": "Record",
        "track": 2, "trackCount": 10, "position": 45.0, "duration": 180.0,
        "bufferedSeconds": 12.34, "bufferedFraction": 0.5, "shuffle": true, "repeat": "all", "single": "oneshot", "consume": true,
        "speed": 1.25, "remaining": 108.0, "pitch": -2.0, "error": "stall",
    ]
    let room: JSONValue = [
        "name": "kitchen", "group": "g2", "groupName": "Upstairs", "volume": 40, "muted": true, "latencyMs": -12.5, "channels": "mono",
        "reverb": ["off": false, "preset": "Large hall", "mix": 30.0, "decaySeconds": 1.8],
        "health": ["outputErrorUs": 3.25, "bufferMs": 998.0, "ratioPpm": -1.5, "rttUs": 420.0, "underruns": 1, "hardResyncs": 0, "streamDelayMaxMs": 212.4],
    ]
    let pair: JSONValue = [
        "name": "Living", "volume": 70, "pair": ["left": "west", "right": "east"],
        "speakers": [["name": "west", "side": "left", "latencyMs": 1.5, "connected": true], ["name": "east", "side": "right", "connected": false]],
    ]
    let customReverb: JSONValue = ["off": false, "mix": 20.0, "size": 0.5, "damping": 0.25, "decaySeconds": 1.2]
    let eq: JSONValue = ["gains": [6.0, 5, 4, 2, 0, 0, 0, 0, 0, -1], "flat": true, "bass": 3.0, "treble": 0.0, "preamp": "manual", "preampDb": -6.5]
    let group: JSONValue = ["id": "g2", "name": "Upstairs", "rooms": [], "state": "pause", "artist": "Band", "title": "Song"]
    let leader = DiscoveredLeader(name: "Living room", hostName: "pi.local", address: "192.168.1.20", port: 4_953,
                                  txt: ["control": "4954", "mpd": "6600"], isLocal: true)
    let podcasts: [JSONValue] = [["id": 3, "title": "Morning", "episodes": 12, "unplayed": 4, "author": "Kim", "refreshError": "HTTP 404"],
                                 ["id": 1, "title": "Morning", "episodes": 1, "unplayed": 0]]

    let scan: JSONValue = ["added": 3, "updated": 1, "unchanged": 120, "removed": 0, "moved": 2, "skipped": [["path": "/m/x.txt", "reason": "not audio"]],
                           "seconds": 1.234, "summary": "3 added, 1 updated, 120 unchanged, 2 moved, 0 removed, 1 skipped in 1.23 s"]

    /// Every describe* rendering of the inputs above, with the data put in.
    func renderings(_ language: Language) -> [(what: String, text: String, data: Set<String>)] {
        [
            ("describeStatus", describeStatus(status, language: language), ["Band", "Song", "Record", "stall"]),
            ("describeRoom", describeRoom(room, language: language), ["kitchen", "Upstairs", "Large", "hall"]),
            ("describeRoom (a pair)", describeRoom(pair, language: language), ["Living", "west", "east"]),
            ("describeReverb", describeReverb(customReverb, language: language), []),
            ("describeReverb (off)", describeReverb(["off": true], language: language), []),
            ("describeEqualizer", describeEqualizer("kitchen", eq, language: language), ["kitchen"]),
            ("describeGroup", describeGroup(group, language: language), ["Upstairs", "Band", "Song"]),
            ("describeLeaders", describeLeaders([leader], language: language), ["Living", "room"]),
            ("describeLeaders (none)", describeLeaders([], language: language), []),
            ("describeScan", describeScan(scan, language: language), []),
            ("describePodcast", podcasts.map { describePodcast($0, language: language) }.joined(separator: "\n"), ["Morning", "Kim", "HTTP"]),
        ]
    }

    @Test("Each describe* function in Korean: no English left but the data")
    func describeInKorean() {
        for (what, text, data) in renderings(.korean) {
            #expect(leftoverEnglish(text, allowing: data.union(unitsAndNames)) == [], "\(what): \(text)")
        }
        // The check sees English: each English rendering but the bare "off" has words it would flag.
        for (what, text, data) in renderings(.english) where text != "off" {
            #expect(leftoverEnglish(text, allowing: data.union(unitsAndNames)) != [], "\(what): \(text)")
        }
    }

    @Test("Korean lines read as the catalogue has them")
    func koreanLines() {
        #expect(describeRoom(room, language: .korean) == "kitchen [Upstairs]: 음량 40 (음소거), 모노 재생, 잔향 Large hall, 믹스 30 % (RT60 1.8초), 지연 보정 -12.5 ms, "
                + "동기 오차 +3.2 µs, 버퍼 998 ms, 속도 비 -1.5 ppm, 왕복 420 µs, 버퍼 부족 1회, 재동기 0회, 스트림 최대 212 ms 늦음")
        #expect(describeStatus(status, language: .korean) == """
            재생 중: Band — Song [Record] (10곡 중 3번째) 0:45/3:00 [#######-----------------------] (버퍼: 12.3초 분량, 50% 받음)
              무작위 재생 켜짐, 반복 전체, 한 곡 후 정지 한 번만, 재생한 곡 빼기 켜짐, 속도 1.25×, 1:48 후 끝남, 음높이 -2.0
              마지막 오류: stall
            """)
        #expect(describeGroup(group, language: .korean) == "Upstairs (g2): 방 없음 — 일시 정지: Band — Song")
        #expect(describeLeaders([], language: .korean) == "mDNS로 찾은 리더가 없습니다")
        #expect(describeScan(scan, language: .korean) == "추가 3, 갱신 1, 그대로 120, 이동 2, 삭제 0, 건너뜀 1 (1.23초 걸림)")
        #expect(describeScan(["summary": "3 added in 1 s"], language: .korean) == "3 added in 1 s", "an older leader's summary as it came")
    }

    @Test("English is what it always was")
    func englishUnchanged() {
        #expect(describeRoom(room) == describeRoom(room, language: .english))
        #expect(describeRoom(room) == "kitchen [Upstairs]: volume 40 (muted), plays mono, reverb Large hall at 30 % (RT60 1.8 s), latency -12.5 ms, "
                + "sync +3.2 µs, buffer 998 ms, ratio -1.5 ppm, rtt 420 µs, underruns 1, resyncs 0, stream up to 212 ms late")
        #expect(describeRoom(pair) == "Living: volume 70, stereo pair: west left +1.5 ms, east right (offline)")
        #expect(describeReverb(customReverb) == "custom (size 0.50, damping 0.25) at 20 % (RT60 1.2 s)")
        #expect(describeReverb(["off": true]) == "off")
        #expect(describeStatus(status) == """
            play: Band — Song [Record] (track 3/10) 0:45/3:00 [#######-----------------------] (buffered: 12.3 s ahead, 50% downloaded)
              shuffle on, repeat all, single oneshot, consume on, speed 1.25×, ends in 1:48, pitch -2.0
              last error: stall
            """)
        #expect(describeEqualizer("kitchen", eq) == """
            kitchen: EQ custom (flat: bypassed)
              32 +6  64 +5  125 +4  250 +2  500 +0  1k +0  2k +0  4k +0  8k +0  16k -1
              bass +3, treble +0, preamp manual (-6.5 dB)
            """)
        #expect(describeGroup(group) == "Upstairs (g2): no rooms — pause: Band — Song")
        #expect(describePodcast(podcasts[0]) == "3\tMorning\t12 episodes, 4 unplayed\tKim\t(last refresh failed: HTTP 404)")
        #expect(describeScan(scan) == "3 added, 1 updated, 120 unchanged, 2 moved, 0 removed, 1 skipped in 1.23 s", "the leader's summary")
        #expect(describeLeaders([leader]) == "Living room\t192.168.1.20:4953  control 4954  mpd 6600  (this machine)")
        #expect(CLIUsage.text == CLIUsage.text(in: .english))
        #expect(CLIUsage.text == englishHelp, "the help as tutti printed it before the catalogue")
    }

    @Test("tutti --help and tutti COMMAND --help in Korean: the syntax as typed, the rest translated")
    func helpInKorean() throws {
        let korean = CLIUsage.text(in: .korean)
        #expect(korean.hasPrefix("사용법: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--password P] [--json] COMMAND [ARGS]\n"))
        #expect(leftoverEnglish(korean, allowing: commandSyntax.union(unitsAndNames)) == [])
        #expect(leftoverEnglish(englishHelp, allowing: commandSyntax.union(unitsAndNames)) != [], "the check sees English")
        // Same lines, same usage column: only the words after it differ.
        let english = CLIUsage.text.split(separator: "\n", omittingEmptySubsequences: false)
        let lines = korean.split(separator: "\n", omittingEmptySubsequences: false)
        for row in CLICommandTable.rows.flatMap(\.help) {
            #expect(lines.contains { $0.hasPrefix("  " + row.usage) } && english.contains { $0.hasPrefix("  " + row.usage) }, "\(row.usage)")
        }
        #expect(try CLIRequest.parse(["--help"], language: .korean) == .print(korean, exitCode: 0))
        #expect(try CLIRequest.parse([], language: .korean) == .print(korean, exitCode: 64))
        guard case .print(let eq, 0) = try CLIRequest.parse(["eq", "--help"], language: .korean) else { Issue.record("no help"); return }
        let eqLines = eq.split(separator: "\n")
        #expect(eqLines.first == "사용법: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--json]")
        #expect(eqLines.count == 7 && eqLines.dropFirst().allSatisfy { $0.drop { $0 == " " }.hasPrefix("eq") })
        #expect(eqLines.contains("  eq presets             모든 프리셋과 그 게인"))
    }

    @Test("Every cli. key's Korean text has no English but command syntax, names and units")
    func everyCLIKeyIsKorean() {
        let keys = MessageKey.allCases.filter { $0.rawValue.hasPrefix("cli.") }
        #expect(keys.count >= 200)
        for key in keys {
            let korean = key.template(.korean)
            #expect(!korean.isEmpty && korean != key.template(.english), "\(key.rawValue)")
            #expect(leftoverEnglish(korean, allowing: commandSyntax.union(unitsAndNames)) == [], "\(key.rawValue): \(korean)")
        }
    }
}

/// `tutti --help` as it was before its words came from the catalogue.
let englishHelp = """
    usage: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--password P] [--json] COMMAND [ARGS]

      status                 what is playing, and every room with its sync health
      play | pause | toggle | stop
      next | prev            skip (prev restarts the track when more than 3 s in)
      seek SECONDS | +S | -S absolute or relative seek in the current track
      speed [0.5-2.0]        the group's playback speed, pitch kept (1 is normal; positions stay in track time)
      pitch [-12..+12]       the group's pitch in semitones, speed kept (0 is normal)
      shuffle [on|off]       toggle or set shuffle
      repeat [off|all|one]   cycle or set repeat
      single [on|off|oneshot]   stop after the current track (toggle, every time, or once)
      consume [on|off]       played tracks leave the queue
      queue                  list the queue
      queue add URI...       add files or URLs (queue add --next URI... inserts after the current)
      queue add-search TEXT  add every track a search finds (also: add-album ALBUM, add-playlist ID)
      queue del N | move FROM TO | clear | play N
      search TEXT            search the library (artist:… album:… title:… genre: filters)
      searches [clear]       recent searches
      like [ID] | unlike [ID] | favorites
      history                recently played
      library scan [DIR]     scan the music folder (default: the leader's --music)
      playlist [list]        stored playlists
      playlist show ID | create NAME | delete ID | rename ID NAME | load ID | save NAME
      playlist import FILE.m3u [NAME] | export ID FILE.m3u
      cache add URL | list | size | remove URL | clear   the offline cache of network tracks
      podcast add URL        subscribe to a podcast feed (RSS or Atom)
      podcast list | episodes NAME | refresh [NAME] | remove NAME
      podcast play NAME [EPISODE]   play an episode (default: the newest unplayed), resuming where it stopped
      podcast played|unplayed NAME EPISODE | speed NAME 0.5-2.0|none | download NAME EPISODE
      rooms                  rooms with volume, latency trim and sync health
      speakers               paired speakers, and speakers asking to pair
      speakers allow NAME | deny NAME   decide a speaker's request to join
      speakers pair CODE     pair the speaker showing CODE (`sudo tutti-follower pair` on it)
      speakers code CODE [NAME]   pair a Sendspin player by the six digits it shows or the eight printed on it
      speakers forget NAME   unpair a speaker: it is disconnected and cannot come back
      vol ROOM 0-100         room volume (a dB-linear curve: 100 → 0 dB, 50 → −25 dB)
      vol --group GROUP 0-100   a group's volume, keeping its rooms' balance (kept until a room joins)
      mute ROOM | unmute ROOM   (mute --group GROUP | unmute --group GROUP: every room of the group)
      eq ROOM                the room's equaliser: preset, ten bands, preamp
      eq ROOM PRESET         Flat, Bass, Treble, Vocal, Electronic, Rock, Pop, Jazz, Classical, Loudness or a saved one
      eq ROOM g1,g2,…,g10    ten gains in dB (32 Hz … 16 kHz, −12…+12, 0.5 dB steps)
      eq ROOM bass DB | treble DB | preamp auto|DB   shelves (100 Hz, 8 kHz) and the preamp
      eq presets             every preset with its gains
      eq save NAME ROOM|g1,…,g10 | eq delete NAME   your presets, saved at the leader
      reverb ROOM [PRESET] [MIX]   the room's reverb: Small room, Medium room, Large hall (hall), Plate, Cathedral, at MIX 0–100 %
      reverb ROOM off        no reverb (the mix at 0 %: the music untouched)
      channels ROOM stereo|left|right|mono|swap   which channels the room's speaker plays (mono: L+R at −6 dB)
      pair LEFT RIGHT [NAME] make two rooms one stereo pair (LEFT plays left, RIGHT right), one volume and EQ
      pair swap NAME         swap a pair's left and right
      announce --rooms R1,R2 TEXT   speak TEXT (espeak-ng) over what the rooms play, the music ducked; --lang ko, …
      announce --rooms R1,R2 --url URL|FILE   play a chime or a file over the music instead
      announce --all … | --group GROUP …   every room, or a group's; --volume 0–100 (70), --duck DB (−20)
      unpair NAME            end a stereo pair: its speakers are rooms of their own again
      latency ROOM MS        compensate a speaker's delay after its DAC
      group [list]           groups of rooms, each with its own queue, and what they play
      group new NAME [ROOM...] | add GROUP ROOM... | leave ROOM | rename GROUP NAME | delete GROUP
      party [on [GROUP]|off|status]   every room plays one group (default: the main group); off: back
      watch                  follow changes as they happen
      calibrate --play ROOM,ROOM... [--slot-ms MS]   a sweep in each room in turn, at known times (record it at the listening spot)
      calibrate --analyse REC.wav --rooms ROOM,ROOM... | --plan PLAN.json [--apply] [--eq]   each room's delay, confidence, trim and response;
                             --apply sets the trims, --eq a "Tuned" EQ preset per room
      leaders [SECONDS]      leaders announced on the network (mDNS): name, address, ports (browses 2 s)
      doctor [--config FILE] check this speaker's setup (ALSA device, mixer, real-time, avahi-daemon,
                             leader, clock, buttons) with the settings tutti-follower uses; says how to fix each fault
      --version              print the version

    Player and queue commands act on the main group, or on --group GROUP (id or name).

    A leader with a password (one reached from another machine) wants
    --password PASSWORD or TUTTI_PASSWORD.

    Which leader: --host/--port, else TUTTI_HOST (HOST or HOST:PORT), else a
    leader on this machine (127.0.0.1:4954) if one answers, else the leader found
    over mDNS within 1.5 s (--leader NAME picks one by its announced name, and
    skips the local check; default the first by name; its control port comes
    from its announcement), else 127.0.0.1:4954.
    Exit codes: 0 done, 1 the leader refused (message on stderr), 2 cannot reach the leader, 64 usage.
    """
