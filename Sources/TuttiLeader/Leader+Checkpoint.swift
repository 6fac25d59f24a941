import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiTimeStretch
import TuttiAuth
import TuttiDiscovery
import TuttiLibrary
import TuttiNet
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// The player state saved to `state.db`: at once after a change, and the
/// position once a second while a group plays.
extension Leader {
    /// Saves the player state at once after a change, and the position once
    /// a second while a group plays (so a power cut loses at most a second
    /// of it); a failure is logged and retried a second later. With nothing
    /// playing and nothing left to retry it sleeps until the next change
    /// (`stateWake`: an event, or `markSoundDirty`).
    func checkpointLoop(_ store: PlayerStateStore) {
        var ticks = 0
        var tickAgain = true
        while running.load(ordering: .relaxed) {
            if tickAgain { _ = stateWake.wait(timeout: .now() + .seconds(1)) } else { stateWake.wait() }
            let dirty = stateDirty.exchange(false, ordering: .acquiringAndReleasing)
            ticks += 1
            if dirty || ticks % 5 == 0 {
                // A change that could not be saved is tried again at the next tick.
                if !save(to: store, onlyIfPlaying: !dirty), dirty { stateDirty.store(true, ordering: .releasing) }
            } else {
                savePositions(to: store)
            }
            if soundDirty.exchange(false, ordering: .acquiringAndReleasing) { saveSound(to: store) }
            recordEpisodePositions()
            // A position moves only while a group plays; a group that stops
            // or starts emits an event, which wakes this loop.
            let playing = streams.withLock { Array($0.values) }.contains { $0.player.nowPlaying().state.isActive }
            tickAgain = playing || stateDirty.load(ordering: .acquiring) || soundDirty.load(ordering: .acquiring)
        }
    }

    /// Room settings or presets changed: saved at the next checkpoint, which it wakes.
    func markSoundDirty() {
        // Once per checkpoint: a burst of changes (a volume slider) wakes it once.
        if !soundDirty.exchange(true, ordering: .acquiringAndReleasing) { stateWake.signal() }
    }

    /// Where each group is in the podcast episode it plays, into the
    /// library (resume from any room, after a restart); near its end the
    /// episode is marked played.
    func recordEpisodePositions() {
        guard let podcasts else { return }
        for stream in streams.withLock({ Array($0.values) }) { podcasts.record(stream.player.nowPlaying()) }
    }

    /// Logs the first failure of a kind and the recovery, not every checkpoint.
    func recordSave(_ error: (any Error)?) {
        let line = saveHealth.withLock { h in error.map { h.failed("\($0)") } ?? h.succeeded() }
        guard let line else { return }
        if error == nil { log.info(line) } else { log.error(line) }
        events.emit(.player) // status carries the warning: clients hear it change
    }

    /// Saves every group's player state (with `onlyIfPlaying`, only those
    /// whose position moves); false when a save failed.
    @discardableResult
    func save(to store: PlayerStateStore, onlyIfPlaying: Bool) -> Bool {
        var failure: (any Error)?
        for stream in streams.withLock({ Array($0.values) }) {
            let snapshot = stream.player.snapshot()
            guard !onlyIfPlaying || snapshot.wasPlaying else { continue }
            do {
                if stream.group == RoomGroups.mainID { try store.save(snapshot) } else { try store.save(snapshot, group: stream.group) }
            } catch {
                failure = error
            }
        }
        recordSave(failure)
        return failure == nil
    }

    /// The main group's position alone (two rows); other groups, whole, every 5 s.
    func savePositions(to store: PlayerStateStore) {
        let now = mainStream.player.nowPlaying()
        guard now.state.isActive else { return }
        do {
            try store.savePosition(entryID: now.entryID, positionMilliseconds: Int64(now.positionSeconds * 1000))
            recordSave(nil)
        } catch {
            recordSave(error)
        }
    }

    /// Saves the player state now (on shutdown).
    public func checkpoint() {
        guard let stateStore else { return }
        save(to: stateStore, onlyIfPlaying: false)
        saveSound(to: stateStore)
        recordEpisodePositions()
    }
}
