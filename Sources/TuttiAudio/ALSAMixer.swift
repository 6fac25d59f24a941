import CALSA

/// A sound card's simple mixer (what `amixer scontrols` lists): the DAC's
/// hardware volume. The room's volume is applied in software, so the
/// speaker only puts the hardware control at full scale, once, at start.
/// Not thread-safe; open, use and drop it on one thread.
public final class ALSAMixer {
    private let handle: OpaquePointer

    /// Opens the mixer of `card` (`hw:CARD=sndrpihifiberry`, `hw:1`, `default`).
    public init(card: String) throws(AudioError) {
        var mixer: OpaquePointer?
        var rc = snd_mixer_open(&mixer, 0)
        guard rc >= 0, let mixer else { throw Self.failure(card, "open mixer", rc) }
        rc = snd_mixer_attach(mixer, card)
        if rc >= 0 { rc = snd_mixer_selem_register(mixer, nil, nil) }
        if rc >= 0 { rc = snd_mixer_load(mixer) }
        guard rc >= 0 else {
            snd_mixer_close(mixer)
            throw Self.failure(card, "open mixer", rc)
        }
        handle = mixer
    }

    deinit { snd_mixer_close(handle) }

    /// The names of the controls that have a playback volume or switch.
    public var playbackControls: [String] {
        var names: [String] = []
        var element = snd_mixer_first_elem(handle)
        while let e = element {
            if snd_mixer_selem_has_playback_volume(e) != 0 || snd_mixer_selem_has_playback_switch(e) != 0,
               let name = snd_mixer_selem_get_name(e) {
                names.append(String(cString: name))
            }
            element = snd_mixer_elem_next(e)
        }
        return names
    }

    /// Unmutes `control` and sets it to 0 dB, or to its maximum when it
    /// cannot go that high or has no dB scale.
    public func setFullScale(_ control: String) throws(AudioError) {
        var element = snd_mixer_first_elem(handle)
        while let e = element {
            if let name = snd_mixer_selem_get_name(e), String(cString: name) == control {
                if snd_mixer_selem_has_playback_switch(e) != 0 { _ = snd_mixer_selem_set_playback_switch_all(e, 1) }
                guard snd_mixer_selem_has_playback_volume(e) != 0 else { return }
                var minDB = 0, maxDB = 0
                if snd_mixer_selem_get_playback_dB_range(e, &minDB, &maxDB) >= 0, maxDB >= 0, minDB <= 0 {
                    let rc = snd_mixer_selem_set_playback_dB_all(e, 0, 0)
                    if rc < 0 { throw Self.failure(control, "set 0 dB", rc) }
                } else {
                    var low = 0, high = 0
                    snd_mixer_selem_get_playback_volume_range(e, &low, &high)
                    let rc = snd_mixer_selem_set_playback_volume_all(e, high)
                    if rc < 0 { throw Self.failure(control, "set full volume", rc) }
                }
                return
            }
            element = snd_mixer_elem_next(e)
        }
        throw .device(name: control, operation: "find mixer control",
                      reason: "the card has \(playbackControls.isEmpty ? "no playback controls" : playbackControls.joined(separator: ", "))")
    }

    private static func failure(_ name: String, _ what: String, _ rc: Int32) -> AudioError {
        .device(name: name, operation: what, reason: String(cString: snd_strerror(rc)))
    }
}
