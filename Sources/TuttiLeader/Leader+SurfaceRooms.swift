import TuttiAudio
import TuttiCore
import TuttiControlKit
import TuttiDiscovery
import TuttiNet

/// Rooms that a surface serves (Sendspin players, web pages that play
/// here): each is a `FollowerSession` of the surface dialect, so it is
/// listed, grouped and sent its group's chunks as a speaker is (and its
/// channel map and EQ where it plays them: `SurfaceRoom.playsRoomSound`);
/// the surface owns its connection.
extension Leader {
    public var streamCodec: Codec { configuration.codec }

    public func attach(room name: String, _ room: any SurfaceRoom) {
        let session = FollowerSession(connection: nil, leader: self, log: log, dialect: .surface, surfaceRoom: room)
        session.name = name
        sessions.withLock { $0[ObjectIdentifier(session)] = session }
        guard running.load(ordering: .acquiring) else { return session.close(reason: "leader stopping") }
        log.info("room \(name) joined (a surface's player)")
        admitDuringParty(name)
        applyKeptGroupSound(toJoining: name)
        let stream = stream(forRoom: name)
        room.deliver(.follow(stream: describe(stream), from: LeaderTime(nanoseconds: Monotonic.now())))
        room.deliver(.settings(settings(ofSpeaker: name)))
        if room.playsRoomSound {
            room.deliver(.channels(channelsToPlay(speaker: name)))
            room.deliver(.equalizer(equalizer(of: name).settings))
        }
        join(session, stream: stream)
    }

    public func detach(_ room: any SurfaceRoom) {
        let session = sessions.withLock { $0.values.first { $0.surfaceRoom === room } }
        session?.close(reason: "it left")
    }
}
