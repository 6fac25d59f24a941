import TuttiCore
import TuttiAudio
import TuttiNet
import TuttiControlKit

/// A stock Snapcast client (snapclient, Snapdroid, an ESP32 speaker) as a
/// room: it gets the group's chunks, encoded once for every room, framed
/// as Snapcast wire chunks; its volume, mute and latency trim as Snapcast
/// server settings. Snapcast's clients know no flush: a cut (pause, skip,
/// seek) or a change of group sends a fresh codec header, which makes a
/// client drop what it holds, and the audio from the cut on follows.
extension FollowerSession {
    /// The room a snapclient is: the ID it was given (`--hostID`) when
    /// that is not its MAC address, else its host name (with its instance
    /// number past the first, as snapclient -i gives several per host).
    static func snapcastRoomName(hello: [String: JSONValue]) -> String {
        let id = hello["ID"]?.string ?? ""
        let mac = hello["MAC"]?.string ?? ""
        let host = hello["HostName"]?.string ?? ""
        let instance = hello["Instance"]?.integer ?? 1
        var name: String
        if !id.isEmpty && id != mac && !(id.hasPrefix(mac) && id.dropFirst(mac.count).hasPrefix("#")) {
            name = id
        } else {
            name = host.isEmpty ? (id.isEmpty ? "snapclient" : id) : host
            if instance > 1 { name += " \(instance)" }
        }
        // A room name is a short line of text.
        return String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }.prefix(64).map(Character.init))
    }

    static func snapcastSettings(_ s: RoomSettings, bufferMilliseconds: Int) -> SnapcastMessage {
        let latency = Int((Double(s.latencyTrimNanoseconds) / 1e6).rounded())
        let settings: JSONValue = ["bufferMs": .int(bufferMilliseconds), "latency": .int(latency), "muted": .bool(s.muted), "volume": .int(s.volume)]
        return .serverSettings(json: settings.serialized)
    }

    private var snapcastNow: SnapcastTime { SnapcastTime(nanoseconds: Monotonic.now()) }

    /// The leader's message as this client needs it, or nil for none.
    func snapcastForm(of message: Message) -> [UInt8]? {
        let buffer = Int64(leader.configuration.bufferMilliseconds) * nanosecondsPerMillisecond
        switch message {
        case .chunk(let c):
            guard c.streamID == snapcastStream.load(ordering: .acquiring) else { return nil }
            // A snapclient hears a chunk at its timestamp plus the buffer, on the server's clock (CLOCK_MONOTONIC, as Tutti's PTS).
            return SnapcastMessage.wireChunk(timestamp: SnapcastTime(nanoseconds: c.pts.nanoseconds - buffer), payload: c.payload).encoded(sent: snapcastNow)
        case .flush(let stream, _, _):
            guard stream == snapcastStream.load(ordering: .acquiring) else { return nil }
            return SnapcastMessage.codecHeader(for: leader.configuration.codec).encoded(sent: snapcastNow)
        case .follow(let stream, _):
            snapcastStream.store(stream.streamID, ordering: .releasing)
            return SnapcastMessage.codecHeader(for: leader.configuration.codec).encoded(sent: snapcastNow)
        case .settings(let s):
            return Self.snapcastSettings(s, bufferMilliseconds: leader.configuration.bufferMilliseconds).encoded(sent: snapcastNow)
        default:
            return nil
        }
    }

    func snapcastReadLoop() {
        connection.setReceiveTimeout(milliseconds: 5_000)
        var framer = SnapcastFramer()
        let buffer = ReceiveBuffer()
        do throws(any Error) {
            while true {
                let (n, arrival) = try buffer.receive(from: connection)
                if n == 0 { close(reason: "connection closed"); return }
                let received = arrival != 0 ? arrival : Monotonic.now()
                framer.append(UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n]))
                while let (header, message) = try framer.next() {
                    switch message {
                    case .hello(let json)?:
                        guard name == nil else { continue }
                        guard !JSONNesting.exceeds(json.utf8), let hello = JSONValue.parsing(json)?.object else {
                            close(reason: "a Snapcast Hello that is not a JSON object"); return
                        }
                        if !leader.speakerSecurity.open && !leader.configuration.snapcastWithoutKey {
                            // A snapclient can neither pair nor prove the room key: on a closed system it is a stranger unless allowed.
                            close(reason: "refused snapclient \(Self.snapcastRoomName(hello: hello)) from \(connection.peer): this leader admits paired speakers only, and a snapclient cannot pair (--snapcast-unkeyed lets snapclients in)")
                            return
                        }
                        try welcomeSnapclient(hello, helloID: header.id)
                    case .time?:
                        // The client works out the offset from our receive and send times, as snapserver does.
                        let latency = SnapcastTime(nanoseconds: received - header.sent.nanoseconds)
                        try connection.send {
                            SnapcastMessage.time(latency: latency).encoded(refersTo: header.id, sent: snapcastNow, received: SnapcastTime(nanoseconds: received))
                        }
                    case .clientInfo(let json)?:
                        // The client's own mixer moved: the room's volume follows, through the
                        // leader's desk as a button's would (merged, rate-limited, allowed or not).
                        guard let room = name, mayCommand, !JSONNesting.exceeds(json.utf8), let info = JSONValue.parsing(json)?.object else { continue }
                        let volume = info["volume"]?.number.flatMap { $0.isFinite ? UInt8(max(0, min(100, $0.rounded()))) : nil }
                        leader.roomCommands.submitMixer(volume: volume, muted: info["muted"]?.bool, from: ObjectIdentifier(self), room: room)
                    default:
                        break // nothing else is sent by a client
                    }
                }
            }
        } catch {
            close(reason: "\(error)")
        }
    }

    private func welcomeSnapclient(_ hello: [String: JSONValue], helloID: UInt16) throws {
        let room = Self.snapcastRoomName(hello: hello)
        name = room
        leader.admitDuringParty(room)
        let stream = leader.stream(forRoom: room)
        snapcastStream.store(stream.id, ordering: .releasing)
        let settings = Self.snapcastSettings(leader.settings(ofSpeaker: room), bufferMilliseconds: leader.configuration.bufferMilliseconds)
        try connection.send(settings.encoded(refersTo: helloID, sent: snapcastNow))
        try connection.send(SnapcastMessage.codecHeader(for: leader.configuration.codec).encoded(sent: snapcastNow))
        let version = hello["Version"]?.string ?? "?"
        log.info("snapclient \(room) (\(hello["ClientName"]?.string ?? "Snapclient") \(version), protocol \(hello["SnapStreamProtocolVersion"]?.integer ?? 1)) joined from \(connection.peer)")
        leader.join(self, stream: stream)
        connection.setReceiveTimeout(milliseconds: 30_000)
    }
}
