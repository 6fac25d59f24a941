import Foundation
import Testing
import TuttiDecode
import TuttiTestSupport

/// Covers scaled with FFmpeg for Sendspin displays (`CoverImage`): the size
/// asked for exactly, the picture's aspect ratio kept inside it and centred on
/// black, in JPEG or PNG; covers made by Debian's ffmpeg at test time.
@Suite struct CoverImageTests {
    static func picture(_ source: String, size: String, _ ext: String, in dir: String) throws -> [UInt8] {
        let path = dir + "/cover-\(size).\(ext)"
        let made = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", source + (source.contains("=") ? ":" : "=") + "size=\(size)", "-frames:v", "1", path])
        #expect(made.status == 0, "\(made.err)")
        return try Array(Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func theFitKeepsTheAspectRatioInsideTheBox() {
        let wide = CoverImage.fit(width: 640, height: 480, boxWidth: 300, boxHeight: 300)
        #expect(wide.x == 0 && wide.y == 36 && wide.width == 300 && wide.height == 225)
        let tall = CoverImage.fit(width: 480, height: 640, boxWidth: 300, boxHeight: 300)
        #expect(tall.x == 36 && tall.y == 0 && tall.width == 225 && tall.height == 300)
        let square = CoverImage.fit(width: 1_000, height: 1_000, boxWidth: 300, boxHeight: 300)
        #expect(square.x == 0 && square.y == 0 && square.width == 300 && square.height == 300)
        // Smaller than the box: scaled up, as aiosendspin does.
        let small = CoverImage.fit(width: 100, height: 50, boxWidth: 800, boxHeight: 480)
        #expect(small.x == 0 && small.y == 40 && small.width == 800 && small.height == 400)
        let sliver = CoverImage.fit(width: 4_000, height: 1, boxWidth: 300, boxHeight: 300)
        #expect(sliver.width == 300 && sliver.height == 1)
    }

    /// 640×480 → 300×300 JPEG: 300×300, black bars of 36 rows above and 39
    /// below, the picture between; and the time it takes.
    @Test func aLandscapeJPEGCoverIsLetterboxedToTheAskedSize() throws {
        let dir = makeTemporaryDirectory()
        // The time, on ffmpeg's test pattern (a figure, not a claim: see docs/sendspin.md).
        let pattern = try Self.picture("testsrc", size: "640x480", "jpg", in: dir)
        var times: [Double] = []
        var made: [UInt8] = []
        for _ in 0..<5 {
            let start = Date()
            made = try CoverImage.scaled(pattern, width: 300, height: 300, format: .jpeg)
            times.append(Date().timeIntervalSince(start) * 1_000)
        }
        print("CoverImage: 640×480 JPEG → 300×300 JPEG (\(made.count) bytes) in \(times.map { String(format: "%.2f", $0) }.joined(separator: ", ")) ms")
        #expect(try CoverImage.decoded(made).width == 300)

        let cover = try Self.picture("color=c=0xC83232", size: "640x480", "jpg", in: dir)
        let jpeg = try CoverImage.scaled(cover, width: 300, height: 300, format: .jpeg)
        #expect(jpeg.starts(with: [0xFF, 0xD8, 0xFF]))
        let out = try CoverImage.decoded(jpeg)
        #expect(out.width == 300 && out.height == 300)
        func isBlack(_ p: (r: UInt8, g: UInt8, b: UInt8)) -> Bool { max(p.r, p.g, p.b) < 16 }
        func isRed(_ p: (r: UInt8, g: UInt8, b: UInt8)) -> Bool { abs(Int(p.r) - 200) < 16 && abs(Int(p.g) - 50) < 16 && abs(Int(p.b) - 50) < 16 }
        for x in stride(from: 0, to: 300, by: 13) {
            #expect(isBlack(out.pixel(x: x, y: 0)) && isBlack(out.pixel(x: x, y: 30)), "top bar at x \(x)")
            #expect(isRed(out.pixel(x: x, y: 42)) && isRed(out.pixel(x: x, y: 150)) && isRed(out.pixel(x: x, y: 255)), "picture at x \(x): \(out.pixel(x: x, y: 150))")
            #expect(isBlack(out.pixel(x: x, y: 266)) && isBlack(out.pixel(x: x, y: 299)), "bottom bar at x \(x)")
        }
    }

    /// 480×640 PNG → 300×300 PNG, lossless: columns 0…35 and 261…299 exactly
    /// black, 36…260 exactly the cover's colour.
    @Test func aPortraitPNGCoverIsPillarboxedExactly() throws {
        let dir = makeTemporaryDirectory()
        let cover = try Self.picture("color=c=0x3264C8", size: "480x640", "png", in: dir)
        let png = try CoverImage.scaled(cover, width: 300, height: 300, format: .png)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        let out = try CoverImage.decoded(png)
        #expect(out.width == 300 && out.height == 300)
        let colour = out.pixel(x: 150, y: 150)
        #expect(colour == (50, 100, 200) || (abs(Int(colour.r) - 50) <= 2 && abs(Int(colour.b) - 200) <= 2), "\(colour)")
        var wrong: [String] = []
        for y in stride(from: 0, to: 300, by: 7) {
            for x in 0..<300 {
                let p = out.pixel(x: x, y: y)
                let inside = (36...260).contains(x)
                if inside ? p != colour : p != (0, 0, 0) { wrong.append("(\(x), \(y)) \(p)") }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) pixels: \(wrong.prefix(8))")
    }

    @Test func whatIsNotAPictureOrTooLargeIsRefused() throws {
        #expect(throws: CoverError.notAnImage) { try CoverImage.scaled(Array("<svg/>".utf8), width: 300, height: 300, format: .jpeg) }
        #expect(throws: CoverError.badSize(width: 5_000, height: 300)) { try CoverImage.scaled([0xFF, 0xD8, 0xFF], width: 5_000, height: 300, format: .jpeg) }
        #expect(throws: CoverError.self) { try CoverImage.scaled([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3], width: 300, height: 300, format: .png) }
    }
}
