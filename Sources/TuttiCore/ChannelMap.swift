/// Which of the stream's two channels a room's speaker plays on its two
/// outputs (docs/sound.md, "Channel maps and stereo pairs").
///
/// Applied on the speaker, after the drift resampler and before the EQ:
/// `stereo` passes the samples untouched (bit-exact), `left` and `right`
/// copy one channel to both outputs exactly, `mono` is (L + R) / 2 (−6 dB,
/// so two full-scale channels in phase never clip), `swap` exchanges them.
public enum ChannelMap: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case stereo = 0
    case left = 1
    case right = 2
    case mono = 3
    case swap = 4

    /// The names people and clients use, in the order menus show them.
    public var name: String {
        switch self {
        case .stereo: "stereo"
        case .left: "left"
        case .right: "right"
        case .mono: "mono"
        case .swap: "swap"
        }
    }

    public var description: String { name }

    /// By name, case-insensitively ("l" and "r" too); nil when it is none of them.
    public init?(name: String) {
        switch name.lowercased() {
        case "stereo": self = .stereo
        case "left", "l": self = .left
        case "right", "r": self = .right
        case "mono": self = .mono
        case "swap", "swapped": self = .swap
        default: return nil
        }
    }

    /// Every name, for error messages.
    public static var names: [String] { allCases.map(\.name) }

    /// One frame as this map plays it.
    @inline(__always)
    public func map(_ left: Float, _ right: Float) -> (Float, Float) {
        switch self {
        case .stereo: (left, right)
        case .left: (left, left)
        case .right: (right, right)
        case .mono: ((left + right) * 0.5, (left + right) * 0.5)
        case .swap: (right, left)
        }
    }
}

/// Why a channel map or a stereo pair was refused: what the person asked,
/// and what to do instead.
public enum ChannelMapError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not one of `ChannelMap.names`.
    case unknownMap(String)
    /// No such room (the known ones listed).
    case unknownRoom(String, known: [String])
    /// The room's speaker speaks a protocol older than `channelMapVersion`.
    case speakerTooOld(room: String, version: UInt16)
    /// The room is not a Tutti speaker (a snapclient, a Sendspin player): it plays what it is sent.
    case notATuttiSpeaker(room: String, kind: String)
    /// The room's channels are the pair's: swap or unpair instead.
    case inPair(room: String, pair: String)
    /// A pair needs two different rooms.
    case sameRoom(String)
    /// The pair's name is empty, too long, or another room's or pair's.
    case badPairName(String)
    /// No pair by that name (or holding that room).
    case unknownPair(String, known: [String])

    /// What the person is told (the catalogue's `channels.*`).
    public var message: UserMessage {
        switch self {
        case .unknownMap(let name):
            UserMessage(.channelsUnknownMap, ["name": name, "names": ChannelMap.names.joined(separator: ", ")])
        case .unknownRoom(let room, let known):
            known.isEmpty ? UserMessage(.roomUnknown, ["room": room]) : UserMessage(.roomUnknownOfKnown, ["room": room, "known": known.joined(separator: ", ")])
        case .speakerTooOld(let room, let version):
            UserMessage(.channelsSpeakerTooOld, ["room": room, "version": "\(version)", "needed": "\(WireProtocol.channelMapVersion)"])
        case .notATuttiSpeaker(let room, let kind):
            UserMessage(kind == "Snapcast client" ? .channelsSnapclient : .channelsSendspinPlayer, ["room": room])
        case .inPair(let room, let pair):
            UserMessage(.channelsInPair, ["room": room, "pair": pair])
        case .sameRoom(let room):
            UserMessage(.channelsSameRoom, ["room": room])
        case .badPairName(let name):
            UserMessage(.channelsBadPairName, ["name": name])
        case .unknownPair(let name, let known):
            known.isEmpty ? UserMessage(.channelsNoPairs, ["name": name]) : UserMessage(.channelsUnknownPair, ["name": name, "known": known.joined(separator: ", ")])
        }
    }

    public var description: String { message.description }
}

/// Applies a room's channel map to a block of interleaved stereo float
/// frames, in place, on the audio thread. A change of map is crossfaded over
/// `fadeFrames` (10 ms) so it never clicks; once faded, `stereo` returns at
/// once without touching a sample.
///
/// Thread contract: a value the audio thread owns (a local of its loop);
/// `process` allocates nothing and takes no lock.
public struct ChannelMapper: Sendable {
    public static let fadeFrames = 480
    public private(set) var current: ChannelMap
    private var previous: ChannelMap
    private var fadeLeft = 0

    public init(_ map: ChannelMap = .stereo) { current = map; previous = map }

    /// Takes `target` at once, with no fade: while nothing plays (silence
    /// written, a wait), so a map set before the music starts is exact from
    /// its first frame.
    @inline(__always)
    public mutating func settle(on target: ChannelMap) {
        current = target; previous = target; fadeLeft = 0
    }

    /// Maps `frames` frames of `block` (interleaved L, R), moving to `target` first if it changed.
    @inline(__always)
    public mutating func process(_ block: UnsafeMutablePointer<Float>, frames: Int, target: ChannelMap) {
        if target != current {
            previous = current
            current = target
            fadeLeft = Self.fadeFrames
        }
        if fadeLeft > 0 {
            let step = 1 / Float(Self.fadeFrames)
            for k in 0..<frames {
                let l = block[2 * k], r = block[2 * k + 1]
                let new = current.map(l, r)
                if fadeLeft > 0 {
                    let t = Float(Self.fadeFrames - fadeLeft) * step
                    let old = previous.map(l, r)
                    block[2 * k] = old.0 + (new.0 - old.0) * t
                    block[2 * k + 1] = old.1 + (new.1 - old.1) * t
                    fadeLeft -= 1
                } else {
                    block[2 * k] = new.0; block[2 * k + 1] = new.1
                }
            }
            return
        }
        Self.apply(current, to: block, frames: frames)
    }

    /// The map alone, with no fade: what `process` does once a change has faded in.
    @inline(__always)
    public static func apply(_ map: ChannelMap, to block: UnsafeMutablePointer<Float>, frames: Int) {
        switch map {
        case .stereo:
            return
        case .left:
            for k in 0..<frames { block[2 * k + 1] = block[2 * k] }
        case .right:
            for k in 0..<frames { block[2 * k] = block[2 * k + 1] }
        case .mono:
            for k in 0..<frames {
                let m = (block[2 * k] + block[2 * k + 1]) * 0.5
                block[2 * k] = m; block[2 * k + 1] = m
            }
        case .swap:
            for k in 0..<frames { let l = block[2 * k]; block[2 * k] = block[2 * k + 1]; block[2 * k + 1] = l }
        }
    }
}
