import Testing
import TuttiCore

@Suite struct ConfigFileSyntaxTests {
    @Test func sectionsKeysCommentsAndQuotes() throws {
        let text = """
        # a comment
        ; another
        [speaker]
        name = Living room   # spaces inside a value stay
        output=file:/tmp/a#1
        padded = "  two words # not a comment "  # but this is

        [leader]
        music = /srv/music\r
        empty =
        """
        let file = try ConfigFile.parse(text, path: "/etc/tutti/tutti.conf")
        #expect(file.sections.map(\.name) == ["speaker", "leader"])
        #expect(file.entries(in: "speaker") == [
            ConfigEntry(section: "speaker", key: "name", value: "Living room", line: 4),
            ConfigEntry(section: "speaker", key: "output", value: "file:/tmp/a#1", line: 5),
            ConfigEntry(section: "speaker", key: "padded", value: "  two words # not a comment ", line: 6),
        ])
        #expect(file.entries(in: "leader") == [
            ConfigEntry(section: "leader", key: "music", value: "/srv/music", line: 9),
            ConfigEntry(section: "leader", key: "empty", value: "", line: 10),
        ])
    }

    @Test(arguments: [
        ("name = x", 1, "before any [section]"),
        ("[speaker]\nname x", 2, "expected 'key = value'"),
        ("[speaker\nname = x", 1, "no closing ]"),
        ("[]", 1, "not a section name"),
        ("[speaker]\n = x", 2, "no key"),
        ("[speaker]\nname = \"x", 2, "closing \""),
        ("[speaker]\nname = \"x\" y", 2, "only a comment may follow"),
        ("[speaker]\nname = a\n\nname = b", 4, "set twice in [speaker] (first on line 2)"),
        ("[speaker]\n[leader]\n[speaker]", 3, "appears again (first on line 1)"),
    ])
    func mistakesNameTheFileAndLine(text: String, line: Int, words: String) {
        #expect {
            _ = try ConfigFile.parse(text, path: "/tmp/t.conf")
        } throws: { error in
            guard let error = error as? ConfigFileError else { return false }
            return error.line == line && error.path == "/tmp/t.conf" && error.message.contains(words)
                && error.description.hasPrefix("/tmp/t.conf:\(line): ")
        }
    }

    @Test func settingsBecomeFlagsAndRememberTheirSource() throws {
        let options = [
            ConfigOption("output", "alsa:default", .value(flag: "--output")),
            ConfigOption("realtime", "yes", .disabledBy(flag: "--no-realtime")),
            ConfigOption("loop", "no", .enabledBy(flag: "--loop")),
            ConfigOption("latency-ms", "0", .value(flag: "--latency-ms")),
        ]
        let file = try ConfigFile.parse("[speaker]\noutput = hw:1\nrealtime = no\nloop = yes\nlatency-ms = 4", path: "f")
        var settings = ConfigSettings(section: "speaker", options: options)
        let flags = try file.entries.map { entry throws(ConfigFileError) in try settings.flags(for: entry, in: "f") }
        #expect(flags == [["--output", "hw:1"], ["--no-realtime"], ["--loop"], ["--latency-ms", "4"]])
        settings.noteCommandLine(flag: "--latency-ms", value: "9")
        settings.noteCommandLine(flag: "--clock-skew-ppm", value: "3") // a test flag, not in the file
        #expect(settings.effective.map(\.source) == [.file(path: "f", line: 2), .file(path: "f", line: 3), .file(path: "f", line: 4), .commandLine])
        #expect(settings.effective.map(\.text) == ["hw:1", "no", "yes", "9"])
        #expect(settings.render(file: "f").contains("latency-ms = 9"))

        var fresh = ConfigSettings(section: "speaker", options: options)
        #expect(fresh.effective.map(\.source) == [.builtIn, .builtIn, .builtIn, .builtIn])
        #expect(throws: ConfigFileError(path: "f", line: 7, message: "realtime = maybe: expected yes or no")) {
            try fresh.flags(for: ConfigEntry(section: "speaker", key: "realtime", value: "maybe", line: 7), in: "f")
        }
        #expect {
            try fresh.flags(for: ConfigEntry(section: "speaker", key: "ouptut", value: "x", line: 8), in: "f")
        } throws: { ($0 as? ConfigFileError)?.message.contains("no option 'ouptut'; it knows output, realtime") == true }
    }
}
