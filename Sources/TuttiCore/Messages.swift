// The message catalogue: every message a person reads from the daemons and
// the `tutti` client, in English and Korean (docs/translating.md). Pure: the
// language is chosen by the caller (`Language(localeEnvironment:)` for the
// CLI and the daemon's log, the request's `lang` or `Accept-Language` for a
// JSON-RPC error) and text is made with `UserMessage.text(in:)`. No Foundation,
// no ICU: `tutti` stays small.

/// A language of the catalogue.
public enum Language: String, CaseIterable, Sendable {
    case english = "en"
    case korean = "ko"

    /// A language tag as POSIX (`ko_KR.UTF-8`), BCP 47 (`ko-KR`) or bare (`ko`)
    /// spells it; nil for a language the catalogue does not have.
    public init?(tag: String) {
        var primary = Substring(tag)
        if let cut = primary.firstIndex(where: { $0 == "_" || $0 == "-" || $0 == "." || $0 == "@" || $0 == ";" }) { primary = primary[..<cut] }
        let code = String(primary).trimmingSpaces.lowercased()
        guard let language = Language(rawValue: code) else { return nil }
        self = language
    }

    /// The language POSIX's rules pick: `LC_ALL`, else `LC_MESSAGES`, else
    /// `LANG` (the first one set and not empty); English for C, POSIX and
    /// any language the catalogue does not have. `LANGUAGE` (GNU's list of
    /// preferences) is read first when the locale is not C, as gettext does.
    public init(localeEnvironment environment: [String: String]) {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        if locale != "C" && locale != "POSIX" && !locale.isEmpty, let list = environment["LANGUAGE"], !list.isEmpty {
            for tag in list.split(separator: ":") { if let l = Language(tag: String(tag)) { self = l; return } }
        }
        self = Language(tag: locale) ?? .english
    }

    /// The first language of an HTTP `Accept-Language` header the catalogue
    /// has, by quality (`ko-KR,ko;q=0.9,en;q=0.8`); nil when none is.
    public init?(acceptLanguage header: String) {
        var best: (quality: Double, order: Int, language: Language)? = nil
        for (order, item) in header.split(separator: ",").prefix(32).enumerated() {
            let parts = item.split(separator: ";")
            guard let tag = parts.first, let language = Language(tag: String(tag)) else { continue }
            var quality = 1.0
            for p in parts.dropFirst() {
                let kv = String(p).trimmingSpaces
                if kv.hasPrefix("q="), let q = Double(kv.dropFirst(2)), q.isFinite { quality = q }
            }
            guard quality > 0 else { continue }
            if best == nil || quality > best!.quality { best = (quality, order, language) }
        }
        guard let best else { return nil }
        self = best.language
    }
}

/// What a person is told, before it is put in a language: a catalogue key
/// and the values of its placeholders (`{room}` in the text).
public struct UserMessage: Sendable, Equatable, CustomStringConvertible {
    public var key: MessageKey
    public var arguments: [String: String]

    public init(_ key: MessageKey, _ arguments: [String: String] = [:]) {
        self.key = key
        self.arguments = arguments
    }

    /// The message in `language`, its placeholders filled in. A placeholder
    /// without a value is left as it is written, so a missing argument shows.
    public func text(in language: Language) -> String {
        MessageCatalogue.fill(key.template(language), arguments)
    }

    /// English: what logs and older clients have always read.
    public var description: String { text(in: .english) }
}

/// Every message of the catalogue. The raw value is the stable key that
/// translators and clients see (docs/translating.md).
public enum MessageKey: String, CaseIterable, Sendable {
    // Access and logins (JSON-RPC)
    case accessGuestOnlyLooks = "access.guestOnlyLooks"
    case accessLoginFirst = "access.loginFirst"
    case loginWrongPassword = "login.wrongPassword"
    case loginUnknownToken = "login.unknownToken"
    case loginTooManyFailures = "login.tooManyFailures"
    case loginNeedsPassword = "login.needsPassword"
    // Requests
    case requestUnknownMethod = "request.unknownMethod"
    case requestNotANumber = "request.notANumber"
    case requestOutOfRange = "request.outOfRange"
    case requestNeedsText = "request.needsText"
    case requestNeedsRoom = "request.needsRoom"
    case requestMutedTrueOrFalse = "request.mutedTrueOrFalse"
    case requestBadGroupParameter = "request.badGroupParameter"
    // Rooms and groups
    case roomUnknown = "room.unknown"
    case roomUnknownOfKnown = "room.unknownOfKnown"
    case groupUnknown = "group.unknown"
    case groupInvalidName = "group.invalidName"
    case groupNameTaken = "group.nameTaken"
    case groupMainIsPermanent = "group.mainIsPermanent"
    case groupTooMany = "group.tooMany"
    case groupCannotStart = "group.cannotStart"
    // Pairing speakers
    case pairingNobodyWaiting = "pairing.nobodyWaiting"
    case pairingWrongCode = "pairing.wrongCode"
    case pairingNeedsCode = "pairing.needsCode"
    case pairingNoRequest = "pairing.noRequest"
    case pairingNotPaired = "pairing.notPaired"
    case pairingNoSendspinServer = "pairing.noSendspinServer"
    case pairingNeedsSendspinToken = "pairing.needsSendspinToken"
    case pairingSendspinTokenNotKept = "pairing.sendspinTokenNotKept"
    // The `tutti` client
    case cliUnreachable = "cli.unreachable"
    case cliLoginFailed = "cli.loginFailed"
    case cliNoLeaderNamed = "cli.noLeaderNamed"
    case cliBadHost = "cli.badHost"
    case cliDoctorMissing = "cli.doctorMissing"
    case cliUnknownCommand = "cli.unknownCommand"
    case cliUnknownSubcommand = "cli.unknownSubcommand"
    case cliUnknownSubcommandHelp = "cli.unknownSubcommandHelp"
    case cliPortNeedsNumber = "cli.portNeedsNumber"
    case cliQueuePositions = "cli.queuePositions"
    case cliSeekNeeds = "cli.seekNeeds"
    case cliSpeedNeeds = "cli.speedNeeds"
    case cliPitchNeeds = "cli.pitchNeeds"
    case cliRepeatTakes = "cli.repeatTakes"
    case cliSingleTakes = "cli.singleTakes"
    case cliSearchNeedsText = "cli.searchNeedsText"
    case cliTakesTrackID = "cli.takesTrackID"
    case cliGroupVolumeNeeds = "cli.groupVolumeNeeds"
    case cliVolumeNeeds = "cli.volumeNeeds"
    case cliLatencyNeeds = "cli.latencyNeeds"
    case cliOnOrOff = "cli.onOrOff"
    case cliNeedsRoom = "cli.needsRoom"
    case cliQueueAddNeeds = "cli.queueAddNeeds"
    case cliNeedsArgument = "cli.needsArgument"
    // Tuning rooms (a recording analysed: `tutti calibrate --analyse`, the web app's Tune rooms)
    case calibrationSampleRate = "calibration.sampleRate"
    case calibrationTooShort = "calibration.tooShort"
    case calibrationTooLong = "calibration.tooLong"
    case calibrationTooQuiet = "calibration.tooQuiet"
    case calibrationClipped = "calibration.clipped"
    case calibrationTooNoisy = "calibration.tooNoisy"
    case calibrationFewerThanTwo = "calibration.fewerThanTwo"
    case calibrationSkipped = "calibration.skipped"
    case calibrationNotHeard = "calibration.notHeard"
    case calibrationRoomNoisy = "calibration.roomNoisy"
    case calibrationTwoPeaks = "calibration.twoPeaks"
    case calibrationNotWAV = "calibration.notWAV"
    case calibrationBadPlan = "calibration.badPlan"
    case calibrationBusy = "calibration.busy"
    // The daemon
    case daemonCannotStart = "daemon.cannotStart"
    // Added later, so last: the cases before keep their places.
    // The library, playlists, podcasts and the offline cache
    case libraryNone = "library.none"
    case libraryNothingPlaying = "library.nothingPlaying"
    case libraryNoSuchTrack = "library.noSuchTrack"
    case libraryNoTrack = "library.noTrack"
    case libraryNoPlaylist = "library.noPlaylist"
    case libraryNoPodcast = "library.noPodcast"
    case libraryNoEpisode = "library.noEpisode"
    case libraryNotFound = "library.notFound"
    case libraryDatabase = "library.database"
    case libraryDiskFull = "library.diskFull"
    case libraryCannotOpen = "library.cannotOpen"
    case libraryNotUsable = "library.notUsable"
    case libraryMusicFolder = "library.musicFolder"
    case libraryScanRunning = "library.scanRunning"
    case libraryFile = "library.file"
    case libraryDetail = "library.detail"
    case libraryTooNew = "library.tooNew"
    case libraryTooNewBy = "library.tooNewBy"
    case playlistNoEntry = "playlist.noEntry"
    case playlistCannotMove = "playlist.cannotMove"
    case playlistCannotInsert = "playlist.cannotInsert"
    case playlistNeedsName = "playlist.needsName"
    case playlistNotM3U = "playlist.notM3U"
    case podcastsNoLibrary = "podcasts.noLibrary"
    case podcastsNoEpisodes = "podcasts.noEpisodes"
    case podcastsNotQueued = "podcasts.notQueued"
    case cacheNone = "cache.none"
    // Channel maps, stereo pairs and the equaliser
    case channelsUnknownMap = "channels.unknownMap"
    case channelsSpeakerTooOld = "channels.speakerTooOld"
    case channelsSnapclient = "channels.snapclient"
    case channelsSendspinPlayer = "channels.sendspinPlayer"
    case channelsInPair = "channels.inPair"
    case channelsSameRoom = "channels.sameRoom"
    case channelsBadPairName = "channels.badPairName"
    case channelsNoPairs = "channels.noPairs"
    case channelsUnknownPair = "channels.unknownPair"
    case eqBandCount = "eq.bandCount"
    case eqOutOfRange = "eq.outOfRange"
    case eqUnknownPreset = "eq.unknownPreset"
    case eqBuiltInPreset = "eq.builtInPreset"
    case eqBadPresetName = "eq.badPresetName"
    // The player (a group's transport and queue)
    case playerBusy = "player.busy"
    case playerSeekPosition = "player.seekPosition"
    case playerSeekOffset = "player.seekOffset"
    case playerPositionsFromZero = "player.positionsFromZero"
    case playerTooManyToAdd = "player.tooManyToAdd"
    case playerSpeedRange = "player.speedRange"
    case playerPitchRange = "player.pitchRange"
    case playerSourceLength = "player.sourceLength"
    case playerQueueEmpty = "player.queueEmpty"
    case playerAtLastTrack = "player.atLastTrack"
    case playerNothingToSeek = "player.nothingToSeek"
    case playerNothingToAdd = "player.nothingToAdd"
    case playerQueueFull = "player.queueFull"
    case playerNoEntry = "player.noEntry"
    case playerPositionsWithin = "player.positionsWithin"
    case playerNoEntryID = "player.noEntryID"
    case playerCalibrationNoStream = "player.calibrationNoStream"
    // Previews (GET /preview/ID)
    case previewBadTrack = "preview.badTrack"
    case previewUnknownTrack = "preview.unknownTrack"
    case previewNoLibrary = "preview.noLibrary"
    case previewUndecodable = "preview.undecodable"
    case previewBusy = "preview.busy"
    case previewTooMany = "preview.tooMany"
    case previewAddressBusy = "preview.addressBusy"
    // Reverb (rooms.setReverb, tutti reverb)
    case reverbOutOfRange = "reverb.outOfRange"
    case reverbUnknownPreset = "reverb.unknownPreset"
    case reverbNeedsSettings = "reverb.needsSettings"
    case reverbOffWithMix = "reverb.offWithMix"
    case reverbSpeakerTooOld = "reverb.speakerTooOld"
    case reverbSnapclient = "reverb.snapclient"
    case reverbSendspinPlayer = "reverb.sendspinPlayer"
    case reverbBrowser = "reverb.browser"
    case cliReverbNeeds = "cli.reverbNeeds"
    case pairingSendspinNeedsCode = "pairing.sendspinNeedsCode"
    case pairingSendspinNobodyWaiting = "pairing.sendspinNobodyWaiting"
    case pairingSendspinWhich = "pairing.sendspinWhich"
    case pairingSendspinWrongCode = "pairing.sendspinWrongCode"
    case pairingSendspinCodeFailed = "pairing.sendspinCodeFailed"
    case cliSpeakersCodeNeeds = "cli.speakersCodeNeeds"

    /// The text in `language`, with its `{placeholders}`.
    public func template(_ language: Language) -> String {
        switch language {
        case .english: english
        case .korean: korean
        }
    }

    private var english: String {
        switch self {
        case .accessGuestOnlyLooks: #"{method}: guests can only look; log in (auth.login {"password"}) to change anything"#
        case .accessLoginFirst: #"this leader needs a password from other machines: log in first (auth.login {"password"}; tutti --password, or the web app asks)"#
        case .loginWrongPassword: "wrong password"
        case .loginUnknownToken: "the token is not valid (it was revoked, or the password changed): log in with the password"
        case .loginTooManyFailures: "too many failed logins from {address}; try again in {seconds} s"
        case .loginNeedsPassword: #"auth.login needs "password" (or the "token" a login returned)"#
        case .requestUnknownMethod: "unknown method '{method}' (see docs/api.md)"
        case .requestNotANumber: "{key} must be a number"
        case .requestOutOfRange: "{key} {value} is outside {low}…{high}"
        case .requestNeedsText: #"{method} needs "{key}" (a non-empty string)"#
        case .requestNeedsRoom: #"{method} needs "room" (a room name)"#
        case .requestMutedTrueOrFalse: "muted must be true or false"
        case .requestBadGroupParameter: "group must be a group id or name (see groups.list)"
        case .roomUnknown: "no room '{room}'"
        case .roomUnknownOfKnown: "no room '{room}' (rooms: {known})"
        case .groupUnknown: "no group '{group}' (groups: {known})"
        case .groupInvalidName: "group name '{name}' must be 1–{limit} bytes of printable text"
        case .groupNameTaken: "a group named '{name}' already exists"
        case .groupMainIsPermanent: "the main group cannot be deleted (rooms nobody placed play it)"
        case .groupTooMany: "at most {count} groups"
        case .groupCannotStart: "the group's player could not start ({reason}); nothing was changed: try again, or restart the leader if it goes on"
        case .pairingNobodyWaiting: "no speaker is waiting for a code: run `sudo tutti-follower pair` on it first"
        case .pairingWrongCode: "wrong code (a speaker allows 3 tries, then shows a new one)"
        case .pairingNeedsCode: #"speakers.pair needs "code": the six digits `sudo tutti-follower pair` shows"#
        case .pairingNoRequest: "no speaker named '{name}' is waiting to be allowed (see speakers.pending)"
        case .pairingNotPaired: "no paired speaker named '{name}' (see speakers.list)"
        case .pairingNoSendspinServer: "this leader runs no Sendspin server (start it with --sendspin)"
        case .pairingNeedsSendspinToken: #"speakers.sendspinToken needs "token": the pairing token (SP:0…) the Sendspin player shows"#
        case .pairingSendspinTokenNotKept: "the pairing token was not kept: {reason}"
        case .cliUnreachable: "cannot reach the leader at {endpoint}{how}: {reason}"
        case .cliLoginFailed: "logging in to {endpoint}: {reason}"
        case .cliNoLeaderNamed: "no leader named '{name}' with a control port found over mDNS (tutti leaders lists them)"
        case .cliBadHost: "{setting}: expected HOST or HOST:PORT"
        case .cliDoctorMissing: "doctor needs tutti-follower or tuttid (beside tutti or on PATH): {reason}"
        case .cliUnknownCommand: "unknown command '{command}' (tutti --help)"
        case .cliUnknownSubcommand: "unknown {command} command '{sub}'"
        case .cliUnknownSubcommandHelp: "unknown {command} command '{sub}' (tutti {command} --help)"
        case .cliPortNeedsNumber: "--port needs a number 1–65535"
        case .cliQueuePositions: "queue positions are numbers from 1"
        case .cliSeekNeeds: "seek needs SECONDS, +SECONDS or -SECONDS"
        case .cliSpeedNeeds: "speed needs a number, 0.5–2.0 (1 is normal)"
        case .cliPitchNeeds: "pitch needs semitones, −12…+12 (0 is normal)"
        case .cliRepeatTakes: "repeat takes off, all or one"
        case .cliSingleTakes: "single takes on, off or oneshot"
        case .cliSearchNeedsText: "search needs text"
        case .cliTakesTrackID: "{command} takes a track id"
        case .cliGroupVolumeNeeds: "vol --group GROUP needs a volume 0–100"
        case .cliVolumeNeeds: "vol needs ROOM and a volume 0–100"
        case .cliLatencyNeeds: "latency needs ROOM and milliseconds"
        case .cliOnOrOff: "{command} takes on or off"
        case .cliNeedsRoom: "{command} needs a room name"
        case .cliQueueAddNeeds: "queue add needs files or URLs"
        case .cliNeedsArgument: "{command} needs an argument"
        case .calibrationSampleRate: "the recording is at {rate} Hz; record at 16 kHz or more"
        case .calibrationTooShort: "the recording is {seconds} s long but the sweeps take {needed} s: start recording before they play and stop after the last"
        case .calibrationTooLong: "the recording is {seconds} s long; at most {max} s is analysed: record only while the sweeps play"
        case .calibrationTooQuiet: "the recording is too quiet (loudest {peak} dBFS): raise the rooms' volume or bring the microphone closer"
        case .calibrationClipped: "the recording is clipped ({count} samples at full scale): lower the rooms' volume or move the microphone away"
        case .calibrationTooNoisy: "the sweeps were not heard above the noise: make the room quieter or raise the rooms' volume"
        case .calibrationFewerThanTwo: "only one sweep was heard: every room must be heard from the listening spot"
        case .calibrationSkipped: "the recording lost or gained {ms} ms between the sweeps (the recorder skipped): record again, with nothing else running on the phone"
        case .calibrationNotHeard: "not heard: check that the room plays and is within earshot of the microphone"
        case .calibrationRoomNoisy: "heard too faintly to trust (confidence {confidence} dB): raise its volume or make the room quieter"
        case .calibrationTwoPeaks: "two arrivals {apart} ms apart, the echo as loud as the direct sound: hold the microphone where it sees the speaker"
        case .calibrationNotWAV: "the recording is not a WAV file the leader can read ({reason})"
        case .calibrationBadPlan: "the sweeps' plan is missing or wrong: play the sweeps again, or name the rooms measured"
        case .calibrationBusy: "another recording is being analysed: try again in a few seconds"
        case .libraryNone: "no music library: start the leader with --music DIR (or --db PATH)"
        case .libraryNothingPlaying: "nothing from the library is playing"
        case .libraryNoSuchTrack: "no such track"
        case .libraryNoTrack: "no track with id {id}"
        case .libraryNoPlaylist: "playlist {id} not found"
        case .libraryNoPodcast: "podcast {id} not found"
        case .libraryNoEpisode: "episode {id} not found"
        case .libraryNotFound: "{what} not found"
        case .libraryDatabase: "library database: {operation} failed: {reason} (SQLite code {code})"
        case .libraryDiskFull: "library database: {operation} failed: {reason} (SQLite code {code}); free some space on the disk that holds it"
        case .libraryCannotOpen: "cannot open the library database {path}: {reason}"
        case .libraryNotUsable: "{path} is not a usable Tutti library: {reason}"
        case .libraryMusicFolder: "music folder {path}: {reason}"
        case .libraryScanRunning: "a library scan is already running; wait for it to finish"
        case .libraryFile: "{path}: {reason}"
        case .libraryDetail: "{detail}"
        case .libraryTooNew: "the library database {path} has schema version {found}, but this Tutti understands up to version {supported}. It was written by a newer Tutti: use that newer Tutti with it, or pass --db with another file to start a new library"
        case .libraryTooNewBy: "the library database {path} has schema version {found}, but this Tutti understands up to version {supported}. It was written by Tutti {writer}: use Tutti {writer} or later with it, or pass --db with another file to start a new library"
        case .playlistNoEntry: "no entry {index} in playlist {id} (it has {count})"
        case .playlistCannotMove: "cannot move entry {from} to {to} in playlist {id} (it has {count})"
        case .playlistCannotInsert: "cannot insert at {at} in playlist {id} (it has {count})"
        case .playlistNeedsName: "a playlist needs a name"
        case .playlistNotM3U: "{path} is not a playlist (an M3U lists audio files or stream URLs, one a line)"
        case .podcastsNoLibrary: "no library for podcasts: start the leader with --music DIR (or --db PATH)"
        case .podcastsNoEpisodes: "'{title}' has no episodes"
        case .podcastsNotQueued: "the episode could not be queued"
        case .cacheNone: "no offline cache: start the leader with --music DIR (or --db PATH)"
        case .channelsUnknownMap: "'{name}' is not a channel map: use one of {names}"
        case .channelsSpeakerTooOld: "the {room} speaker speaks protocol v{version} and cannot play a channel map (v{needed} needed): update its tutti"
        case .channelsSnapclient: "{room} is a Snapcast client: it plays both channels as it is sent them; channel maps and stereo pairs need a Tutti speaker"
        case .channelsSendspinPlayer: "{room} is a Sendspin player: it plays both channels as it is sent them; channel maps and stereo pairs need a Tutti speaker"
        case .channelsInPair: "{room} is a speaker of the stereo pair '{pair}': swap its sides (rooms.swapPair) or unpair it first"
        case .channelsSameRoom: "a stereo pair needs two different rooms, not {room} twice"
        case .channelsBadPairName: "'{name}' cannot name a stereo pair: 1–64 bytes, and not another room's or pair's name"
        case .channelsNoPairs: "no stereo pair '{name}' (there are none)"
        case .channelsUnknownPair: "no stereo pair '{name}' (pairs: {known})"
        case .eqBandCount: "an equaliser has 10 bands (32 Hz … 16 kHz), not {count}"
        case .eqOutOfRange: "{what} {value} dB is outside −12…+12 dB"
        case .eqUnknownPreset: "no preset '{name}' (presets: {known})"
        case .eqBuiltInPreset: "'{name}' is a built-in preset: save yours under another name"
        case .eqBadPresetName: "preset name '{name}' must be 1–64 bytes"
        case .playerBusy: "the player did not answer in time"
        case .playerSeekPosition: "seek position must be a number of seconds ≥ 0 (not {seconds})"
        case .playerSeekOffset: "seek offset must be a finite number of seconds (not {seconds})"
        case .playerPositionsFromZero: "queue positions start at 0 (not {index})"
        case .playerTooManyToAdd: "at most {max} entries fit in the queue ({count} given)"
        case .playerSpeedRange: "speed must be {low}–{high}× (not {value})"
        case .playerPitchRange: "pitch must be {low} to +{high} semitones (not {value})"
        case .playerSourceLength: "a source of 1…4096 bytes"
        case .playerQueueEmpty: "the queue is empty"
        case .playerAtLastTrack: "already at the last track"
        case .playerNothingToSeek: "nothing to seek in"
        case .playerNothingToAdd: "nothing to add"
        case .playerQueueFull: "the queue is full: it holds at most {max} entries (it has {count})"
        case .playerNoEntry: "no queue entry {index} (the queue has {count})"
        case .playerPositionsWithin: "positions must be within 0…{last}"
        case .playerNoEntryID: "no queue entry with id {id}"
        case .playerCalibrationNoStream: "the calibration group has no stream"
        case .previewBadTrack: "“{id}” is not a track id: a preview is asked for as /preview/ID, with the id library.search gives"
        case .previewUnknownTrack: "the library has no track {id} (it may have been removed): search again"
        case .previewNoLibrary: "this leader has no music library to preview"
        case .previewUndecodable: "track {id} cannot be previewed: {reason}"
        case .previewBusy: "the leader is making other previews: try again in a few seconds"
        case .previewTooMany: "too many previews from {address}: try again in {seconds} s"
        case .previewAddressBusy: "{address} is already waiting for {count} previews: try again when one is ready"
        case .reverbOutOfRange: "reverb {what} {value} is outside {range}"
        case .reverbUnknownPreset: "no reverb preset '{name}' (presets: {known}, or off)"
        case .reverbNeedsSettings: #"rooms.setReverb needs "preset" ({presets} or off) or "mix" (0–100 %), "size" or "damping" (0–1)"#
        case .reverbOffWithMix: "off is a mix of 0 %, not {mix} %"
        case .reverbSpeakerTooOld: "the {room} speaker speaks protocol v{version} and cannot play reverb (v{needed} needed): update its tutti"
        case .reverbSnapclient: "{room} is a Snapcast client: it plays what it is sent and has no reverb (a Tutti speaker has)"
        case .reverbSendspinPlayer: "{room} is a Sendspin player: it plays what it is sent and has no reverb (a Tutti speaker has)"
        case .reverbBrowser: "{room} is a browser playing here: it has no reverb (a Tutti speaker has)"
        case .cliReverbNeeds: "reverb needs ROOM, then a preset (Small room, Medium room, Large hall, Plate, Cathedral) or off, and a mix 0–100"
        case .pairingSendspinNeedsCode: #"speakers.sendspinCode needs "code": the six digits a Sendspin player shows, or the eight printed on it (and "name" when several wait)"#
        case .pairingSendspinNobodyWaiting: "no Sendspin player is waiting for a pairing code of {digits} digits"
        case .pairingSendspinWhich: "several Sendspin players wait for a code ({names}): name the one it belongs to"
        case .pairingSendspinWrongCode: "that is not {name}'s code ({left} more tries on this connection)"
        case .pairingSendspinCodeFailed: "{name} did not pair: {reason}"
        case .cliSpeakersCodeNeeds: "speakers code needs the code a Sendspin player shows or has printed on it, and its NAME when several wait"
        case .daemonCannotStart: "tuttid: cannot start: {reason}"
        }
    }

    private var korean: String {
        switch self {
        case .accessGuestOnlyLooks: #"{method}: 손님은 보기만 할 수 있습니다. 바꾸려면 로그인하세요 (auth.login {"password"})"#
        case .accessLoginFirst: #"이 리더는 다른 기기에서 접속하면 비밀번호가 필요합니다. 먼저 로그인하세요 (auth.login {"password"}, tutti --password, 또는 웹 앱이 물어봅니다)"#
        case .loginWrongPassword: "비밀번호가 틀렸습니다"
        case .loginUnknownToken: "토큰이 유효하지 않습니다 (취소되었거나 비밀번호가 바뀌었습니다). 비밀번호로 로그인하세요"
        case .loginTooManyFailures: "{address}에서 로그인 실패가 너무 많습니다. {seconds}초 후에 다시 시도하세요"
        case .loginNeedsPassword: #"auth.login에는 "password"(또는 로그인이 돌려준 "token")가 필요합니다"#
        case .requestUnknownMethod: "알 수 없는 메서드 '{method}'입니다 (docs/api.md 참고)"
        case .requestNotANumber: "{key}은(는) 숫자여야 합니다"
        case .requestOutOfRange: "{key} {value}이(가) 범위 {low}…{high}을(를) 벗어났습니다"
        case .requestNeedsText: #"{method}에는 "{key}"(비어 있지 않은 문자열)가 필요합니다"#
        case .requestNeedsRoom: #"{method}에는 "room"(방 이름)이 필요합니다"#
        case .requestMutedTrueOrFalse: "muted는 true 또는 false여야 합니다"
        case .requestBadGroupParameter: "group은 그룹 ID나 이름이어야 합니다 (groups.list 참고)"
        case .roomUnknown: "'{room}'(이)라는 방이 없습니다"
        case .roomUnknownOfKnown: "'{room}'(이)라는 방이 없습니다 (방: {known})"
        case .groupUnknown: "'{group}'(이)라는 그룹이 없습니다 (그룹: {known})"
        case .groupInvalidName: "그룹 이름 '{name}'은(는) 인쇄 가능한 문자 1–{limit}바이트여야 합니다"
        case .groupNameTaken: "'{name}'(이)라는 그룹이 이미 있습니다"
        case .groupMainIsPermanent: "기본 그룹은 삭제할 수 없습니다 (아무 그룹에도 넣지 않은 방이 이 그룹을 재생합니다)"
        case .groupTooMany: "그룹은 최대 {count}개까지입니다"
        case .groupCannotStart: "그룹의 플레이어를 시작할 수 없습니다 ({reason}). 바뀐 것은 없습니다. 다시 시도하거나, 계속되면 리더를 다시 시작하세요"
        case .pairingNobodyWaiting: "코드를 기다리는 스피커가 없습니다. 먼저 스피커에서 `sudo tutti-follower pair`를 실행하세요"
        case .pairingWrongCode: "코드가 틀렸습니다 (스피커는 3번까지 허용하고, 그다음 새 코드를 보여 줍니다)"
        case .pairingNeedsCode: #"speakers.pair에는 "code"가 필요합니다: `sudo tutti-follower pair`가 보여 주는 여섯 자리 숫자"#
        case .pairingNoRequest: "허용을 기다리는 '{name}' 스피커가 없습니다 (speakers.pending 참고)"
        case .pairingNotPaired: "'{name}'(이)라는 페어링된 스피커가 없습니다 (speakers.list 참고)"
        case .pairingNoSendspinServer: "이 리더는 Sendspin 서버를 실행하지 않습니다 (--sendspin으로 시작하세요)"
        case .pairingNeedsSendspinToken: #"speakers.sendspinToken에는 "token"이 필요합니다: Sendspin 플레이어가 보여 주는 페어링 토큰 (SP:0…)"#
        case .pairingSendspinTokenNotKept: "페어링 토큰을 저장하지 못했습니다: {reason}"
        case .cliUnreachable: "{endpoint}{how}의 리더에 연결할 수 없습니다: {reason}"
        case .cliLoginFailed: "{endpoint}에 로그인하는 중: {reason}"
        case .cliNoLeaderNamed: "mDNS에서 제어 포트가 있는 '{name}' 리더를 찾지 못했습니다 (tutti leaders로 목록을 볼 수 있습니다)"
        case .cliBadHost: "{setting}: HOST 또는 HOST:PORT 형식이어야 합니다"
        case .cliDoctorMissing: "doctor에는 tutti-follower나 tuttid가 필요합니다 (tutti와 같은 폴더나 PATH에): {reason}"
        case .cliUnknownCommand: "알 수 없는 명령 '{command}'입니다 (tutti --help)"
        case .cliUnknownSubcommand: "알 수 없는 {command} 명령 '{sub}'입니다"
        case .cliUnknownSubcommandHelp: "알 수 없는 {command} 명령 '{sub}'입니다 (tutti {command} --help)"
        case .cliPortNeedsNumber: "--port에는 1–65535 사이의 숫자가 필요합니다"
        case .cliQueuePositions: "대기열 위치는 1부터 시작하는 숫자입니다"
        case .cliSeekNeeds: "seek에는 SECONDS, +SECONDS 또는 -SECONDS가 필요합니다"
        case .cliSpeedNeeds: "speed에는 0.5–2.0 사이의 숫자가 필요합니다 (1이 보통)"
        case .cliPitchNeeds: "pitch에는 −12…+12 사이의 반음 수가 필요합니다 (0이 보통)"
        case .cliRepeatTakes: "repeat에는 off, all, one 중 하나를 씁니다"
        case .cliSingleTakes: "single에는 on, off, oneshot 중 하나를 씁니다"
        case .cliSearchNeedsText: "search에는 검색어가 필요합니다"
        case .cliTakesTrackID: "{command}에는 곡 ID가 필요합니다"
        case .cliGroupVolumeNeeds: "vol --group GROUP에는 0–100 사이의 음량이 필요합니다"
        case .cliVolumeNeeds: "vol에는 ROOM과 0–100 사이의 음량이 필요합니다"
        case .cliLatencyNeeds: "latency에는 ROOM과 밀리초 값이 필요합니다"
        case .cliOnOrOff: "{command}에는 on 또는 off를 씁니다"
        case .cliNeedsRoom: "{command}에는 방 이름이 필요합니다"
        case .cliQueueAddNeeds: "queue add에는 파일이나 URL이 필요합니다"
        case .cliNeedsArgument: "{command}에는 인수가 필요합니다"
        case .calibrationSampleRate: "녹음이 {rate} Hz입니다. 16 kHz 이상으로 녹음하세요"
        case .calibrationTooShort: "녹음은 {seconds}초인데 스윕은 {needed}초 걸립니다. 스윕이 나오기 전에 녹음을 시작하고 마지막 스윕이 끝난 뒤에 멈추세요"
        case .calibrationTooLong: "녹음이 {seconds}초입니다. 분석은 최대 {max}초까지입니다. 스윕이 나오는 동안만 녹음하세요"
        case .calibrationTooQuiet: "녹음이 너무 작습니다 (최대 {peak} dBFS). 방의 음량을 높이거나 마이크를 더 가까이 두세요"
        case .calibrationClipped: "녹음이 찌그러졌습니다 (최대 레벨 샘플 {count}개). 방의 음량을 낮추거나 마이크를 멀리 두세요"
        case .calibrationTooNoisy: "소음 때문에 스윕이 들리지 않았습니다. 방을 조용히 하거나 방의 음량을 높이세요"
        case .calibrationFewerThanTwo: "스윕이 하나만 들렸습니다. 듣는 자리에서 모든 방의 소리가 들려야 합니다"
        case .calibrationSkipped: "스윕 사이에서 녹음이 {ms} ms 빠지거나 늘었습니다 (녹음기가 끊겼습니다). 휴대폰에서 다른 앱을 끄고 다시 녹음하세요"
        case .calibrationNotHeard: "들리지 않음: 방이 재생하는지, 마이크에 들리는 거리인지 확인하세요"
        case .calibrationRoomNoisy: "너무 약하게 들려서 믿을 수 없습니다 (신뢰도 {confidence} dB). 음량을 높이거나 방을 조용히 하세요"
        case .calibrationTwoPeaks: "소리가 {apart} ms 간격으로 두 번 도착했고 반사음이 직접음만큼 큽니다. 스피커가 보이는 곳에 마이크를 두세요"
        case .calibrationNotWAV: "녹음이 리더가 읽을 수 있는 WAV 파일이 아닙니다 ({reason})"
        case .calibrationBadPlan: "스윕 계획이 없거나 잘못되었습니다. 스윕을 다시 재생하거나 측정한 방을 지정하세요"
        case .calibrationBusy: "다른 녹음을 분석하는 중입니다. 몇 초 후에 다시 시도하세요"
        case .libraryNone: "음악 라이브러리가 없습니다. 리더를 --music DIR(또는 --db PATH)로 시작하세요"
        case .libraryNothingPlaying: "라이브러리의 곡이 재생되고 있지 않습니다"
        case .libraryNoSuchTrack: "그런 곡이 없습니다"
        case .libraryNoTrack: "ID가 {id}인 곡이 없습니다"
        case .libraryNoPlaylist: "{id}번 재생 목록을 찾을 수 없습니다"
        case .libraryNoPodcast: "{id}번 팟캐스트를 찾을 수 없습니다"
        case .libraryNoEpisode: "{id}번 에피소드를 찾을 수 없습니다"
        case .libraryNotFound: "{what}을(를) 찾을 수 없습니다"
        case .libraryDatabase: "라이브러리 데이터베이스: {operation}에 실패했습니다: {reason} (SQLite 코드 {code})"
        case .libraryDiskFull: "라이브러리 데이터베이스: {operation}에 실패했습니다: {reason} (SQLite 코드 {code}). 데이터베이스가 있는 디스크의 공간을 확보하세요"
        case .libraryCannotOpen: "라이브러리 데이터베이스 {path}을(를) 열 수 없습니다: {reason}"
        case .libraryNotUsable: "{path}은(는) 쓸 수 있는 Tutti 라이브러리가 아닙니다: {reason}"
        case .libraryMusicFolder: "음악 폴더 {path}: {reason}"
        case .libraryScanRunning: "라이브러리 검색이 이미 진행 중입니다. 끝날 때까지 기다리세요"
        case .libraryFile: "파일 {path}: {reason}"
        case .libraryDetail: "요청대로 할 수 없습니다: {detail}"
        case .libraryTooNew: "라이브러리 데이터베이스 {path}의 스키마 버전은 {found}인데, 이 Tutti는 버전 {supported}까지만 이해합니다. 더 새로운 Tutti가 쓴 것이니 그 Tutti로 여세요. 또는 --db로 다른 파일을 주어 새 라이브러리를 시작하세요"
        case .libraryTooNewBy: "라이브러리 데이터베이스 {path}의 스키마 버전은 {found}인데, 이 Tutti는 버전 {supported}까지만 이해합니다. Tutti {writer}이(가) 쓴 것이니 Tutti {writer} 이상으로 여세요. 또는 --db로 다른 파일을 주어 새 라이브러리를 시작하세요"
        case .playlistNoEntry: "{id}번 재생 목록에 {index}번 항목이 없습니다 (항목 {count}개)"
        case .playlistCannotMove: "{id}번 재생 목록에서 {from}번 항목을 {to}번으로 옮길 수 없습니다 (항목 {count}개)"
        case .playlistCannotInsert: "{id}번 재생 목록의 {at}번 위치에 넣을 수 없습니다 (항목 {count}개)"
        case .playlistNeedsName: "재생 목록에는 이름이 필요합니다"
        case .playlistNotM3U: "{path}은(는) 재생 목록이 아닙니다 (M3U는 오디오 파일이나 스트림 URL을 한 줄에 하나씩 나열합니다)"
        case .podcastsNoLibrary: "팟캐스트를 둘 라이브러리가 없습니다. 리더를 --music DIR(또는 --db PATH)로 시작하세요"
        case .podcastsNoEpisodes: "'{title}'에는 에피소드가 없습니다"
        case .podcastsNotQueued: "에피소드를 대기열에 넣지 못했습니다"
        case .cacheNone: "오프라인 캐시가 없습니다. 리더를 --music DIR(또는 --db PATH)로 시작하세요"
        case .channelsUnknownMap: "'{name}'은(는) 채널 맵이 아닙니다. 다음 중 하나를 쓰세요: {names}"
        case .channelsSpeakerTooOld: "{room} 스피커는 프로토콜 v{version}을(를) 써서 채널 맵을 재생할 수 없습니다 (v{needed} 필요). 스피커의 tutti를 업데이트하세요"
        case .channelsSnapclient: "{room}은(는) Snapcast 클라이언트입니다. 받은 그대로 두 채널을 재생합니다. 채널 맵과 스테레오 페어에는 Tutti 스피커가 필요합니다"
        case .channelsSendspinPlayer: "{room}은(는) Sendspin 플레이어입니다. 받은 그대로 두 채널을 재생합니다. 채널 맵과 스테레오 페어에는 Tutti 스피커가 필요합니다"
        case .channelsInPair: "{room}은(는) 스테레오 페어 '{pair}'의 스피커입니다. 좌우를 바꾸거나(rooms.swapPair) 먼저 페어를 해제하세요"
        case .channelsSameRoom: "스테레오 페어에는 서로 다른 방 두 개가 필요합니다 ({room}을(를) 두 번 쓸 수 없습니다)"
        case .channelsBadPairName: "'{name}'은(는) 스테레오 페어 이름으로 쓸 수 없습니다: 1–64바이트이고, 다른 방이나 페어의 이름이 아니어야 합니다"
        case .channelsNoPairs: "'{name}'(이)라는 스테레오 페어가 없습니다 (페어가 하나도 없습니다)"
        case .channelsUnknownPair: "'{name}'(이)라는 스테레오 페어가 없습니다 (페어: {known})"
        case .eqBandCount: "이퀄라이저는 밴드가 10개입니다 (32 Hz … 16 kHz). {count}개가 아닙니다"
        case .eqOutOfRange: "{what} {value} dB이(가) −12…+12 dB 범위를 벗어났습니다"
        case .eqUnknownPreset: "'{name}'(이)라는 프리셋이 없습니다 (프리셋: {known})"
        case .eqBuiltInPreset: "'{name}'은(는) 기본 프리셋입니다. 다른 이름으로 저장하세요"
        case .eqBadPresetName: "프리셋 이름 '{name}'은(는) 1–64바이트여야 합니다"
        case .playerBusy: "플레이어가 제때 응답하지 않았습니다"
        case .playerSeekPosition: "이동할 위치는 0 이상의 초 단위 숫자여야 합니다 ({seconds}이(가) 아님)"
        case .playerSeekOffset: "이동할 간격은 유한한 초 단위 숫자여야 합니다 ({seconds}이(가) 아님)"
        case .playerPositionsFromZero: "대기열 위치는 0부터 시작합니다 ({index}이(가) 아님)"
        case .playerTooManyToAdd: "대기열에는 최대 {max}개까지 들어갑니다 ({count}개를 줌)"
        case .playerSpeedRange: "속도는 {low}–{high}배여야 합니다 ({value}이(가) 아님)"
        case .playerPitchRange: "음높이는 {low}에서 +{high} 반음 사이여야 합니다 ({value}이(가) 아님)"
        case .playerSourceLength: "소스는 1…4096바이트여야 합니다"
        case .playerQueueEmpty: "대기열이 비어 있습니다"
        case .playerAtLastTrack: "이미 마지막 곡입니다"
        case .playerNothingToSeek: "이동할 곡이 없습니다"
        case .playerNothingToAdd: "추가할 것이 없습니다"
        case .playerQueueFull: "대기열이 가득 찼습니다: 최대 {max}개까지 들어갑니다 (지금 {count}개)"
        case .playerNoEntry: "대기열에 {index}번 항목이 없습니다 (대기열에는 {count}개가 있습니다)"
        case .playerPositionsWithin: "위치는 0…{last} 범위여야 합니다"
        case .playerNoEntryID: "ID가 {id}인 대기열 항목이 없습니다"
        case .playerCalibrationNoStream: "보정 그룹에 스트림이 없습니다"
        case .previewBadTrack: "“{id}”는 트랙 ID가 아닙니다. 미리 듣기는 library.search가 주는 ID로 /preview/ID 형식으로 요청합니다"
        case .previewUnknownTrack: "라이브러리에 트랙 {id}이(가) 없습니다 (삭제되었을 수 있습니다). 다시 검색하세요"
        case .previewNoLibrary: "이 리더에는 미리 들을 음악 라이브러리가 없습니다"
        case .previewUndecodable: "트랙 {id}을(를) 미리 들을 수 없습니다: {reason}"
        case .previewBusy: "리더가 다른 미리 듣기를 만드는 중입니다. 몇 초 후에 다시 시도하세요"
        case .previewTooMany: "{address}에서 미리 듣기 요청이 너무 많습니다. {seconds}초 후에 다시 시도하세요"
        case .previewAddressBusy: "{address}에서 이미 미리 듣기 {count}개를 기다리고 있습니다. 하나가 준비된 후에 다시 시도하세요"
        case .reverbOutOfRange: "잔향 {what} 값 {value}은(는) {range} 범위 밖입니다"
        case .reverbUnknownPreset: "'{name}'(이)라는 잔향 프리셋이 없습니다 (프리셋: {known}, 또는 off)"
        case .reverbNeedsSettings: #"rooms.setReverb에는 "preset"({presets} 또는 off)이나 "mix"(0–100 %), "size", "damping"(0–1)이 필요합니다"#
        case .reverbOffWithMix: "off는 믹스 0 %입니다. {mix} %가 아닙니다"
        case .reverbSpeakerTooOld: "{room} 스피커는 프로토콜 v{version}을(를) 사용해 잔향을 재생할 수 없습니다 (v{needed} 필요): 스피커의 tutti를 업데이트하세요"
        case .reverbSnapclient: "{room}은(는) Snapcast 클라이언트입니다: 받은 소리를 그대로 재생하며 잔향이 없습니다 (Tutti 스피커에는 있습니다)"
        case .reverbSendspinPlayer: "{room}은(는) Sendspin 플레이어입니다: 받은 소리를 그대로 재생하며 잔향이 없습니다 (Tutti 스피커에는 있습니다)"
        case .reverbBrowser: "{room}은(는) 여기서 재생하는 브라우저입니다: 잔향이 없습니다 (Tutti 스피커에는 있습니다)"
        case .cliReverbNeeds: "reverb에는 ROOM, 그다음 프리셋(Small room, Medium room, Large hall, Plate, Cathedral) 또는 off, 그리고 0–100 사이의 믹스가 필요합니다"
        case .pairingSendspinNeedsCode: #"speakers.sendspinCode에는 "code"가 필요합니다: Sendspin 플레이어가 보여 주는 6자리 숫자나 기기에 인쇄된 8자리 숫자 (여러 대가 기다리면 "name"도)"#
        case .pairingSendspinNobodyWaiting: "{digits}자리 페어링 코드를 기다리는 Sendspin 플레이어가 없습니다"
        case .pairingSendspinWhich: "코드를 기다리는 Sendspin 플레이어가 여러 대입니다 ({names}): 어느 플레이어의 코드인지 이름을 지정하세요"
        case .pairingSendspinWrongCode: "{name}의 코드가 아닙니다 (이 연결에서 {left}번 더 시도할 수 있습니다)"
        case .pairingSendspinCodeFailed: "{name}이(가) 페어링되지 않았습니다: {reason}"
        case .cliSpeakersCodeNeeds: "speakers code에는 Sendspin 플레이어가 보여 주거나 기기에 인쇄된 코드, 그리고 여러 대가 기다리면 그 NAME이 필요합니다"
        case .daemonCannotStart: "tuttid: 시작할 수 없습니다: {reason}"
        }
    }
}

/// Filling in placeholders, and reading them (for the catalogue's test).
public enum MessageCatalogue {
    /// The `{name}` placeholders of a template, in order of appearance. A
    /// name is letters only: `{"password"}` in a text is not one.
    public static func placeholders(_ template: String) -> [String] {
        var names: [String] = []
        var current: String? = nil
        for c in template {
            if c == "{" { current = ""; continue }
            guard var name = current else { continue }
            if c == "}" { if !name.isEmpty { names.append(name) }; current = nil; continue }
            if c.isASCII && c.isLetter { name.append(c); current = name } else { current = nil }
        }
        return names
    }

    static func fill(_ template: String, _ arguments: [String: String]) -> String {
        guard template.contains("{") else { return template }
        var out = ""
        var pending: String? = nil // "{" and the letters read since
        for c in template {
            if c == "{" { if let p = pending { out += p }; pending = "{"; continue }
            guard let p = pending else { out.append(c); continue }
            if c == "}" {
                let name = String(p.dropFirst())
                if !name.isEmpty, let value = arguments[name] { out += value } else { out += p + "}" }
                pending = nil
            } else if c.isASCII && c.isLetter {
                pending = p + String(c)
            } else {
                out += p
                out.append(c)
                pending = nil
            }
        }
        if let p = pending { out += p }
        return out
    }
}
