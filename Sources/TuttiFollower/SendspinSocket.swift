import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiNet

/// A WebSocket to a Sendspin server with its Noise `KKpsk2` session (this
/// speaker the responder, as every Sendspin 1.0 client, whichever side
/// opened the connection): `open` runs the HTTP upgrade (as the WebSocket's
/// client when the speaker dialed the server, as its server when the server
/// dialed in) and the handshake, `next` hands over the server's messages
/// opened, `send` seals and frames. The framing is TuttiCore's
/// `WebSocketFrameReader`, `WebSocketClientFrame` and `WebSocketServerFrame`,
/// the security its `SendspinClientChannel`; this class only moves bytes.
///
/// Thread contract: `open` and `next` on the connection thread only (they
/// own the receive side); `send` and `close` from any thread: sealing and
/// writing happen under the connection's send lock, so Noise nonces go out in order.
// @unchecked Sendable: the receive state (`reader`, `buffer`, `events`, `readArrival`) is touched only by the connection thread (the contract above); the channel is in a Mutex, the connection is Sendable.
final class SendspinSocket: @unchecked Sendable {
    /// One WebSocket message at most (a Noise transport message is at most 64 KiB).
    static let maximumFrameBytes = 128 * 1024
    /// A message reassembled from Noise fragments at most (a speaker asks for no artwork).
    static let maximumMessageBytes = 256 * 1024

    enum Received {
        case text([UInt8])
        case binary([UInt8])
    }

    /// Which end of the WebSocket this speaker is.
    enum Side: Sendable {
        /// It dialed the server (`--sendspin-server`): the WebSocket's client, its frames masked.
        case dialed(SendspinServerAddress)
        /// The server dialed in (`--sendspin-listen`) at this path: the WebSocket's server.
        case accepted(path: String)
    }

    let connection: TCPConnection
    let side: Side
    private let channel: Mutex<SendspinClientChannel>
    private var reader: WebSocketFrameReader
    private let buffer = ReceiveBuffer(largest: 65_536)
    /// Opened messages not yet handed over (one WebSocket message's worth).
    private var events: [(SendspinChannelEvent, Int64?)] = []
    private var readArrival: Int64 = 0

    init(connection: TCPConnection, side: Side, identity: StaticKey, cipher: NoiseCipher = .chaChaPoly) {
        self.connection = connection
        self.side = side
        if case .accepted = side {
            reader = WebSocketFrameReader(maximumMessageBytes: Self.maximumFrameBytes, fromClient: true)
        } else {
            reader = WebSocketFrameReader(maximumMessageBytes: Self.maximumFrameBytes)
        }
        let crypto = NoisePrimitives()
        // Not paired with any server: every server is met under the Sentinel (unpaired access).
        channel = Mutex(SendspinClientChannel(identity: NoiseKeyPair(secret: identity.secret, crypto: crypto), cipher: cipher, crypto: crypto,
                                              maxMessageBytes: Self.maximumMessageBytes) { _, _, _ in nil })
    }

    /// This speaker's Sendspin client id (its key, base64url).
    var clientID: String { channel.withLock { $0.clientID } }

    /// The server's id (its static key, base64url), once the handshake is done.
    var serverID: String? { channel.withLock { $0.peer?.id } }

    /// The upgrade, then the Noise handshake; throws if either fails, or
    /// when they are not done by `deadline` (monotonic ns; a server dialing
    /// in has 30 s, however slowly it sends).
    func open(deadline: Int64 = .max) throws {
        switch side {
        case .dialed(let address): try openAsClient(address)
        case .accepted(let path): try openAsServer(path: path, deadline: deadline)
        }
        try perform(channel.withLock { $0.start() }, arrival: nil)
        while !channel.withLock({ $0.isEstablished }) {
            if Monotonic.now() > deadline { throw FollowerError.sendspin("the handshake took over 30 s") }
            guard let (message, _) = try nextFrame() else { throw NetError.closed }
            try perform(channel.withLock { $0.received(binary: message.binary, bytes: message.bytes) }, arrival: nil)
            if !events.isEmpty { throw FollowerError.sendspin("a message before the handshake ended") }
        }
    }

    private func openAsClient(_ address: SendspinServerAddress) throws {
        var key = [UInt8](repeating: 0, count: 16)
        var random = SystemRandomNumberGenerator()
        for i in key.indices { key[i] = UInt8.random(in: 0...255, using: &random) }
        try connection.send(WebSocketOpening.request(host: address.host, port: address.port, path: address.path, key: key))
        // Checked where libcrypto 3 is installed (Debian's every system has it); else the status and upgrade only.
        let expectedAccept: String? = SHA1.digest([]) == nil ? nil : WebSocketOpening.accept(key: key) { SHA1.digest($0) ?? [] }
        var answer: [UInt8] = []
        while true {
            let (n, _) = try buffer.receive(from: connection)
            if n == 0 { throw NetError.closed }
            answer += UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n])
            if let rest = try WebSocketOpening.response(answer, expectedAccept: expectedAccept) {
                reader.append(rest)
                return
            }
        }
    }

    /// Reads the server's opening request (8 KiB at most) and switches, or answers why not and throws.
    private func openAsServer(path: String, deadline: Int64) throws {
        var request: [UInt8] = []
        while true {
            if Monotonic.now() > deadline { throw FollowerError.sendspin("\(connection.peer) sent no WebSocket request within 30 s") }
            let (n, _) = try buffer.receive(from: connection)
            if n == 0 { throw NetError.closed }
            request += UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n])
            let opened: (key: [UInt8], rest: [UInt8])?
            do { opened = try WebSocketUpgrade.request(request, path: path) } catch {
                try? connection.send(WebSocketUpgrade.refusal(error))
                throw FollowerError.sendspin("\(connection.peer) asked for no Sendspin WebSocket (\(error))")
            }
            guard let (key, rest) = opened else { continue }
            // The client checks this answer to its key; SHA-1 is libcrypto 3's (every Debian has it).
            guard SHA1.digest([]) != nil else {
                let why = WebSocketUpgrade.Refusal(status: 503, reason: "this speaker cannot answer a WebSocket key without libcrypto 3 (libssl3)")
                try? connection.send(WebSocketUpgrade.refusal(why))
                throw FollowerError.sendspin(why.reason)
            }
            try connection.send(WebSocketUpgrade.switching(accept: WebSocketOpening.accept(key: key) { SHA1.digest($0) ?? [] }))
            reader.append(rest)
            return
        }
    }

    /// The next message from the server, opened, and when it came (real
    /// monotonic ns: the kernel's stamp of the read it ended; nil when more
    /// followed it in that read). Nil when the server closed.
    func next() throws -> (Received, arrival: Int64?)? {
        while true {
            if !events.isEmpty {
                let (event, arrival) = events.removeFirst()
                switch event {
                case .message(let text): return (.text(Array(text.utf8)), arrival)
                case .binary(let bytes): return (.binary(bytes), arrival)
                default: continue
                }
            }
            guard let (message, arrival) = try nextFrame() else { return nil }
            try perform(channel.withLock { $0.received(binary: message.binary, bytes: message.bytes) }, arrival: arrival)
        }
    }

    /// Seals `text` and writes it (nothing before the handshake has finished).
    func send(_ text: String) throws {
        try send { text }
    }

    /// Seals and writes what `make` returns, made under the send lock (a time request's stamp is taken as late as that).
    func send(_ make: () -> String?) throws {
        try connection.send { () -> [UInt8] in
            guard let text = make() else { return [] }
            return frames(channel.withLock { $0.sealText(text) })
        }
    }

    /// Ends the session politely (best effort).
    func close(code: UInt16 = 1000, reason: String) {
        try? connection.send(closeFrame(code: code, reason: reason))
        connection.close()
    }

    // MARK: Parts

    private static func mask() -> (UInt8, UInt8, UInt8, UInt8) {
        let m = UInt32.random(in: 0...UInt32.max)
        return (UInt8(m >> 24), UInt8((m >> 16) & 0xFF), UInt8((m >> 8) & 0xFF), UInt8(m & 0xFF))
    }

    /// One frame as this side sends them: masked from a client, never from a server.
    private func frame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        if case .accepted = side { return WebSocketServerFrame.frame(opcode: opcode, payload: payload) }
        return WebSocketClientFrame.frame(opcode: opcode, payload: payload, mask: Self.mask())
    }

    private func closeFrame(code: UInt16, reason: String) -> [UInt8] {
        if case .accepted = side { return WebSocketServerFrame.close(code: code, reason: reason) }
        return WebSocketClientFrame.close(code: code, reason: reason, mask: Self.mask())
    }

    /// The WebSocket frames of the channel's raw sends.
    private func frames(_ out: [SendspinChannelEvent]) -> [UInt8] {
        var bytes: [UInt8] = []
        for case .sendRaw(let binary, let payload) in out {
            bytes += frame(opcode: binary ? WebSocketClientFrame.binary : WebSocketClientFrame.text, payload: payload)
        }
        return bytes
    }

    private func perform(_ out: [SendspinChannelEvent], arrival: Int64?) throws {
        let raw = frames(out)
        if !raw.isEmpty { try connection.send(raw) }
        for event in out {
            switch event {
            case .close(let code, let reason):
                close(code: code, reason: reason)
                throw FollowerError.sendspin("closed (\(code)): \(reason)")
            case .message, .binary:
                events.append((event, arrival))
            case .sendRaw:
                break
            }
        }
    }

    /// The next data message (answering pings), with its arrival when it ended its read.
    private func nextFrame() throws -> ((binary: Bool, bytes: [UInt8]), Int64?)? {
        while true {
            if let message = try reader.next() {
                let arrival = reader.pendingBytes == 0 && readArrival != 0 ? readArrival : nil
                switch message {
                case .text(let b): return ((false, b), arrival)
                case .binary(let b): return ((true, b), arrival)
                case .ping(let p): try connection.send(frame(opcode: WebSocketClientFrame.pong, payload: p))
                case .pong: break
                case .close(let code, let reason):
                    close(code: code == 1005 ? 1000 : code, reason: "")
                    throw FollowerError.sendspin("the server closed the connection (\(code)\(reason.isEmpty ? "" : ": \(reason.prefix(120))"))")
                }
                continue
            }
            let (n, arrival) = try buffer.receive(from: connection)
            if n == 0 { return nil }
            reader.append(UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n]))
            readArrival = arrival
        }
    }
}
