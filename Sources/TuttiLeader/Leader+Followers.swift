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

/// Speakers: the clock service, accepting followers (Tutti and Snapcast),
/// attaching each to its group's stream, fanning chunks out to them.
extension Leader {
    // MARK: Clock service

    /// UDP clock exchanges on the listener's port: a request is answered at
    /// once, stamped with the kernel's receive time (t2) and the time just
    /// before the reply is sent (t3). v7: a request names a joined session
    /// by its tag and carries a MAC under that session's clock key, and so
    /// does the reply; an unknown tag or a bad MAC gets no answer. Plain v5
    /// requests are answered on an open system only. A request is as long
    /// as its answer, so nobody can amplify through it.
    /// Without the port (taken), v5 followers fall back to the TCP stream.
    func clockService() -> LoopService? {
        let socket: UDPSocket
        do { socket = try UDPSocket.bind(listener.endpoint) } catch {
            log.warning("clock exchanges over UDP are off (\(error)): followers use the TCP stream for them")
            return nil
        }
        clockServer = socket
        return LoopService("clock", threadName: "tutti-clock", wake: { socket.close() }) { [self] in
            serveClock(socket)
        }
    }

    private func serveClock(_ socket: UDPSocket) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { buffer.deallocate() }
        while running.load(ordering: .relaxed) {
            let received: (count: Int, arrival: Int64, from: UDPSocket.Peer)
            do { received = try socket.receive(into: buffer) } catch {
                if socket.closed || !running.load(ordering: .relaxed) { return }
                continue
            }
            let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<received.count])
            let t2 = LeaderTime(nanoseconds: received.arrival != 0 ? received.arrival : Monotonic.now())
            switch ClockDatagram.decode(datagram) {
            case .clockRequest(let tag, let id, let t1, _)?:
                // v7: only a joined session's tag, with its MAC; anything else gets no answer.
                let security = speakerSecurity
                guard let key = security.clockKey(tag: tag), ClockAuth.verify(datagram, key: key, crypto: security.crypto) else { continue }
                let reply = ClockAuth.sealed(.clockResponse(id: id, t1: t1, t2: t2, t3: LeaderTime(nanoseconds: Monotonic.now()),
                                                            mac: [UInt8](repeating: 0, count: ClockAuth.macBytes)), key: key, crypto: security.crypto)
                try? socket.send(reply, to: received.from)
            case .timeRequest(let id, let t1)? where speakerSecurity.open:
                // v5 and v6 speakers, on an open system only.
                let reply = Message.timeResponse(id: id, t1: t1, t2: t2, t3: LeaderTime(nanoseconds: Monotonic.now())).encoded()
                try? socket.send(reply, to: received.from)
            default:
                continue
            }
        }
    }

    // MARK: Followers

    /// A speaker port (Tutti's, or Snapcast's stream port): each connection
    /// is a `FollowerSession` served on the port's thread for it. Stopping
    /// says goodbye to every speaker on it.
    func speakerPort(_ listener: TCPListener, dialect: FollowerSession.Dialect) -> TCPService {
        TCPService(dialect == .tutti ? "speaker port" : "Snapcast stream port", listener: listener, loop: acceptLoop, budget: sessionBudget, log: log,
                   threadName: "tutti-session-r",
                   // On a closed system, a few places beyond the limit are lent to Tutti speakers for 2 s to prove they are paired.
                   mayProvision: { [self] in dialect == .tutti && !speakerSecurity.open },
                   closeConnections: { [self] in sayGoodbye(reason: "leader stopping") },
                   serve: { [self] connection, ticket in
                       let session = FollowerSession(connection: connection, leader: self, log: log, dialect: dialect, ticket: ticket)
                       sessions.withLock { $0[ObjectIdentifier(session)] = session }
                       // Registered after the port's goodbyes went out (a connection taken as the leader stopped): it goes now.
                       guard running.load(ordering: .acquiring) else { return session.close(reason: "leader stopping") }
                       handshakeWake.withLock { handshakeWake.signal() }
                       session.run()
                   })
    }

    /// Tells every speaker goodbye, all at once, whichever port it came in
    /// on (the first port to stop does it for both). A snapclient knows no
    /// goodbye: it is closed at once. A Tutti speaker gets `bye` after the
    /// message being written; once it went, the leader stops sending (a FIN)
    /// but still reads, so the speaker's own last report cannot make the
    /// kernel reset the connection over an unread `bye`. The speaker closes
    /// on `bye`; whoever has not within half a second is closed.
    func sayGoodbye(reason: String) {
        let leaving = sessions.withLock { Array($0.values) }
        for s in leaving where s.dialect != .tutti { s.close(reason: reason) }
        let speakers = leaving.filter { $0.dialect == .tutti }
        for s in speakers { s.sayGoodbye(reason: reason) }
        let deadline = Condition.deadline(afterSeconds: 0.5)
        for s in speakers where s.waitUntilSent(deadline: deadline) { s.connection.finishSending() }
        sessionsChanged.withLock {
            while speakers.contains(where: { !$0.isClosed }), sessionsChanged.wait(untilNanoseconds: deadline) {}
        }
        for s in speakers { s.close(reason: reason) }
    }

    /// What guards the speaker ports: the desk for room commands, and
    /// the watch that closes connections that have not finished their
    /// handshake by their deadline (`FollowerSession.handshakeDeadline`).
    /// A per-read timeout cannot do it: a byte every few seconds never lets
    /// one expire. One thread, asleep until the next deadline.
    func speakerGuards() -> LoopService {
        roomCommands.attach(log: log.with(label: "buttons")) { [weak self] action, room in self?.perform(action, room: room) }
        return LoopService("speaker guards", threadName: "tutti-handshakes", stackSize: 256 << 10, wake: { [self] in
            roomCommands.stop()
            handshakeWake.withLock { handshakeWake.signal() }
        }) { [self] in
            handshakeWake.lock()
            defer { handshakeWake.unlock() }
            while running.load(ordering: .relaxed) {
                let waiting = sessions.withLock { $0.values.filter { $0.streamID.load(ordering: .acquiring) == 0 } }
                let look = JoinDeadlines.sweep(waiting.map { s in let d = s.handshakeDeadline; return (id: (s, d), deadline: d) }, now: Monotonic.now())
                for (session, deadline) in look.close {
                    let seconds = (deadline - session.connectedAt) / nanosecondsPerSecond
                    session.close(reason: "no handshake within \(seconds) s of connecting")
                }
                if let next = look.nextLook { handshakeWake.wait(untilNanoseconds: next) } else { handshakeWake.wait() }
            }
        }
    }

    func describe(_ stream: LeaderStream) -> StreamDescription {
        StreamDescription(streamID: stream.id, codec: configuration.codec, framesPerChunk: UInt32(configuration.framesPerChunk),
                          bufferNanoseconds: Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond)
    }

    /// The stream a room hears: its group's.
    func stream(forRoom room: String) -> LeaderStream {
        let group = grouping.withLock { $0.groupID(ofRoom: room) }
        return streams.withLock { $0[group] } ?? mainStream
    }

    /// Called by a session once its follower is welcomed to `stream`: it
    /// gets the chunks still ahead of now (the live position) then everything new.
    func join(_ session: FollowerSession, stream: LeaderStream) {
        if let name = session.name { remember(room: name) }
        let now = LeaderTime(nanoseconds: Monotonic.now())
        stream.backlog.withLock { chunks in
            for chunk in chunks where chunk.pts > now { session.send(chunk.message, encoded: chunk.bytes) }
            session.streamID.store(stream.id, ordering: .releasing)
        }
        // The room may have been moved between its welcome and now.
        groupChanges.withLock { applyGrouping() }
        events.emit(.rooms)
    }

    /// Moves a joined session to `stream` a start latency from now: it gets
    /// `follow`, then the new stream's chunks from that point, then everything new.
    /// Under the new stream's backlog lock, so each of its chunks is queued exactly once;
    /// old-stream chunks queued after `follow` are ignored by the follower.
    func switchSession(_ session: FollowerSession, to stream: LeaderStream) {
        // The group's lead, or the moving room's own if its stream is slower.
        let own = session.name.flatMap { name in syncReports.withLock { $0[name]?.streamDelayMaximumNanoseconds } }
        let lead = max(stream.commandLead.nanoseconds, stream.commandLead.policy.lead(streamDelays: [own]))
        let from = LeaderTime(nanoseconds: Monotonic.now() + lead)
        let chunk = StreamFormat.nanoseconds(frames: configuration.framesPerChunk)
        stream.backlog.withLock { chunks in
            let current = session.streamID.load(ordering: .acquiring)
            guard current != 0, current != stream.id else { return }
            let follow = Message.follow(stream: describe(stream), from: from)
            session.send(follow, encoded: follow.encoded())
            for c in chunks where c.pts + chunk > from { session.send(c.message, encoded: c.bytes) }
            session.streamID.store(stream.id, ordering: .releasing)
        }
        updateCommandLeads()
    }

    /// Every joined session hears its room's group (after a group change).
    /// Call under `groupChanges`.
    func applyGrouping() {
        for session in sessions.withLock({ Array($0.values) }) {
            guard let name = session.name, session.streamID.load(ordering: .acquiring) != 0 else { continue }
            let target = stream(forRoom: name)
            if session.streamID.load(ordering: .acquiring) != target.id {
                log.info("room \(name) now plays group \(target.group)")
                switchSession(session, to: target)
            }
        }
    }

    /// Forgets a paired speaker and closes its connections; false if none had that name.
    public func forgetSpeaker(_ name: String) -> Bool {
        let keys = speakerSecurity.forget(name: name)
        guard !keys.isEmpty else { return false }
        for session in sessions.withLock({ Array($0.values) }) where session.speakerKey.map({ keys.contains($0) }) == true {
            session.close(reason: "speaker \(name) was forgotten on the leader")
        }
        events.emit(.speakers)
        return true
    }

    func remove(_ session: FollowerSession) {
        let removed = sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) != nil }
        sessionsChanged.withLock { sessionsChanged.broadcast() } // a stopping leader waits for its speakers to go
        if removed { roomCommands.forget(ObjectIdentifier(session)) }
        if let name = session.name {
            healthReports.withLock { _ = $0.removeValue(forKey: name) }
            syncReports.withLock { _ = $0.removeValue(forKey: name) }
            updateCommandLeads()
        }
        events.emit(.rooms)
    }

    func record(sync report: SyncReport, from name: String) {
        syncReports.withLock { $0[name] = report }
        updateCommandLeads()
    }

    /// Each group's lead from its connected rooms' latest stream delays;
    /// logged when it moves by 20 ms or more (at most once a second a group).
    func updateCommandLeads() {
        commandLeadUpdates.withLock { _ in updateCommandLeadsLocked() }
    }

    private func updateCommandLeadsLocked() {
        let reports = syncReports.withLock { $0.mapValues(\.streamDelayMaximumNanoseconds) }
        var delaysByStream: [UInt32: [(String, Int64?)]] = [:]
        for session in sessions.withLock({ Array($0.values) }) {
            guard let name = session.name else { continue }
            delaysByStream[session.streamID.load(ordering: .acquiring), default: []].append((name, reports[name] ?? nil))
        }
        for stream in streams.withLock({ Array($0.values) }) {
            let delays = delaysByStream[stream.id] ?? []
            let lead = stream.commandLead
            let value = lead.policy.lead(streamDelays: delays.lazy.map(\.1))
            guard value != lead.nanoseconds else { continue }
            lead.set(value)
            // At most a line a second: a room can send reports as fast as it likes.
            let now = Monotonic.now()
            if abs(value - lead.lastLogged.load(ordering: .relaxed)) >= 20 * nanosecondsPerMillisecond,
               now - lead.lastLoggedAt.load(ordering: .relaxed) >= nanosecondsPerSecond {
                lead.lastLogged.store(value, ordering: .relaxed)
                lead.lastLoggedAt.store(now, ordering: .relaxed)
                let worst = delays.compactMap { d in d.1.map { (d.0, $0) } }.max { $0.1 < $1.1 }
                log.info((stream.group == RoomGroups.mainID ? "" : "group \(stream.group): ") +
                         "commands now take effect \(value / nanosecondsPerMillisecond) ms ahead" +
                         (worst.map { " (room \($0.0)'s stream delivers up to \($0.1 / nanosecondsPerMillisecond) ms late)" } ?? ""))
            }
        }
    }

    func record(health: HealthReport, from name: String) {
        healthReports.withLock { $0[name] = health }
        // Pages show each room's sync: one announcement a second, whatever the number of rooms.
        let now = Monotonic.now()
        let last = lastHealthAnnounced.load(ordering: .relaxed)
        if now - last >= nanosecondsPerSecond, lastHealthAnnounced.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            events.emit(.health)
        }
    }

    /// Sends `messages` (each with the PTS from which it matters) to the
    /// stream's rooms, in one write per room, and keeps them for joiners.
    func broadcast(_ messages: [(Message, LeaderTime)], on stream: LeaderStream) {
        guard !messages.isEmpty else { return }
        let encoded = messages.map { $0.0.encoded() }
        let joined = encoded.count == 1 ? encoded[0] : Array(encoded.joined())
        let now = LeaderTime(nanoseconds: Monotonic.now())
        // Under the backlog lock so a joining follower sees each chunk exactly once.
        let targets: [FollowerSession] = stream.backlog.withLock { chunks in
            chunks.removeAll { $0.pts <= now }
            for (i, (message, pts)) in messages.enumerated() { chunks.append((pts, message, encoded[i])) }
            return sessions.withLock { Array($0.values) }.filter { $0.streamID.load(ordering: .acquiring) == stream.id }
        }
        for session in targets { session.send(messages.lazy.map(\.0), joined: joined) }
    }
}
