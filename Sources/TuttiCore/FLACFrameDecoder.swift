/// One FLAC frame to samples (the FLAC format, RFC 9639 §9–§11): what a
/// Sendspin server sends a player, one frame a chunk. Pure, so a speaker
/// decodes FLAC without mapping libFLAC (a Tutti speaker's process loads no
/// codec library of the leader's); every field is checked and a frame whose
/// CRC-16 does not match is refused. Constant, verbatim, fixed and LPC
/// subframes, wasted bits, the three stereo decorrelations, both Rice
/// codings with escapes; 4 to 32 bits a sample, 1 to 8 channels.
public enum FLACFrameDecoder {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case notAFrame
        case malformed(String)
        case crcMismatch

        public var description: String {
            switch self {
            case .notAFrame: "not a FLAC frame"
            case .malformed(let what): "a malformed FLAC frame (\(what))"
            case .crcMismatch: "a FLAC frame whose CRC does not match"
            }
        }
    }

    /// What the frame header says.
    public struct Header: Equatable, Sendable {
        public var blockSize: Int
        public var channels: Int
        public var bitsPerSample: Int
        /// 0 left–right independent (or mono, or more channels), 8 left/side, 9 side/right, 10 mid/side.
        public var assignment: Int
        /// The frame's length in bytes, its CRC-16 included (known once decoded).
        public var byteCount = 0
    }

    /// The bits a sample of the stream STREAMINFO declares (the `codec_header`: `fLaC`, then its
    /// first metadata block), for frames that defer to it; nil when it is not there.
    public static func streamBitsPerSample(header: [UInt8]) -> Int? {
        // "fLaC", block header (4 bytes), STREAMINFO: bits per sample − 1 sits at byte 12–13 of it.
        guard header.count >= 8 + 34, header.starts(with: [0x66, 0x4c, 0x61, 0x43]), header[4] & 0x7f == 0 else { return nil }
        let info = 8
        return Int((header[info + 12] & 0x01) << 4 | header[info + 13] >> 4) + 1
    }

    /// Decodes `frame` into `channels` (one array per channel, replaced), returning its header.
    /// `streamBits`: STREAMINFO's bits a sample, for a frame whose header defers to it.
    public static func decode(_ frame: [UInt8], streamBits: Int?, into channels: inout [[Int32]]) throws(Failure) -> Header {
        var r = BitReader(frame)
        var header = try readHeader(&r, streamBits: streamBits)
        if channels.count != header.channels { channels = Array(repeating: [], count: header.channels) }
        for c in 0..<header.channels {
            // The side channel carries one more bit.
            let side = (header.assignment == 8 && c == 1) || (header.assignment == 9 && c == 0) || (header.assignment == 10 && c == 1)
            try readSubframe(&r, bits: header.bitsPerSample + (side ? 1 : 0), blockSize: header.blockSize, into: &channels[c])
        }
        r.alignToByte()
        let crcEnd = r.byteOffset
        let stored = try r.read(16)
        guard crc16(frame[0..<crcEnd]) == UInt16(stored) else { throw .crcMismatch }
        header.byteCount = crcEnd + 2
        let n = header.blockSize
        switch header.assignment {
        case 8: for i in 0..<n { channels[1][i] = channels[0][i] &- channels[1][i] }
        case 9: for i in 0..<n { channels[0][i] = channels[0][i] &+ channels[1][i] }
        case 10:
            for i in 0..<n {
                let side = Int64(channels[1][i])
                let mid = Int64(channels[0][i]) << 1 | (side & 1)
                channels[0][i] = Int32(truncatingIfNeeded: (mid + side) >> 1)
                channels[1][i] = Int32(truncatingIfNeeded: (mid - side) >> 1)
            }
        default: break
        }
        return header
    }

    static func readHeader(_ r: inout BitReader, streamBits: Int?) throws(Failure) -> Header {
        guard try r.read(15) == 0x7ffc else { throw .notAFrame } // 14-bit sync and the reserved 0
        _ = try r.read(1) // fixed or variable blocking: both decode alike
        let sizeCode = Int(try r.read(4)), rateCode = Int(try r.read(4))
        let assignment = Int(try r.read(4)), depthCode = Int(try r.read(3))
        guard try r.read(1) == 0 else { throw .malformed("reserved bit") }
        // The frame or sample number, coded like UTF-8: only its length matters here.
        let lead = try r.read(8)
        var more = 0
        switch lead {
        case 0x00..<0x80: more = 0
        case 0xc0..<0xe0: more = 1
        case 0xe0..<0xf0: more = 2
        case 0xf0..<0xf8: more = 3
        case 0xf8..<0xfc: more = 4
        case 0xfc..<0xfe: more = 5
        case 0xfe: more = 6
        default: throw .malformed("frame number")
        }
        for _ in 0..<more { guard try r.read(8) & 0xc0 == 0x80 else { throw .malformed("frame number") } }
        let blockSize: Int
        switch sizeCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (sizeCode - 2)
        case 6: blockSize = Int(try r.read(8)) + 1
        case 7: blockSize = Int(try r.read(16)) + 1
        case 8...15: blockSize = 256 << (sizeCode - 8)
        default: throw .malformed("block size code 0")
        }
        switch rateCode {
        case 12: _ = try r.read(8)
        case 13, 14: _ = try r.read(16)
        case 15: throw .malformed("sample rate code 15")
        default: break
        }
        let headerEnd = r.byteOffset
        let stored = try r.read(8)
        guard crc8(r.bytes[0..<headerEnd]) == UInt8(stored) else { throw .crcMismatch }
        let channels: Int
        switch assignment {
        case 0...7: channels = assignment + 1
        case 8...10: channels = 2
        default: throw .malformed("channel assignment \(assignment)")
        }
        let bits: Int
        switch depthCode {
        case 0:
            guard let streamBits, (4...32).contains(streamBits) else { throw .malformed("bits a sample from a missing STREAMINFO") }
            bits = streamBits
        case 1: bits = 8
        case 2: bits = 12
        case 4: bits = 16
        case 5: bits = 20
        case 6: bits = 24
        case 7: bits = 32
        default: throw .malformed("sample size code 3")
        }
        return Header(blockSize: blockSize, channels: channels, bitsPerSample: bits, assignment: assignment <= 7 ? 0 : assignment)
    }

    static func readSubframe(_ r: inout BitReader, bits: Int, blockSize n: Int, into out: inout [Int32]) throws(Failure) {
        guard try r.read(1) == 0 else { throw .malformed("subframe padding") }
        let type = Int(try r.read(6))
        var wasted = 0
        if try r.read(1) == 1 { wasted = try r.unary() + 1 }
        let bps = bits - wasted
        guard bps >= 1, bps <= 33 else { throw .malformed("\(wasted) wasted bits of \(bits)") }
        if out.count != n { out = [Int32](repeating: 0, count: n) }
        // Samples are worked in Int64: a side channel of 32-bit audio has 33 bits.
        var s = [Int64](repeating: 0, count: n)
        switch type {
        case 0:
            let v = try r.readSigned(bps)
            for i in 0..<n { s[i] = v }
        case 1:
            for i in 0..<n { s[i] = try r.readSigned(bps) }
        case 8...12:
            let order = type - 8
            guard order <= n else { throw .malformed("fixed order \(order) over \(n) samples") }
            for i in 0..<order { s[i] = try r.readSigned(bps) }
            try readResidual(&r, order: order, blockSize: n, into: &s)
            for i in order..<n {
                switch order {
                case 1: s[i] &+= s[i - 1]
                case 2: s[i] &+= 2 &* s[i - 1] &- s[i - 2]
                case 3: s[i] &+= 3 &* s[i - 1] &- 3 &* s[i - 2] &+ s[i - 3]
                case 4: s[i] &+= 4 &* s[i - 1] &- 6 &* s[i - 2] &+ 4 &* s[i - 3] &- s[i - 4]
                default: break
                }
            }
        case 32...63:
            let order = type - 31
            guard order <= n else { throw .malformed("LPC order \(order) over \(n) samples") }
            for i in 0..<order { s[i] = try r.readSigned(bps) }
            let precision = Int(try r.read(4)) + 1
            guard precision < 16 else { throw .malformed("LPC precision") }
            let shift = try r.readSigned(5)
            guard shift >= 0 else { throw .malformed("negative LPC shift") }
            var coefficients = [Int64](repeating: 0, count: order)
            for j in 0..<order { coefficients[j] = try r.readSigned(precision) }
            try readResidual(&r, order: order, blockSize: n, into: &s)
            for i in order..<n {
                var sum: Int64 = 0
                for j in 0..<order { sum &+= coefficients[j] &* s[i - 1 - j] }
                s[i] &+= sum >> shift
            }
        default:
            throw .malformed("subframe type \(type)")
        }
        for i in 0..<n { out[i] = Int32(truncatingIfNeeded: s[i] << Int64(wasted)) }
    }

    /// The residual after `order` warm-up samples, added into `s` from there.
    static func readResidual(_ r: inout BitReader, order: Int, blockSize n: Int, into s: inout [Int64]) throws(Failure) {
        let method = try r.read(2)
        guard method <= 1 else { throw .malformed("residual coding \(method)") }
        let parameterBits = method == 0 ? 4 : 5
        let escape = UInt64((1 << parameterBits) - 1)
        let partitionOrder = Int(try r.read(4))
        let partitions = 1 << partitionOrder
        guard n % partitions == 0, n >> partitionOrder >= order else { throw .malformed("partition order \(partitionOrder)") }
        var i = order
        for p in 0..<partitions {
            let count = (n >> partitionOrder) - (p == 0 ? order : 0)
            let k = try r.read(parameterBits)
            if k == escape {
                let raw = Int(try r.read(5))
                for _ in 0..<count { s[i] = raw == 0 ? 0 : try r.readSigned(raw); i += 1 }
            } else {
                for _ in 0..<count {
                    let q = UInt64(try r.unary())
                    guard q < 1 << 32 else { throw .malformed("residual") }
                    let v = q << k | (k > 0 ? try r.read(Int(k)) : 0)
                    s[i] = Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1)
                    i += 1
                }
            }
        }
    }

    static func crc8(_ bytes: ArraySlice<UInt8>) -> UInt8 {
        var crc: UInt8 = 0
        for b in bytes {
            crc ^= b
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? crc << 1 ^ 0x07 : crc << 1 }
        }
        return crc
    }

    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for b in bytes {
            crc ^= UInt16(b) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x8005 : crc << 1 }
        }
        return crc
    }
}

/// Big-endian bits of a byte array, most significant first; reading past the end throws.
struct BitReader {
    let bytes: [UInt8]
    private(set) var position = 0 // in bits

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var byteOffset: Int { position / 8 }

    mutating func alignToByte() { position = (position + 7) & ~7 }

    /// `count` bits (0…64) as an unsigned number.
    mutating func read(_ count: Int) throws(FLACFrameDecoder.Failure) -> UInt64 {
        guard count <= 64, position + count <= bytes.count * 8 else { throw .malformed("cut short") }
        var v: UInt64 = 0
        var left = count
        while left > 0 {
            let bit = position & 7
            let take = min(8 - bit, left)
            let byte = UInt64(bytes[position >> 3])
            v = v << UInt64(take) | (byte >> UInt64(8 - bit - take)) & ((1 << UInt64(take)) - 1)
            position += take
            left -= take
        }
        return v
    }

    /// `count` bits (1…64) as a two's-complement number.
    mutating func readSigned(_ count: Int) throws(FLACFrameDecoder.Failure) -> Int64 {
        let v = try read(count)
        guard count < 64 else { return Int64(bitPattern: v) }
        let sign = UInt64(1) << UInt64(count - 1)
        return Int64(bitPattern: v ^ sign) &- Int64(bitPattern: sign)
    }

    /// Zeros before the next one bit (the one consumed).
    mutating func unary() throws(FLACFrameDecoder.Failure) -> Int {
        var zeros = 0
        while true {
            guard position < bytes.count * 8 else { throw .malformed("cut short") }
            let byte = bytes[position >> 3] << UInt8(position & 7)
            if byte == 0 {
                let skip = 8 - (position & 7)
                zeros += skip
                position += skip
                continue
            }
            let lead = byte.leadingZeroBitCount
            zeros += lead
            position += lead + 1
            return zeros
        }
    }
}
