/// The seam between a Sendspin connection and its transport security.
///
/// A Sendspin 1.0 connection is a WebSocket whose messages are either plain
/// (a legacy client that starts with a text `client/hello`) or carried
/// inside a Noise `KKpsk2` session (a client that starts with a binary
/// handshake message). The connection hands every raw WebSocket message to
/// its channel and does what the channel returns; it never looks inside
/// the security itself. Pure: no I/O, no clock.
public enum SendspinChannelEvent: Equatable, Sendable {
    /// Put these bytes on the WebSocket as one message, as they are.
    case sendRaw(binary: Bool, bytes: [UInt8])
    /// A protocol message in JSON text, for the Sendspin session.
    case message(text: String)
    /// An application binary message (audio chunk, artwork, ...), type byte first.
    case binary([UInt8])
    /// Close the WebSocket with this code and reason (refused, broken or unpaired).
    case close(code: UInt16, reason: String)
}

/// A connection's transport security: plain, or a Noise session.
public protocol SendspinChannelSecurity: Sendable {
    /// One raw WebSocket message arrived.
    mutating func received(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent]
    /// The frames that carry this JSON text message to the peer.
    mutating func sealText(_ text: String) -> [SendspinChannelEvent]
    /// The frames that carry this binary message (type byte first) to the peer.
    mutating func sealBinary(_ bytes: [UInt8]) -> [SendspinChannelEvent]
}

/// No security: what a legacy client that starts with a text `client/hello`
/// speaks. Every message passes through unchanged.
public struct PlainSendspinChannel: SendspinChannelSecurity {
    public init() {}

    public mutating func received(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent] {
        if binary { return [.binary(bytes)] }
        return [.message(text: String(decoding: bytes, as: UTF8.self))]
    }

    public mutating func sealText(_ text: String) -> [SendspinChannelEvent] {
        [.sendRaw(binary: false, bytes: Array(text.utf8))]
    }

    public mutating func sealBinary(_ bytes: [UInt8]) -> [SendspinChannelEvent] {
        [.sendRaw(binary: true, bytes: bytes)]
    }
}
