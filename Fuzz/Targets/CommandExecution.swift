import Glibc
import Synchronization
import TuttiCore
import TuttiLeader
import TuttiJSONRPC
import TuttiNet

/// The command-execution targets (`mpd-exec`, `jsonrpc-exec`,
/// `snapcast-exec`): requests not only parsed but run, by a leader that is
/// playing. One leader per process, made at the first input and reused:
/// its queue is three short generated WAV files (one at 44.1 kHz, so the
/// resampler runs too), its codec PCM, no speakers (nothing is heard; the
/// player paces itself all the same). Each input is a short session of one
/// client; before it the transport is put back (the three files, from the
/// start, every option off), after it what must hold for any session is
/// checked: the player still answers, the position lies within the track,
/// the queue within its bound. A trap anywhere (the player's own thread
/// included) ends the process, and libFuzzer keeps the input.
///
/// What a session cannot do here: fetch from the network (a request that
/// names an http(s) URL is skipped: the stream client has targets of its
/// own, and a fuzzer must not reach the LAN), and MPD's `password` is not
/// run (a wrong one sleeps by design).
enum CommandExecution {
    /// The music: a fixed folder, so the seeds can name the files.
    static let folder = "/tmp/tutti-fuzz-exec"
    static let files = ["a.wav", "b.wav", "c.wav"].map { folder + "/" + $0 }
    /// Requests per session, at most: a session is a client's burst, and
    /// each transport command waits for its change point (2 ms here).
    static let maxRequests = 64

    static let shared: InProcessControl = {
        writeMusic()
        var c = LeaderConfiguration()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        c.control = Endpoint(host: "127.0.0.1", port: 0)
        c.mpd = Endpoint(host: "127.0.0.1", port: 0)
        c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
        c.codec = .pcm
        c.bufferMilliseconds = 200
        c.startLatencyMilliseconds = 2
        c.allowedFolders = [folder]
        do {
            let control = InProcessControl()
            let leader = try Leader(configuration: c, log: .silent, surfaces: control)
            try leader.start()
            return control
        } catch {
            fatalError("the fuzz leader did not start: \(error)")
        }
    }()

    /// 2 s at 48 kHz, 1 s at 44.1 kHz, 3 s at 48 kHz: a quiet tone, 16-bit stereo.
    static func writeMusic() {
        mkdir(folder, 0o755)
        for (path, (rate, seconds)) in zip(files, [(48_000, 2), (44_100, 1), (48_000, 3)]) {
            let frames = rate * seconds
            var bytes = wavHeader(sampleRate: rate, channels: 2, bitsPerSample: 16, dataBytes: frames * 4)
            bytes.reserveCapacity(bytes.count + frames * 4)
            for i in 0..<frames {
                let v = UInt16(bitPattern: Int16(truncatingIfNeeded: (i * 37) % 2_000 - 1_000))
                bytes += [UInt8(v & 0xff), UInt8(v >> 8), UInt8(v & 0xff), UInt8(v >> 8)]
            }
            // Written beside and renamed: other fuzzing processes may be reading the same file.
            let temporary = "\(path).\(getpid())"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            precondition(fd >= 0, "cannot create \(temporary)")
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            close(fd)
            precondition(written == bytes.count, "cannot write \(temporary)")
            precondition(rename(temporary, path) == 0, "cannot rename \(temporary)")
        }
    }

    /// Runs one session against the shared leader, between the reset and the checks.
    static func session(_ body: (InProcessControl) -> Void) {
        let control = shared
        // One session at a time (the seed runner runs targets in parallel): the checks read the state it left.
        sessions.withLock { _ in
            reset(control.leader)
            body(control)
            check(control.leader)
        }
    }
    static let sessions = Mutex(())

    /// The three files, from the start, every option off; one group (a
    /// session may make more, each with a player of its own).
    static func reset(_ leader: Leader) {
        _ = leader.partyOff()
        for group in leader.groups where group.id != RoomGroups.mainID { _ = try? leader.deleteGroup(group.id) }
        let commands: [PlayerCommand] = [.clear, .shuffle(false), .repeatMode(.off), .single(.off), .consume(false),
                                         .speed(1), .pitch(semitones: 0), .add(uris: files, next: false), .play]
        for command in commands {
            do { _ = try leader.perform(command) } catch {
                precondition(error != .busy, "the player did not answer \(command)")
            }
        }
    }

    /// What holds after any session.
    static func check(_ leader: Leader) {
        let now = leader.nowPlaying
        precondition(now.positionSeconds.isFinite && now.positionSeconds >= 0, "position \(now.positionSeconds)")
        if let duration = now.durationSeconds {
            // Clamped to the track: at most its end (a seek past it moves on).
            precondition(now.positionSeconds <= duration + 1, "position \(now.positionSeconds) s in a track of \(duration) s")
        }
        precondition(leader.queue.count <= PlayerCommand.maximumQueueEntries, "\(leader.queue.count) entries queued")
        do { _ = try leader.perform(.consume(false)) } catch {
            preconditionFailure("the player no longer takes commands: \(error)")
        }
    }

    /// The input's lines (LF or CRLF), at most `maxRequests`.
    static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0a, omittingEmptySubsequences: true).prefix(maxRequests).map { line in
            line.last == 0x0d ? line.dropLast() : line
        }
    }

    /// Whether a JSON request names a network URL anywhere (such requests are skipped).
    static func namesNetwork(_ line: ArraySlice<UInt8>) -> Bool {
        guard let json = JSONValue.parsing(Array(line)) else { return false }
        func walk(_ v: JSONValue) -> Bool {
            switch v {
            case .string(let s): MediaFolders.isRemote(s)
            case .array(let a): a.contains(where: walk)
            case .object(let o): o.values.contains(where: walk)
            default: false
            }
        }
        return walk(json)
    }

    // MARK: The targets

    /// MPD: the input is what a client sends, lines of commands (command
    /// lists and idle included), run in one session.
    static func mpd(_ bytes: [UInt8]) {
        var kept: [UInt8] = []
        for line in lines(bytes) { kept += line; kept.append(0x0a) }
        session { control in
            let reply = control.mpd(kept)
            // Every reply is text lines: OK, list_OK, ACK or KEY: VALUE (binary chunks aside).
            precondition(reply.isEmpty || reply.last == 0x0a, "an MPD reply that does not end a line")
        }
    }

    /// JSON-RPC: each line a request, as the `tutti` client and the web app send them.
    static func jsonrpc(_ bytes: [UInt8]) {
        session { control in
            for line in lines(bytes) where line.count <= ControlServer.maxLineBytes && !namesNetwork(line) {
                guard let reply = control.jsonrpc(Array(line)), let json = JSONValue.parsing(reply) else { continue }
                if let code = json["error"]?["code"]?.number {
                    // The codes docs/api.md lists: the JSON-RPC ones, and the leader's own.
                    precondition((-32700 ... -32600).contains(code) || code == -32000 || code == -32001, "error code \(code)")
                }
            }
        }
    }

    /// Snapcast's control API: each line a request or a batch, as Home Assistant and snapweb send them.
    static func snapcast(_ bytes: [UInt8]) {
        session { control in
            for line in lines(bytes) where !namesNetwork(line) {
                _ = control.snapcast(Array(line))
            }
        }
    }
}
