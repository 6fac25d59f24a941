import TuttiControlKit
import TuttiCore
import TuttiSystem
import TuttiWeb

/// "Play here" on the app's WebSocket: a page's binary messages
/// (`PlayHere` in TuttiCore). A clock ping is answered at once on the
/// handler lane that read it, stamped where civetweb handed it over and
/// under the socket's write lock; start and stop make the page a room
/// (`PlayHereRoom`) or end it.
extension WebSurface.Pages {
    func received(_ message: [UInt8], binary: Bool, arrival: Int64, on socket: WebSocket) {
        guard binary else { return received(message, on: socket) }
        let request: PlayHere.PageMessage
        do { request = try PlayHere.parse(message) } catch {
            log.info("web \(socket.peer): \(error); closing")
            return socket.terminate()
        }
        switch request {
        case .clockPing(let pageTime):
            try? socket.send { (true, PlayHere.clockReply(pageTime: pageTime, received: arrival, sent: Condition.now())) }
        case .start(let wanted, let format):
            startPlayingHere(socket, wanted: wanted, format: format)
        case .stop:
            stopPlayingHere(socket, gone: false)
        }
    }

    private func startPlayingHere(_ socket: WebSocket, wanted: String, format: PlayHere.AudioFormat) {
        // A room is a change to the house: a page that may only look does not make one.
        guard let client = clients.withLock({ $0[ObjectIdentifier(socket)] }), client.level >= .full else {
            try? socket.send(binary: PlayHere.stopped(reason: "log in to play here"))
            return
        }
        if let old = playing.withLock({ $0.removeValue(forKey: ObjectIdentifier(socket)) }) {
            old.retire() // a new name: the old room leaves first, quietly
            leader.detach(old)
        }
        let name = PlayHere.uniqueName(wanted, taken: Set(leader.followerNames))
        let room: PlayHereRoom
        do {
            room = try PlayHereRoom(name: name, socket: socket, streamCodec: leader.streamCodec, format: format, log: log)
            try room.start(in: playHereThreads)
        } catch {
            log.error("Play here \(name): \(error)")
            try? socket.send(binary: PlayHere.stopped(reason: "\(error)"))
            return
        }
        playing.withLock { $0[ObjectIdentifier(socket)] = room }
        room.send(PlayHere.joined(name: name))
        log.info("web page \(socket.peer) plays here as \(name) (\(format == .opus ? "Opus \(PlayHere.opusBitrateKbps) kb/s" : "16-bit PCM"))")
        leader.attach(room: name, room)
    }

    /// Ends the page's room, if it has one (`gone`: the socket closed, nothing is written to it).
    func stopPlayingHere(_ socket: WebSocket, gone: Bool) {
        guard let room = playing.withLock({ $0.removeValue(forKey: ObjectIdentifier(socket)) }) else { return }
        if gone { room.socketClosed() }
        leader.detach(room) // the leader closes it: the page hears "stopped"
    }
}
