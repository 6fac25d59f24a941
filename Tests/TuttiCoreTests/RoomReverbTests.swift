import Testing
import TuttiCore

/// What `rooms.setReverb` and `tutti reverb` make of a request (ReverbSettings.resolving).
@Suite struct RoomReverbRequestTests {
    func resolve(_ preset: String? = nil, mix: Double? = nil, size: Double? = nil, damping: Double? = nil,
                 from current: ReverbSettings = .off) throws(ReverbRefusal) -> ReverbSettings {
        try ReverbSettings.resolving(preset: preset, mix: mix, size: size, damping: damping, from: current)
    }

    @Test func presetsMixesOffAndCustomValues() throws {
        let hall30 = try ReverbSettings(preset: .largeHall, mix: 30)
        #expect(try resolve("Hall", mix: 30) == hall30)
        // A preset alone: the room's mix, or the default when it was off.
        #expect(try resolve("plate", from: hall30) == (try ReverbSettings(preset: .plate, mix: 30)))
        #expect(try resolve("plate") == (try ReverbSettings(preset: .plate, mix: ReverbSettings.defaultMix)))
        // The mix alone keeps the room; off keeps it too, at 0 %, so a mix brings it back.
        #expect(try resolve(mix: 45, from: hall30) == (try ReverbSettings(preset: .largeHall, mix: 45)))
        let off = try resolve("OFF", from: hall30)
        #expect(off.isOff && off.preset == .largeHall && off.size == hall30.size)
        #expect(try resolve(mix: 20, from: off) == (try ReverbSettings(preset: .largeHall, mix: 20)))
        // Size or damping: custom, kept to 0.001 as the wire carries them; a preset's own values are that preset.
        let custom = try resolve(size: 0.12345, from: hall30)
        #expect(custom.preset == nil && custom.size == 0.123 && custom.damping == hall30.damping && custom.mix == 30)
        #expect(try resolve(size: (ReverbPreset.cathedral.size * 1000).rounded() / 1000, damping: ReverbPreset.cathedral.damping, from: hall30).preset == .cathedral)
        #expect(custom.summary == "custom (RT60 0.3 s) at 30 %" && hall30.summary == "Large hall at 30 %" && off.summary == "off")
    }

    @Test func refusalsSayWhyInBothLanguages() throws {
        #expect(throws: ReverbRefusal.needsSettings) { try resolve() }
        #expect(throws: ReverbRefusal.settings(.unknownPreset("bathroom"))) { try resolve("bathroom") }
        #expect(throws: ReverbRefusal.settings(.outOfRange("mix", 101, "0–100 %"))) { try resolve("hall", mix: 101) }
        #expect(throws: ReverbRefusal.settings(.outOfRange("size", 2, "0–1"))) { try resolve(size: 2) }
        #expect(throws: ReverbRefusal.offWithMix(30)) { try resolve("off", mix: 30) }
        let old = ReverbRefusal.speakerTooOld(room: "attic", version: 9)
        #expect(old.description == "the attic speaker speaks protocol v9 and cannot play reverb (v10 needed): update its tutti" && old.isAboutTheRoom)
        #expect(old.message.text(in: .korean).hasPrefix("attic 스피커는 프로토콜 v9"))
        #expect(ReverbRefusal.browser(room: "phone").description == "phone is a browser playing here: it has no reverb (a Tutti speaker has)")
        #expect(!ReverbRefusal.needsSettings.isAboutTheRoom)
    }
}
