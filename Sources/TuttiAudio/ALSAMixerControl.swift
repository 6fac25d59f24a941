import CALSA
import Glibc
import TuttiCore

/// Who carries a room's volume (`--mixer`): the samples (software, the
/// default), an ALSA mixer control (`hw:CONTROL`: the samples stay
/// bit-exact and the DAC or amplifier does the work), or nobody (`none`:
/// the amplifier's own knob; mute still silences).
public enum MixerSpec: Equatable, Sendable, CustomStringConvertible {
    case software
    case hardware(control: String)
    case none

    public init(parsing text: String) throws(AudioError) {
        switch text {
        case "software": self = .software
        case "none": self = .none
        default:
            guard text.hasPrefix("hw:"), text.count > 3 else {
                throw .badOutput(spec: text, reason: "expected --mixer software, none or hw:CONTROL (a mixer control of the DAC, e.g. hw:Digital or hw:PCM; see `amixer scontrols`)")
            }
            self = .hardware(control: String(text.dropFirst(3)))
        }
    }

    public var description: String {
        switch self {
        case .software: "software"
        case .none: "none"
        case .hardware(let c): "hw:\(c)"
        }
    }
}

/// One playback control of a sound card's mixer, through libasound's
/// simple-mixer API, set in dB so that a room's volume sounds the same as
/// with software volume (`RoomSettings.decibels`).
///
/// Thread contract: used from one thread at a time (the follower's
/// connection thread); never from the audio thread (mixer writes are ioctls).
public final class ALSAMixerControl {
    public let device: String
    public let control: String
    private var handle: OpaquePointer?
    private let element: OpaquePointer
    /// The control's range in dB (nil: it has no dB table; its raw steps are used).
    private let range: (min: Double, max: Double)?
    private let rawRange: (min: Int, max: Int)
    private let hasSwitch: Bool

    /// The card of a PCM name: `hw:1,0` and `plughw:1` → `hw:1`; other names as they are (`default`).
    public static func card(ofDevice device: String) -> String {
        for prefix in ["plughw:", "hw:"] where device.hasPrefix(prefix) {
            let card = device.dropFirst(prefix.count).split(separator: ",").first.map(String.init) ?? "0"
            return "hw:\(card)"
        }
        return device
    }

    public init(device: String, control: String) throws(AudioError) {
        self.device = device
        self.control = control
        let card = Self.card(ofDevice: device)
        var h: OpaquePointer?
        func fail(_ op: String, _ rc: Int32) -> AudioError {
            .device(name: "mixer \(card)", operation: op, reason: String(cString: snd_strerror(rc)))
        }
        var rc = snd_mixer_open(&h, 0)
        guard rc >= 0, let h else { throw fail("open", rc) }
        rc = snd_mixer_attach(h, card)
        if rc >= 0 { rc = snd_mixer_selem_register(h, nil, nil) }
        if rc >= 0 { rc = snd_mixer_load(h) }
        guard rc >= 0 else { snd_mixer_close(h); throw fail("attach", rc) }
        var sid: OpaquePointer?
        snd_mixer_selem_id_malloc(&sid)
        defer { snd_mixer_selem_id_free(sid) }
        snd_mixer_selem_id_set_index(sid, 0)
        snd_mixer_selem_id_set_name(sid, control)
        guard let e = snd_mixer_find_selem(h, sid), snd_mixer_selem_has_playback_volume(e) != 0 else {
            var names: [String] = []
            var e = snd_mixer_first_elem(h)
            while let elem = e {
                if snd_mixer_selem_has_playback_volume(elem) != 0 { names.append(String(cString: snd_mixer_selem_get_name(elem))) }
                e = snd_mixer_elem_next(elem)
            }
            snd_mixer_close(h)
            throw .device(name: "mixer \(card)", operation: "find control '\(control)'",
                          reason: "no such playback volume control (controls: \(names.isEmpty ? "none" : names.joined(separator: ", ")))")
        }
        handle = h
        element = e
        var lo = 0, hi = 0
        if snd_mixer_selem_get_playback_dB_range(e, &lo, &hi) == 0, hi > lo {
            range = (Double(lo) / 100, Double(hi) / 100)
        } else {
            range = nil
        }
        snd_mixer_selem_get_playback_volume_range(e, &lo, &hi)
        rawRange = (lo, hi)
        hasSwitch = snd_mixer_selem_has_playback_switch(e) != 0
    }

    deinit { if let handle { snd_mixer_close(handle) } }

    /// Sets the control to `decibels` (clamped to its range); nil mutes
    /// (its switch if it has one, else its lowest setting).
    public func set(decibels: Double?) throws(AudioError) {
        func check(_ rc: Int32, _ op: String) throws(AudioError) {
            if rc < 0 { throw .device(name: "mixer \(Self.card(ofDevice: device))", operation: op, reason: String(cString: snd_strerror(rc))) }
        }
        if hasSwitch { try check(snd_mixer_selem_set_playback_switch_all(element, decibels == nil ? 0 : 1), "set \(control) switch") }
        let db = decibels ?? -200
        if let range {
            let target = min(range.max, max(range.min, db))
            try check(snd_mixer_selem_set_playback_dB_all(element, Int((target * 100).rounded()), 0), "set \(control) to \(target) dB")
        } else {
            // No dB table: the control's steps, spread over the same 50 dB the software curve spans.
            let fraction = decibels == nil ? 0 : max(0, min(1, 1 + db / 50))
            let raw = rawRange.min + Int((Double(rawRange.max - rawRange.min) * fraction).rounded())
            try check(snd_mixer_selem_set_playback_volume_all(element, raw), "set \(control) to step \(raw)")
        }
    }
}
