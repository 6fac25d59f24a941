import TuttiCore
import TuttiControlKit

/// Reverb per room (docs/sound.md, "Reverb"): kept here with the room's
/// sound, sent to its speaker (protocol v10 `reverb`), which runs it after
/// the EQ. A stereo pair is one room: both speakers get the pair's reverb.
extension Leader {
    /// A room's reverb (a stereo pair's: its left speaker's, which its right one shares).
    public func reverb(of room: String) -> ReverbSettings {
        let speaker = speakers(of: room)[0]
        return roomReverbs.withLock { $0[speaker] } ?? .off
    }

    /// Sets a room's reverb: kept, saved, and sent at once to its speaker
    /// (a stereo pair's to both) and whenever it joins. Refused for an
    /// unknown room and for a speaker connected now that cannot play one
    /// (older than protocol v10, a snapclient, a Sendspin player, a browser
    /// playing here); a speaker not connected gets it when it joins.
    public func setReverb(room: String, _ settings: ReverbSettings) throws(ReverbRefusal) {
        let speakers = speakers(of: room)
        let known = knownSpeakers
        guard speakers.contains(where: { known.contains($0) }) || stereoPairs.withLock({ $0.pair(named: room) != nil }) else {
            throw .unknownRoom(room, known: knownRooms)
        }
        for speaker in speakers { try checkPlaysReverb(speaker) }
        for speaker in speakers { setSpeakerReverb(speaker, settings) }
        log.info("room \(room): reverb \(settings.summary)")
        events.emit(.mixer)
    }

    /// One speaker's reverb, kept and sent (a speaker that cannot play it keeps it for when it can).
    func setSpeakerReverb(_ speaker: String, _ settings: ReverbSettings) {
        roomReverbs.withLock { $0[speaker] = settings == .off ? nil : settings }
        remember(room: speaker)
        markSoundDirty()
        let message = Message.reverb(settings)
        let bytes = message.encoded()
        for session in sessions(ofRoom: speaker) where session.dialect == .tutti && session.version >= WireProtocol.reverbVersion {
            session.send(message, encoded: bytes)
        }
    }

    /// Refuses a speaker connected now that cannot play a reverb.
    private func checkPlaysReverb(_ speaker: String) throws(ReverbRefusal) {
        for session in sessions(ofRoom: speaker) {
            switch session.dialect {
            case .snapcast: throw .snapclient(room: speaker)
            case .surface: throw session.surfaceRoom?.kind == .browser ? .browser(room: speaker) : .sendspinPlayer(room: speaker)
            case .tutti:
                if session.version < WireProtocol.reverbVersion { throw .speakerTooOld(room: speaker, version: session.version) }
            }
        }
    }
}
