/// How many samples (per channel) one encoded packet holds, read from its
/// own header: what a Sendspin chunk of FLAC or Opus lasts, which its
/// 13-byte header does not say. Pure; every length checked.
public enum CodecFrames {
    /// One Opus packet (RFC 6716 §3.1): the TOC byte's configuration gives
    /// each frame's duration, its code the frame count. Samples at 48 kHz;
    /// nil for a malformed packet or one over 120 ms (the RFC's limit).
    public static func opusSamples(_ packet: [UInt8]) -> Int? {
        guard let toc = packet.first else { return nil }
        let config = Int(toc >> 3)
        // Frame duration in units of 2.5 ms (120 samples at 48 kHz).
        let units: Int
        switch config {
        case 0...11: units = [4, 8, 16, 24][config % 4]   // SILK: 10, 20, 40, 60 ms
        case 12...15: units = [4, 8][config % 2]         // hybrid: 10, 20 ms
        default: units = [1, 2, 4, 8][config % 4]        // CELT: 2.5, 5, 10, 20 ms
        }
        let frames: Int
        switch toc & 0x03 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { return nil }
            frames = Int(packet[1] & 0x3f)
            guard frames > 0 else { return nil }
        }
        let samples = frames * units * 120
        return samples <= 5_760 ? samples : nil
    }

    /// One FLAC frame (the FLAC format's frame header): its block size, from
    /// the code in byte 2 or the 8- or 16-bit field after the coded frame
    /// number. Nil when the bytes do not start with a frame header.
    public static func flacSamples(_ frame: [UInt8]) -> Int? {
        guard frame.count >= 5, frame[0] == 0xff, frame[1] & 0xfe == 0xf8 else { return nil }
        let code = Int(frame[2] >> 4)
        switch code {
        case 1: return 192
        case 2...5: return 576 << (code - 2)
        case 8...15: return 256 << (code - 8)
        case 6, 7:
            // The frame or sample number, UTF-8-style coded, starts at byte 4; its first byte gives its length.
            let lead = frame[4]
            let length: Int
            switch lead {
            case 0x00..<0x80: length = 1
            case 0xc0..<0xe0: length = 2
            case 0xe0..<0xf0: length = 3
            case 0xf0..<0xf8: length = 4
            case 0xf8..<0xfc: length = 5
            case 0xfc..<0xfe: length = 6
            case 0xfe: length = 7
            default: return nil
            }
            let at = 4 + length
            if code == 6 {
                guard frame.count > at else { return nil }
                return Int(frame[at]) + 1
            }
            guard frame.count > at + 1 else { return nil }
            return (Int(frame[at]) << 8 | Int(frame[at + 1])) + 1
        default: return nil // 0 is reserved
        }
    }
}
