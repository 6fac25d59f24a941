import TuttiCore
import TuttiControlKit

/// Channel maps and stereo pairs (docs/sound.md): which channels each
/// speaker plays, set here and applied on the speaker before its EQ.
/// A speaker in a pair plays its side; otherwise its room's own map.
extension Leader {
    /// The stereo pairs, by name.
    public var stereoPairList: [StereoPair] { stereoPairs.withLock { $0.pairs } }

    /// A room's own channel map (what it plays when it is in no pair).
    public func channels(of room: String) -> ChannelMap {
        roomChannels.withLock { $0[room] } ?? .stereo
    }

    /// What a speaker plays: its side of a pair, else its room's own map.
    func channelsToPlay(speaker: String) -> ChannelMap {
        stereoPairs.withLock { $0.channelMap(of: speaker) } ?? channels(of: speaker)
    }

    /// Sets a room's channel map: kept, saved, and sent at once to its
    /// speaker (and whenever it joins). Refused for a pair's speaker (its
    /// side is the pair's), an unknown room, and a speaker that cannot play
    /// one (older than protocol v8, a snapclient, a Sendspin player); a web
    /// page that plays here plays it (the leader makes its PCM).
    public func setChannels(room: String, _ map: ChannelMap) throws(ChannelMapError) {
        if let pair = stereoPairs.withLock({ $0.pair(named: room) ?? $0.pair(containing: room) }) {
            throw .inPair(room: room, pair: pair.name)
        }
        guard knownSpeakers.contains(room) else { throw .unknownRoom(room, known: knownRooms) }
        try checkPlaysChannelMaps(room)
        roomChannels.withLock { $0[room] = map == .stereo ? nil : map }
        remember(room: room)
        markSoundDirty()
        sendChannels(toSpeaker: room)
        log.info("room \(room) plays \(map)")
        events.emit(.mixer)
    }

    /// Makes `left` and `right` one room named `name`: the left speaker
    /// plays the left channel on both its outputs, the right one the right.
    /// The right speaker takes the left one's volume, mute, EQ and group;
    /// each keeps its latency trim. Pairing the same two again (either way
    /// round) changes the sides or the name.
    @discardableResult
    public func pair(left: String, right: String, name: String?) throws(ChannelMapError) -> StereoPair {
        for speaker in [left, right] where knownSpeakers.contains(speaker) { try checkPlaysChannelMaps(speaker) }
        let known = knownSpeakers
        let (pair, ended) = try stereoPairs.withLock { (t: inout StereoPairs) throws(ChannelMapError) in
            try t.pair(left: left, right: right, name: name, known: known)
        }
        // One room: one volume, one mute, one EQ.
        let lead = settings(ofSpeaker: left)
        var follower = settings(ofSpeaker: right)
        follower.volume = lead.volume
        follower.muted = lead.muted
        configureSpeaker(right, follower)
        setSpeakerEqualizer(right, roomEqualizers.withLock { $0[left] } ?? RoomEqualizer())
        setSpeakerReverb(right, roomReverbs.withLock { $0[left] } ?? .off)
        var changed = Set(pair.speakers)
        for p in ended { changed.formUnion(p.speakers) }
        for speaker in changed.sorted() { sendChannels(toSpeaker: speaker) }
        markSoundDirty()
        // Both speakers play the left one's group (moving one moves both from now on).
        let groupID = grouping.withLock { $0.groupID(ofRoom: left) }
        if grouping.withLock({ $0.groupID(ofRoom: right) }) != groupID {
            do { _ = try moveRooms([left], to: groupID) } catch { log.warning("stereo pair \(pair.name): \(error)") }
        }
        log.info("stereo pair \(pair.name): \(pair.left) plays left, \(pair.right) right" + (ended.isEmpty ? "" : "; ended \(ended.map(\.name).joined(separator: ", "))"))
        events.emit(.rooms)
        events.emit(.groups)
        return pair
    }

    /// Ends a stereo pair (by its name or either speaker's): each speaker
    /// is a room of its own again, playing its own channel map (stereo
    /// unless set), in the group the pair was in.
    @discardableResult
    public func unpair(_ name: String) throws(ChannelMapError) -> StereoPair {
        let pair = try stereoPairs.withLock { (t: inout StereoPairs) throws(ChannelMapError) in try t.unpair(name) }
        for speaker in pair.speakers { sendChannels(toSpeaker: speaker) }
        markSoundDirty()
        log.info("stereo pair \(pair.name) ended: \(pair.left) and \(pair.right) are rooms of their own")
        events.emit(.rooms)
        events.emit(.groups)
        return pair
    }

    /// Swaps a stereo pair's sides (by its name or either speaker's).
    @discardableResult
    public func swapPair(_ name: String) throws(ChannelMapError) -> StereoPair {
        let pair = try stereoPairs.withLock { (t: inout StereoPairs) throws(ChannelMapError) in try t.swap(name) }
        for speaker in pair.speakers { sendChannels(toSpeaker: speaker) }
        markSoundDirty()
        log.info("stereo pair \(pair.name) swapped: \(pair.left) plays left, \(pair.right) right")
        events.emit(.rooms)
        return pair
    }

    /// Refuses a speaker connected now that cannot play a channel map (one
    /// not connected gets it when it joins; an old one then logs why not).
    private func checkPlaysChannelMaps(_ speaker: String) throws(ChannelMapError) {
        for session in sessions(ofRoom: speaker) {
            switch session.dialect {
            case .snapcast: throw .notATuttiSpeaker(room: speaker, kind: "Snapcast client")
            case .surface:
                if session.surfaceRoom?.playsRoomSound != true { throw .notATuttiSpeaker(room: speaker, kind: "Sendspin player") }
            case .tutti:
                if session.version < WireProtocol.channelMapVersion { throw .speakerTooOld(room: speaker, version: session.version) }
            }
        }
    }

    /// Sends a speaker what it plays now, on each of its connections that understands it.
    func sendChannels(toSpeaker speaker: String) {
        let message = Message.channels(channelsToPlay(speaker: speaker))
        let bytes = message.encoded()
        for session in sessions(ofRoom: speaker) where session.playsChannelMaps {
            session.send(message, encoded: bytes)
        }
    }
}
