import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams
import TuttiControlKit

/// Commands on the source thread: the rules (`Transport`, in TuttiCore)
/// decide what a command does at the change point, a start latency ahead;
/// this carries out their actions on the decoder, the encoder and the rooms.
extension StreamPlayer {
    /// The grid frame a start latency from now: where changes take effect.
    func changePoint(now: Int64) -> Int {
        Int(StreamFormat.frames(nanoseconds: now + startLatency - epoch.nanoseconds).rounded(.up))
    }

    func apply(_ command: PlayerCommand) -> Result<CommandOutcome, PlayerError> {
        let now = Monotonic.now()
        switch command {
        case .add, .move, .shuffle, .repeatMode, .single, .consume, .speed, .pitch:
            break // editing the queue or the sound while the disk is out changes nothing about resuming
        default:
            awaitingFolder = nil // the user has taken over: a folder coming back no longer restarts play by itself
        }
        let at = max(changePoint(now: now), 0)
        let before = (state: state, tempo: tempo)
        let durations = published.withLock { $0.durations }
        let applied: Transport.Applied
        switch transport.apply(command, at: at, durations: durations) {
        case .failure(let error): return .failure(error)
        case .success(let a): applied = a
        }
        perform(applied.actions)
        if before.state == .playing, state == .paused {
            let heard = transport.pausedAt
            log.info("paused at \(fixedPoint(Double(heard.frame) / 48_000, decimals: 3)) s of entry \(heard.track)")
        }
        if tempo != before.tempo {
            log.info("speed \(fixedPoint(tempo.speed, decimals: 2))×, pitch \(fixedPoint(tempo.pitchSemitones, decimals: 1, plus: true)) semitones")
        }
        publish()
        let effective = ptsOf(frame: at).nanoseconds + codecDelay
        let index = queue.index(ofID: transport.heard(atFrame: at).track) ?? -1
        return .success(CommandOutcome(acceptedAt: now, effectiveAt: effective, state: state, track: index, added: applied.added))
    }

    /// Carries out the rules' actions, in order.
    func perform(_ actions: [Transport.Action]) {
        for action in actions {
            switch action {
            case .flush(let frame, let fade):
                let pts = ptsOf(frame: frame)
                purge(pts)
                // Followers cut their decoded audio, which Opus delays by its
                // look-ahead: the cut is where input frame `frame` is heard.
                let heardAt = pts + codecDelay
                broadcast([(.flush(streamID: streamID, from: heardAt, fade: fade), heardAt)])
            case .dropDecoded(let resettingEncoder):
                pending.removeAll(keepingCapacity: true)
                if resettingEncoder { encoder?.reset() }
            case .open(let position):
                open(entry: position.track, at: position.frame)
            case .endDecoding:
                endDecoding()
            case .releaseSource:
                background = nil
            case .start(let frames):
                published.withLock { $0.error = nil }
                consecutiveFailures = 0
                endedAtomic.store(false, ordering: .releasing)
                fadeIn = frames
            }
        }
    }
}
