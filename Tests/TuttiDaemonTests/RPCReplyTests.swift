import Testing
import TuttiCore
@testable import TuttiDaemon
@testable import TuttiLeader
import TuttiControlKit

/// Replies and notifications as bytes: JSON-RPC's envelope with its keys in
/// byte order, parts encoded ahead spliced in place.
struct RPCReplyTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func envelopesKeepTheirKeysInOrder() {
        #expect(text(RPCReply(id: 1, outcome: .result(.value(["b": true, "a": "x"]))).bytes) == #"{"id":1,"jsonrpc":"2.0","result":{"a":"x","b":true}}"#)
        #expect(text(RPCReply.error(id: nil, code: -32700, message: "not \"JSON\"").bytes) == #"{"error":{"code":-32700,"message":"not \"JSON\""},"id":null,"jsonrpc":"2.0"}"#)
        #expect(RPCReply.error(id: "a", code: -32600, message: "").errorCode == -32600)
        #expect(text(RPCNotification(method: "rooms.changed", params: ["rooms": []]).bytes) == #"{"jsonrpc":"2.0","method":"rooms.changed","params":{"rooms":[]}}"#)
    }

    /// A monotonic time in nanoseconds past 2^53 (104 days up) keeps every digit.
    @Test func encodedPartsGoInPlaceExactly() {
        let at: Int64 = 9_007_199_254_740_993
        let object = EncodedJSON(object: ["state": "playing", "acceptedAt": 0, "trackCount": 2],
                                 encoded: ["acceptedAt": .integer(at), "effectiveAt": .integer(at + 100_000_000)])
        #expect(text(object.bytes) == #"{"acceptedAt":9007199254740993,"effectiveAt":9007199354740993,"state":"playing","trackCount":2}"#)
        #expect(text(RPCReply(id: "x", outcome: .result(.encoded(object))).bytes).hasSuffix(#","result":{"acceptedAt":9007199254740993,"#
            + #""effectiveAt":9007199354740993,"state":"playing","trackCount":2}}"#))
    }
}
