import Testing
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

/// The player's state file: what is saved is what comes back, and a file
/// written before `StateSchema` (unversioned tables, JSON from Foundation)
/// is read as it was.
@Suite struct PlayerStateStoreTests {
    private func queue(seed: UInt64 = 7) -> PlayQueue {
        PlayQueue(entries: [QueueEntry(id: 3, uri: "/music/a.mp3"), QueueEntry(id: 9, uri: "/music/ü \"b\".flac")], order: [1, 0],
                  current: 1, shuffle: true, repeatMode: .all, single: .oneshot, consume: true, seed: seed)
    }

    @Test func everyRecordReadsBackAsSaved() throws {
        let dir = makeTemporaryDirectory()
        let store = try PlayerStateStore(path: dir + "/state.db")
        #expect(try store.load(seed: 7) == nil && store.loadGroups() == nil && store.loadRooms().isEmpty)

        let main = PlayerSnapshot(queue: queue(), entryID: 9, positionMilliseconds: 61_250, wasPlaying: true,
                                  tempo: PlaybackTempo(speed: 1.25, pitchSemitones: -2))
        try store.save(main)
        try store.savePosition(entryID: 9, positionMilliseconds: 62_000)
        try store.save(main, group: "g2")
        let eq = try EqualizerSettings(gains: (0..<EqualizerSettings.bandCount).map { Double($0) - 4.5 }, bass: 1.5, treble: -3,
                                       preamp: .manual(decibels: -6))
        let rooms = ["den": PlayerStateStore.RoomSound(settings: RoomSettings(volume: 40, muted: true, latencyTrimNanoseconds: -2_500_000),
                                                       equalizer: eq, preset: "Rock"),
                     "küche": PlayerStateStore.RoomSound(settings: RoomSettings(), equalizer: .flat, preset: nil)]
        try store.saveRooms(rooms)
        let groups = RoomGroups(groups: [RoomGroups.Group(id: RoomGroups.mainID, name: "Home"), RoomGroups.Group(id: "g2", name: "Garden")],
                                assignment: ["den": "g2"], beforeParty: ["den": RoomGroups.mainID], partyGroup: "g2")
        try store.saveGroups(groups)
        try store.savePresets([EqualizerPreset(name: "Mine", gains: Array(repeating: 2, count: EqualizerSettings.bandCount))])

        let again = try PlayerStateStore(path: dir + "/state.db")
        var expected = main
        expected.positionMilliseconds = 62_000
        #expect(try again.load(seed: 7) == expected)
        #expect(try again.load(group: "g2", seed: 7) == main)
        #expect(try again.loadRooms() == rooms)
        #expect(try again.loadGroups() == groups)
        #expect(try again.loadPresets().map(\.name) == ["Mine"])
        try again.forget(group: "g2")
        #expect(try again.load(group: "g2", seed: 7) == nil)
        #expect(try Database(path: dir + "/state.db").userVersion == StateSchema.latestVersion)
    }

    @Test func aFileFromBeforeTheSchemaVersionIsReadAsItWas() throws {
        let dir = makeTemporaryDirectory()
        let old = try Database(path: dir + "/state.db")
        // The tables and records as the Foundation-based store wrote them (JSONSerialization, sorted keys).
        try old.execute("""
            CREATE TABLE IF NOT EXISTS player (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS queue (position INTEGER PRIMARY KEY, id INTEGER NOT NULL, uri TEXT NOT NULL, play_rank INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS group_player (group_id TEXT PRIMARY KEY, snapshot TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS room_sound (room TEXT PRIMARY KEY, sound TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS eq_preset (name TEXT PRIMARY KEY, gains TEXT NOT NULL);
            INSERT INTO room_sound VALUES ('den', '{"bass":1.5,"gains":[0,0,0,0,0,0,0,0,0,0],"latencyNs":-2500000,"muted":true,"preamp":-6,"treble":0,"volume":40}');
            INSERT INTO room_sound VALUES ('bad', 'not json');
            INSERT INTO group_player VALUES ('g2', '{"consume":false,"current":null,"entries":[{"id":4,"uri":"\\/music\\/x.mp3"}],"order":[0],"pitch":0,"playing":false,"positionMs":1500,"repeat":"off","shuffle":false,"single":"off","speed":1}');
            INSERT INTO player VALUES ('groups', '{"assignment":{"den":"g2"},"beforeParty":null,"groups":[{"id":"main","name":"Home"},{"id":"g2","name":"Garden"}],"partyGroup":null}');
            """)
        let store = try PlayerStateStore(path: dir + "/state.db")
        let rooms = try store.loadRooms()
        #expect(rooms.keys.sorted() == ["den"])
        #expect(rooms["den"]?.settings == RoomSettings(volume: 40, muted: true, latencyTrimNanoseconds: -2_500_000))
        #expect(rooms["den"]?.equalizer.bass == 1.5 && rooms["den"]?.equalizer.preamp == .manual(decibels: -6))
        let g2 = try #require(try store.load(group: "g2", seed: 1))
        #expect(g2.queue.entries == [QueueEntry(id: 4, uri: "/music/x.mp3")] && g2.entryID == nil && g2.positionMilliseconds == 1500)
        let groups = try #require(try store.loadGroups())
        #expect(groups.groups.map(\.name) == ["Home", "Garden"] && groups.assignment == ["den": "g2"] && groups.beforeParty == nil)
    }
}
