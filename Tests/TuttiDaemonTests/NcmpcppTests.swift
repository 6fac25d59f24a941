import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// ncmpcpp, the curses MPD client the issue names, run for real inside a
/// detached tmux session against a real leader: keys go in with
/// `tmux send-keys`, the screen comes back with `tmux capture-pane`, and
/// every step is checked against the leader's own state. Both tools come
/// from scripts/setup.sh; without them the test fails (it never skips).
@Suite(.serialized) struct NcmpcppTests {
    static let ncmpcpp = "/usr/bin/ncmpcpp"
    static let tmux = "/usr/bin/tmux"
    static let mpc = "/usr/bin/mpc"

    /// ncmpcpp in a 160×50 tmux pane on a private tmux server (its own
    /// socket, no user config), so tests never meet a user's sessions.
    final class Terminal {
        let socket: String
        let session = "ncmpcpp"

        init(dir: String, port: UInt16) throws {
            socket = dir + "/tmux.sock"
            let home = dir + "/home"
            let config = home + "/.config/ncmpcpp"
            try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
            // Defaults are fine for a client without a visualizer; only keep its files in the temp home.
            try """
            ncmpcpp_directory = \(config)
            lyrics_directory = \(home)/lyrics
            startup_screen = playlist
            """.write(toFile: config + "/config", atomically: true, encoding: .utf8)
            // A dead pane stays, so a crash or exit code can be read.
            try "set -g remain-on-exit on\n".write(toFile: dir + "/tmux.conf", atomically: true, encoding: .utf8)
            var env = ProcessInfo.processInfo.environment
            env["HOME"] = home
            env["TERM"] = "xterm-256color"
            env["LANG"] = "C.UTF-8"
            env["TMUX"] = nil
            // The tmux server outlives this call; runProgram hands it no descriptor to hold.
            let r = try shell(NcmpcppTests.tmux, ["-S", socket, "-f", dir + "/tmux.conf",
                                                  "new-session", "-d", "-s", session, "-x", "160", "-y", "50",
                                                  NcmpcppTests.ncmpcpp, "-h", "127.0.0.1", "-p", String(port)],
                              environment: env)
            guard r.status == 0 else { throw TerminalError(message: "tmux new-session failed: \(r.err)") }
            let pids = (try? shell(NcmpcppTests.tmux, ["-S", socket, "display-message", "-p", "-t", session, "#{pid} #{pane_pid}"]).out) ?? ""
            let numbers = pids.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
            serverPID = numbers.first
            panePID = numbers.count > 1 ? numbers[1] : nil
        }

        /// tmux's server and the pane's process, ended by id in `stop`.
        private var serverPID: pid_t?
        private var panePID: pid_t?

        struct TerminalError: Error, CustomStringConvertible {
            var message: String
            var description: String { message }
        }

        /// Named keys (`Enter`, `Down`, `BSpace`) or, with `literal`, characters.
        func send(_ keys: String..., literal: Bool = false) {
            _ = try? shell(NcmpcppTests.tmux, ["-S", socket, "send-keys", "-t", session] + (literal ? ["-l"] : []) + keys)
        }

        func screen() -> String {
            (try? shell(NcmpcppTests.tmux, ["-S", socket, "capture-pane", "-p", "-t", session]).out) ?? ""
        }

        /// `#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}`: "0::" while ncmpcpp runs, "1:0:" (or "1::") after a clean exit.
        func paneState() -> String {
            ((try? shell(NcmpcppTests.tmux, ["-S", socket, "display-message", "-p", "-t", session, "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}"]).out) ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Polls the screen until `predicate` holds (CI is slow: no fixed sleeps).
        @discardableResult
        func waitForScreen(timeout: Double = 15, _ predicate: (String) -> Bool) -> Bool {
            waitUntil(timeout: timeout) { predicate(screen()) }
        }

        /// `kill-server` alone was measured to leave tmux 3.3a's server running
        /// (with a dead pane kept by remain-on-exit): end both by process id.
        func stop() {
            _ = try? shell(NcmpcppTests.tmux, ["-S", socket, "kill-server"])
            for pid in [panePID, serverPID].compactMap({ $0 }) where pid > 1 { kill(pid, SIGKILL) }
        }
    }

    /// Runs a tool to its end. Output goes through files, not pipes, which a
    /// forked tmux server would hold open.
    @discardableResult
    static func shell(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (out: String, err: String, status: Int32) {
        let r = try runProgram(tool, arguments, environment: environment, replaceEnvironment: environment != nil, timeout: 30)
        return (r.out, r.err, r.status)
    }

    /// Three tagged 10-minute MP3s (no track may end on its own during the
    /// test: with consume on, an ended track leaves the queue, and under the
    /// full suite's load the test has taken over 50 s), a leader with a
    /// library and MPD port, one room. 8 kHz mono, so lame takes well under
    /// a second.
    func makeLeader(dir: String) throws -> (Leader, Follower) {
        let music = dir + "/music"
        for sub in ["Alpha Band/Album A", "Misc"] {
            try FileManager.default.createDirectory(atPath: music + "/" + sub, withIntermediateDirectories: true)
        }
        let source = dir + "/source.wav"
        writeFile(source, wavImage((0..<8_000 * 600).map { Int16(($0 % 40) * 100 - 2_000) }, rate: 8_000, channels: 1))
        let songs = [("First Song", "Alpha Band", "Album A", "1", "Alpha Band/Album A/01 First.mp3"),
                     ("Second Song", "Alpha Band", "Album A", "2", "Alpha Band/Album A/02 Second.mp3"),
                     ("Other Tune", "Beta Crew", "Bee Sides", "1", "Misc/other.mp3")]
        for (title, artist, album, track, path) in songs {
            let r = try Self.shell("/usr/bin/lame", ["--quiet", "-b", "16", "--tt", title, "--ta", artist, "--tl", album, "--tn", track,
                                                     "--ty", "2001", source, music + "/" + path])
            #expect(r.status == 0, "lame: \(r.err)")
        }
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 3 }, "library scan")
        let follower = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["den"] }, "room joined")
        return (leader, follower)
    }

    @Test func ncmpcppShowsTheQueueAndLibraryAndItsKeysControlTheLeader() throws {
        for tool in [Self.ncmpcpp, Self.tmux, Self.mpc] {
            try #require(FileManager.default.isExecutableFile(atPath: tool),
                         "\(tool) is missing: run scripts/setup.sh (it installs ncmpcpp, tmux and mpc)")
        }
        let dir = makeTemporaryDirectory()
        let (leader, follower) = try makeLeader(dir: dir)
        defer {
            follower.stop()
            leader.stop()
        }
        let port = try #require(leader.mpdEndpoint?.port)
        // The queue is filled before ncmpcpp starts, by another client, as on a real system.
        let added = try Self.shell(Self.mpc, ["-h", "127.0.0.1", "-p", String(port), "add", "/"])
        #expect(added.status == 0, "mpc add: \(added.err)")
        #expect(leader.queue.count == 3)

        let term = try Terminal(dir: dir, port: port)
        defer { term.stop() }
        // Every step also checks that the server refused nothing ncmpcpp sent, so a failure
        // names the step. (mpc's `add` asks for `config` first, refused over TCP as by MPD:
        // that ACK came before ncmpcpp started and is not counted.)
        let acksBefore = leader.mpdErrorsSent?.count ?? 0
        func ncmpcppErrors() -> [String] {
            let e = leader.mpdErrorsSent ?? (0, [])
            return Array(e.recent.suffix(min(e.recent.count, e.count - acksBefore)))
        }
        var acksSeen = 0
        func noNewErrors(_ step: String, sourceLocation: SourceLocation) {
            let errors = ncmpcppErrors()
            #expect(errors.count == acksSeen, "ACKs sent to ncmpcpp by \(step): \(errors)", sourceLocation: sourceLocation)
            acksSeen = errors.count
        }
        func onScreen(_ needles: String..., sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            defer { noNewErrors("the step before \(needles) on screen", sourceLocation: sourceLocation) }
            return term.waitForScreen { s in needles.allSatisfy { s.contains($0) } }
        }
        func leaderReaches(_ what: String, _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
            let reached = waitUntil(timeout: 15, condition)
            #expect(reached, "\(what); screen:\n\(term.screen())", sourceLocation: sourceLocation)
            noNewErrors(what, sourceLocation: sourceLocation)
        }

        // Start-up: the playlist screen lists the queue with tags from the library.
        #expect(onScreen("Playlist (3 items", "First Song", "Second Song", "Other Tune", "Alpha Band", "Beta Crew"),
                "queue after start:\n\(term.screen())")

        // Enter plays the highlighted (first) song; p pauses and resumes.
        term.send("Enter")
        leaderReaches("Enter plays the first song") { leader.nowPlaying.state == .playing && leader.nowPlaying.track == 0 }
        #expect(onScreen("Playing:", "First Song"))
        term.send("p", literal: true)
        leaderReaches("p pauses") { leader.nowPlaying.state == .paused }
        #expect(onScreen("Paused:"))
        term.send("p", literal: true)
        leaderReaches("p resumes") { leader.nowPlaying.state == .playing }
        #expect(onScreen("Playing:"))

        // > is next.
        term.send(">", literal: true)
        leaderReaches("> advances to the second song") { leader.nowPlaying.track == 1 && leader.nowPlaying.state == .playing }
        #expect(onScreen("Playing:", "Second Song"))

        // Modes: z random, r repeat, y single, R consume, each toggled back. A key
        // toggles what ncmpcpp last heard, so each change must reach its mode
        // flags (the "[rzsc]" on the second line) before the next key.
        func flags() -> String {
            let line = term.screen().split(separator: "\n", omittingEmptySubsequences: false).dropFirst().first.map(String.init) ?? ""
            guard let open = line.lastIndex(of: "["), let close = line.lastIndex(of: "]"), open < close else { return "" }
            return String(line[line.index(after: open)..<close])
        }
        func toggle(_ key: String, _ what: String, leaderState: () -> Bool, shows expected: String) {
            term.send(key, literal: true)
            leaderReaches(what, leaderState)
            #expect(waitUntil(timeout: 10) { flags() == expected }, "\(what): flags [\(flags())], expected [\(expected)]")
        }
        toggle("z", "z turns random on", leaderState: { leader.nowPlaying.shuffle }, shows: "z")
        toggle("z", "z turns random off", leaderState: { !leader.nowPlaying.shuffle }, shows: "")
        toggle("r", "r turns repeat on", leaderState: { leader.nowPlaying.repeatMode == .all }, shows: "r")
        toggle("y", "y with repeat is repeat-one", leaderState: { leader.nowPlaying.repeatMode == .one }, shows: "rs")
        toggle("r", "r off with single is stop after the current song",
               leaderState: { leader.nowPlaying.repeatMode == .off && leader.nowPlaying.single == .on }, shows: "s")
        toggle("y", "y again turns single off", leaderState: { leader.nowPlaying.single == .off }, shows: "")
        toggle("R", "R turns consume on", leaderState: { leader.nowPlaying.consume }, shows: "c")
        toggle("R", "R turns consume off", leaderState: { !leader.nowPlaying.consume }, shows: "")

        // Volume keys (MPD `volume -N`) change the room.
        let before = leader.settings(of: "den").volume
        term.send("-", literal: true)
        leaderReaches("- lowers the room's volume") { leader.settings(of: "den").volume < before }

        // Z shuffles the queue itself (after a y/n question): same songs, still playing.
        let ids = Set(leader.queue.entries.map(\.id))
        term.send("Z", literal: true)
        #expect(onScreen("shuffle"), "the confirmation question")
        term.send("y", literal: true)
        #expect(term.waitForScreen { !$0.contains("shuffle selected range?") }, "the question is answered")
        #expect(!term.screen().contains("MPD:"), "no error in the status bar:\n\(term.screen())")
        noNewErrors("Z y (shuffle)", sourceLocation: #_sourceLocation)
        #expect(Set(leader.queue.entries.map(\.id)) == ids && leader.queue.count == 3)

        // s stops.
        term.send("s", literal: true)
        leaderReaches("s stops") { leader.nowPlaying.state == .stopped }

        // 2: the browser shows the music folder; Enter goes into a folder.
        term.send("2", literal: true)
        #expect(onScreen("Browse: /", "[Alpha Band]", "[Misc]"), "browser:\n\(term.screen())")
        term.send("Enter")
        #expect(onScreen("Browse: Alpha Band", "[Album A]"), "browser folder:\n\(term.screen())")

        // 4: the media library lists the artists, the first one's album and its songs.
        term.send("4", literal: true)
        #expect(onScreen("Media library", "Artists", "Alpha Band", "Beta Crew", "Album A", "First Song", "Second Song"),
                "media library:\n\(term.screen())")

        // 1 and q: back to the queue, and a clean exit.
        term.send("1", literal: true)
        #expect(onScreen("Playlist (3 items"))
        term.send("q", literal: true)
        // Dead, with no exit code but 0 and no signal (tmux 3.3 may leave the code empty).
        #expect(waitUntil(timeout: 10) { ["1:0:", "1::"].contains(term.paneState()) }, "ncmpcpp exit: \(term.paneState())")

        // Nothing ncmpcpp sent was refused.
        #expect(ncmpcppErrors().isEmpty, "ACKs sent to ncmpcpp: \(ncmpcppErrors())")
    }
}
