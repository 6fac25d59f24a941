import Testing
import TuttiCore

/// The message catalogue: complete in every language, the same placeholders
/// in each, and the language picked as POSIX and HTTP say.
@Suite struct MessagesTests {
    @Test func everyKeyHasEveryLanguageWithTheSamePlaceholders() {
        #expect(MessageKey.allCases.count >= 30)
        for key in MessageKey.allCases {
            let english = key.template(.english)
            #expect(!english.isEmpty, "\(key.rawValue): no English")
            for language in Language.allCases {
                let text = key.template(language)
                #expect(!text.trimmingSpaces.isEmpty, "\(key.rawValue): no \(language.rawValue)")
                #expect(Set(MessageCatalogue.placeholders(text)) == Set(MessageCatalogue.placeholders(english)),
                        "\(key.rawValue) in \(language.rawValue): \(MessageCatalogue.placeholders(text)) against English's \(MessageCatalogue.placeholders(english))")
                if language != .english {
                    // A translation, not a copy: it has letters of its own script.
                    #expect(text != english, "\(key.rawValue) in \(language.rawValue) is the English text")
                }
            }
        }
        // Korean text is Hangul, not English left in.
        for key in MessageKey.allCases {
            #expect(key.template(.korean).unicodeScalars.contains { (0xAC00...0xD7A3).contains($0.value) }, "\(key.rawValue): no Hangul")
        }
        #expect(Set(MessageKey.allCases.map(\.rawValue)).count == MessageKey.allCases.count, "keys are unique")
    }

    @Test func placeholdersAreFilledAndJSONBracesAreKept() {
        let m = UserMessage(.roomUnknownOfKnown, ["room": "attic", "known": "kitchen, living"])
        #expect(m.text(in: .english) == "no room 'attic' (rooms: kitchen, living)")
        #expect(m.text(in: .korean) == "'attic'(이)라는 방이 없습니다 (방: kitchen, living)")
        #expect(m.description == m.text(in: .english))
        #expect(MessageCatalogue.placeholders(#"log in (auth.login {"password"}) as {method}"#) == ["method"])
        let guest = UserMessage(.accessGuestOnlyLooks, ["method": "player.play"]).text(in: .english)
        #expect(guest == #"player.play: guests can only look; log in (auth.login {"password"}) to change anything"#)
        // A value with braces is put in as it is, never read again.
        #expect(UserMessage(.roomUnknown, ["room": "{known}"]).text(in: .english) == "no room '{known}'")
        // A missing argument shows as its placeholder.
        #expect(UserMessage(.roomUnknown).text(in: .english) == "no room '{room}'")
        // Typed errors say their message from the catalogue.
        #expect(GroupError.nameTaken("Den").message.text(in: .korean) == "'Den'(이)라는 그룹이 이미 있습니다")
        #expect(GroupError.nameTaken("Den").description == "a group named 'Den' already exists")
    }

    @Test func theLanguageComesFromTheLocaleAsPOSIXOrdersIt() {
        #expect(Language(localeEnvironment: [:]) == .english)
        #expect(Language(localeEnvironment: ["LANG": "ko_KR.UTF-8"]) == .korean)
        #expect(Language(localeEnvironment: ["LANG": "ko_KR.UTF-8", "LC_ALL": "C"]) == .english)
        #expect(Language(localeEnvironment: ["LANG": "en_US.UTF-8", "LC_MESSAGES": "ko_KR.UTF-8"]) == .korean)
        #expect(Language(localeEnvironment: ["LC_ALL": "", "LANG": "ko_KR"]) == .korean, "an empty variable is not set")
        #expect(Language(localeEnvironment: ["LANG": "de_DE.UTF-8"]) == .english, "not in the catalogue: English")
        #expect(Language(localeEnvironment: ["LANG": "en_GB.UTF-8", "LANGUAGE": "fr:ko:en"]) == .korean)
        #expect(Language(localeEnvironment: ["LANG": "C", "LANGUAGE": "ko"]) == .english, "C ignores LANGUAGE, as gettext does")
        #expect(Language(tag: "ko-KR") == .korean && Language(tag: "KO") == .korean && Language(tag: "kok") == nil)
        #expect(Language(tag: "en@euro") == .english && Language(tag: "") == nil)
    }

    @Test func acceptLanguageIsReadByQuality() {
        #expect(Language(acceptLanguage: "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7") == .korean)
        #expect(Language(acceptLanguage: "en-US,en;q=0.9,ko;q=0.8") == .english)
        #expect(Language(acceptLanguage: "fr, ko;q=0.5, en;q=0.4") == .korean)
        #expect(Language(acceptLanguage: "en;q=0.2, ko;q=0.9") == .korean)
        #expect(Language(acceptLanguage: "ko;q=0, en") == .english)
        #expect(Language(acceptLanguage: "fr-FR, de") == nil)
        #expect(Language(acceptLanguage: "") == nil)
    }
}
