/// A room's reverb as the surfaces ask for it (`rooms.setReverb`, `tutti
/// reverb`, the web app's Sound screen), and why the leader refuses one.
/// Pure: the leader keeps the result and sends it (protocol v10 `reverb`).
public extension ReverbSettings {
    /// The mix a preset gets when the room's reverb was off and no mix is given.
    static let defaultMix = 25.0

    /// `current` changed as asked: a preset name (any case; "off" sets the
    /// mix to 0 and keeps the rest, so the next mix brings the same room
    /// back), a mix (0–100 %), and a size or damping (0–1; either makes the
    /// reverb custom). A preset with no mix keeps the room's mix, or takes
    /// `defaultMix` when it was off. Size and damping are kept to 0.001, as
    /// the wire carries them, so the leader keeps what the speaker plays.
    static func resolving(preset name: String?, mix: Double?, size: Double?, damping: Double?,
                          from current: ReverbSettings) throws(ReverbRefusal) -> ReverbSettings {
        guard name != nil || mix != nil || size != nil || damping != nil else { throw .needsSettings }
        do {
            var base = current
            if let name {
                if ["off", "none", "dry"].contains(name.lowercased()) {
                    if let mix, mix != 0 { throw ReverbRefusal.offWithMix(mix) }
                    return try ReverbSettings(mix: 0, size: current.size, damping: current.damping, preset: current.preset)
                }
                guard let preset = ReverbPreset.named(name) else { throw ReverbError.unknownPreset(name) }
                base = try ReverbSettings(preset: preset, mix: mix ?? (current.isOff ? defaultMix : current.mix))
            } else if let mix {
                base = try ReverbSettings(mix: mix, size: current.size, damping: current.damping, preset: current.preset)
            }
            guard size != nil || damping != nil else { return base }
            let s = ((size ?? base.size) * 1000).rounded() / 1000, d = ((damping ?? base.damping) * 1000).rounded() / 1000
            // Values a preset has are that preset again.
            let same = ReverbPreset.allCases.first { ($0.size * 1000).rounded() / 1000 == s && $0.damping == d }
            if let same { return try ReverbSettings(preset: same, mix: base.mix) }
            return try ReverbSettings(mix: base.mix, size: s, damping: d)
        } catch let e as ReverbError {
            throw .settings(e)
        } catch let e as ReverbRefusal {
            throw e
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// "Large hall at 30 %", "custom (RT60 1.2 s) at 30 %", "off".
    var summary: String {
        if isOff { return "off" }
        let decay = (decaySeconds * 10).rounded() / 10
        return "\(preset?.rawValue ?? "custom (RT60 \(decay) s)") at \(Int(mix)) %"
    }
}

/// Why a room's reverb was refused: what was asked wrongly, or what the
/// room cannot do (docs/sound.md, "Reverb"). Its `message` is from the catalogue.
public enum ReverbRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// A value out of range or an unknown preset.
    case settings(ReverbError)
    /// Nothing to set.
    case needsSettings
    /// "off" with a mix other than 0.
    case offWithMix(Double)
    /// No such room (the known ones listed).
    case unknownRoom(String, known: [String])
    /// The room's speaker speaks a protocol older than `reverbVersion`.
    case speakerTooOld(room: String, version: UInt16)
    /// Rooms that play what they are sent and run no reverb of Tutti's.
    case snapclient(room: String)
    case sendspinPlayer(room: String)
    case browser(room: String)

    /// A number as the person typed it: 130, not 130.0.
    static func typed(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    public var message: UserMessage {
        switch self {
        case .settings(.outOfRange(let what, let value, let range)):
            UserMessage(.reverbOutOfRange, ["what": what, "value": Self.typed(value), "range": range])
        case .settings(.unknownPreset(let name)):
            UserMessage(.reverbUnknownPreset, ["name": name, "known": ReverbPreset.allCases.map(\.rawValue).joined(separator: ", ")])
        case .needsSettings:
            UserMessage(.reverbNeedsSettings, ["presets": ReverbPreset.allCases.map(\.rawValue).joined(separator: ", ")])
        case .offWithMix(let mix): UserMessage(.reverbOffWithMix, ["mix": Self.typed(mix)])
        case .unknownRoom(let room, let known):
            known.isEmpty ? UserMessage(.roomUnknown, ["room": room]) : UserMessage(.roomUnknownOfKnown, ["room": room, "known": known.joined(separator: ", ")])
        case .speakerTooOld(let room, let version):
            UserMessage(.reverbSpeakerTooOld, ["room": room, "version": String(version), "needed": String(WireProtocol.reverbVersion)])
        case .snapclient(let room): UserMessage(.reverbSnapclient, ["room": room])
        case .sendspinPlayer(let room): UserMessage(.reverbSendspinPlayer, ["room": room])
        case .browser(let room): UserMessage(.reverbBrowser, ["room": room])
        }
    }

    /// True for what the room cannot do (JSON-RPC −32000), false for what was asked wrongly (−32602).
    public var isAboutTheRoom: Bool {
        switch self {
        case .speakerTooOld, .snapclient, .sendspinPlayer, .browser: true
        default: false
        }
    }

    public var description: String { message.description }
}
