import TuttiCore

/// `tutti`'s help text, and the lines of it about one command.
public enum CLIUsage {
    public static let text = """
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
      latency ROOM MS        compensate a speaker's delay after its DAC
      group [list]           groups of rooms, each with its own queue, and what they play
      group new NAME [ROOM...] | add GROUP ROOM... | leave ROOM | rename GROUP NAME | delete GROUP
      party [on [GROUP]|off|status]   every room plays one group (default: the main group); off: back
      watch                  follow changes as they happen
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

    /// `tutti COMMAND --help`: the usage lines that start with COMMAND (nil: none do).
    public static func lines(for command: String) -> [String]? {
        let lines = text.split(separator: "\n").map(String.init).filter { $0.drop { $0 == " " }.hasPrefix(command) }
        return lines.isEmpty ? nil : lines
    }

    /// The first line of a command's help.
    public static let commandHeader = "usage: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--json]"
}

/// What `tutti`'s command line asks for, before anything is looked up or
/// connected: the global options, the command and its operands. Pure.
public struct CLIOptions: Equatable, Sendable {
    public var host: String? = nil
    public var port: UInt16? = nil
    public var json = false
    /// `--leader NAME`: the announced leader to use.
    public var leaderName: String? = nil
    public var group: String? = nil
    /// `--password`, else `TUTTI_PASSWORD` (empty: none).
    public var password: String? = nil
    public var command: String
    public var operands: [String] = []

    public init(command: String) { self.command = command }
}

/// The outcome of reading `tutti`'s arguments.
public enum CLIRequest: Equatable, Sendable {
    /// Print this text and exit with this code (help, or no command).
    case print(String, exitCode: Int32)
    case version
    case run(CLIOptions)

    /// Global options anywhere on the line; everything else is the command
    /// and its operands, in order. `environment` supplies TUTTI_PASSWORD.
    public static func parse(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> CLIRequest {
        var args = ArgumentReader(arguments)
        var o = CLIOptions(command: "")
        o.password = environment["TUTTI_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        var rest: [String] = []
        /// The value after `flag`, or `message` as the error (a value may start with "--" here, as before).
        func value(_ message: String) throws(UsageError) -> String {
            guard !args.isEmpty else { throw UsageError(message) }
            return args.take()
        }
        while !args.isEmpty {
            let a = args.take()
            switch a {
            case "--host": o.host = try value("--host needs a value")
            case "--port":
                guard let p = args.next.flatMap({ UInt16($0) }) else { throw UsageError("--port needs a number 1–65535") }
                _ = args.take(); o.port = p
            case "--json": o.json = true
            case "--password": o.password = try value("--password needs a value")
            case "--group": o.group = try value("--group needs a group id or name")
            case "--leader": o.leaderName = try value("--leader needs a name")
            case "-h", "--help", "help":
                // `tutti COMMAND --help`: the usage lines of that command.
                if let command = rest.first, let lines = CLIUsage.lines(for: command) {
                    return .print(([CLIUsage.commandHeader] + lines).joined(separator: "\n"), exitCode: 0)
                }
                return .print(CLIUsage.text, exitCode: 0)
            default: rest.append(a)
            }
        }
        guard let command = rest.first else { return .print(CLIUsage.text, exitCode: 64) }
        if command == "--version" { return .version }
        o.command = command
        o.operands = Array(rest.dropFirst())
        return .run(o)
    }
}
